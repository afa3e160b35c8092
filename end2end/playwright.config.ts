import { defineConfig } from '@playwright/test';

// The server under test: a debug build on its own port and data dir (its
// own private PostgreSQL), seeded with the demo event.
const port = Number(process.env.FRONTROW_E2E_PORT ?? 3100);
const baseURL = `http://127.0.0.1:${port}`;

export default defineConfig({
  testDir: './tests',
  timeout: 60_000,
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
  webServer: {
    command: '../target/debug/frontrow seed-demo && exec ../target/debug/frontrow serve',
    url: `${baseURL}/readyz`,
    timeout: 120_000,
    reuseExistingServer: false,
    // SIGTERM lets the server stop its private PostgreSQL cleanly.
    gracefulShutdown: { signal: 'SIGTERM', timeout: 10_000 },
    stdout: 'pipe',
    env: {
      FRONTROW_ADDR: `127.0.0.1:${port}`,
      FRONTROW_DATA_DIR: '../target/e2e-data',
      FRONTROW_PG_PORT: '54331',
      FRONTROW_SITE_ROOT: '../target/site',
      FRONTROW_RATE_LIMITS: 'off',
      RUST_LOG: 'warn',
    },
  },
});
