import { defineConfig } from '@playwright/test';

// The servers under test: two instances of the debug build on their own
// ports, sharing one data dir (so one private PostgreSQL: the first to start
// creates and starts it, the second finds it running). Instance A is seeded
// with the demo event; instance B serves the same database, so a hold made
// through A must show live in a browser connected to B.
const port = Number(process.env.FRONTROW_E2E_PORT ?? 3100);
const portB = Number(process.env.FRONTROW_E2E_PORT_B ?? port + 1);
const baseURL = `http://127.0.0.1:${port}`;
const baseURLB = `http://127.0.0.1:${portB}`;

const sharedEnv = {
  FRONTROW_DATA_DIR: '../target/e2e-data',
  FRONTROW_PG_PORT: '54331',
  FRONTROW_SITE_ROOT: '../target/site',
  FRONTROW_RATE_LIMITS: 'off',
  // Mail to buyers (tickets, refunds) lands here, one JSON line each.
  FRONTROW_MAIL_OUTBOX: '../target/e2e-data/outbox.jsonl',
  // Expired holds are reaped quickly, so the expiry test sees seats come back fast.
  FRONTROW_REAPER_INTERVAL_MS: '500',
  RUST_LOG: 'warn',
};

export default defineConfig({
  testDir: './tests',
  // Fails fast, with a clear message, if the server and the site bundle are from different builds.
  globalSetup: './global-setup.ts',
  timeout: 60_000,
  expect: { timeout: 10_000 },
  fullyParallel: false,
  workers: 1,
  reporter: [['list']],
  outputDir: './test-results',
  use: {
    baseURL,
    screenshot: 'on',
    trace: 'retain-on-failure',
    launchOptions: {
      executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
      ],
    },
  },
  webServer: [
    {
      command: '../target/debug/frontrow seed-demo && exec ../target/debug/frontrow serve',
      url: `${baseURL}/readyz`,
      timeout: 120_000,
      reuseExistingServer: false,
      // SIGTERM lets the server stop its private PostgreSQL cleanly.
      gracefulShutdown: { signal: 'SIGTERM', timeout: 10_000 },
      stdout: 'pipe',
      env: { ...sharedEnv, FRONTROW_ADDR: `127.0.0.1:${port}` },
    },
    {
      command: 'exec ../target/debug/frontrow serve',
      url: `${baseURLB}/readyz`,
      timeout: 120_000,
      reuseExistingServer: false,
      gracefulShutdown: { signal: 'SIGTERM', timeout: 10_000 },
      stdout: 'pipe',
      env: { ...sharedEnv, FRONTROW_ADDR: `127.0.0.1:${portB}` },
    },
  ],
});
