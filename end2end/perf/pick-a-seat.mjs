// From navigation to a seat selected, in real Chromium, as a signed-in fan
// with nothing cached: opens a venue's page, goes through a section where
// the venue opens on an overview, waits until the map takes picks (the
// first-pick module marks it `data-picker`), clicks the first free seat and
// waits until it shows selected. Prints, per venue, the median of the runs:
// that time (from the first page's navigation start to the moment the seat
// turned selected, both on the browser's clock), the bytes transferred (headers and bodies, as the network
// counted them) before the first seat could be picked, and when the whole
// app (hold button, countdown, live feed) was ready after it.
//
// Usage: node perf/pick-a-seat.mjs BASE_URL SESSION_COOKIE RUNS VENUE...
//   VENUE: label|path|section   (section empty: the page shows the seats itself)
// PICK_WITH=app: the first-pick module is refused (the page's loader then
// puts the app in at once), so a seat can be picked once the app is ready:
// the page as it was before that module, on the same build and machine.
import { chromium } from 'playwright-core';

const [base, session, runsArg, ...venues] = process.argv.slice(2);
const runs = Number(runsArg ?? 5);
const appOnly = process.env.PICK_WITH === 'app';
const pickable = appOnly ? '#picker[data-ready="true"]' : '#seat-map[data-picker]';
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--disable-background-networking', '--disable-component-update', '--no-first-run'],
});
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const host = new URL(base).hostname;

async function once(path, section) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  await context.addCookies([{ name: 'frontrow_session', value: session, domain: host, path: '/' }]);
  // The page's own clock says when a seat turned selected and when the
  // app was ready, free of the driver's round trips.
  await context.addInitScript(() => {
    new MutationObserver((records) => {
      for (const r of records) {
        const el = r.target;
        if (!window.__selectedAt && el.classList?.contains('seat') && el.classList.contains('sel')) window.__selectedAt = performance.now();
        if (!window.__readyAt && el.id === 'picker' && el.dataset.ready === 'true') window.__readyAt = performance.now();
      }
    }).observe(document, { subtree: true, attributes: true, attributeFilter: ['class', 'data-ready'] });
  });
  const page = await context.newPage();
  if (appOnly) await page.route('**/pkg/first_pick*', (route) => route.abort());
  const cdp = await context.newCDPSession(page);
  await cdp.send('Network.enable');
  await cdp.send('Network.setCacheDisabled', { cacheDisabled: false });
  let bytes = 0;
  let counting = true;
  cdp.on('Network.loadingFinished', (e) => {
    if (counting) bytes += e.encodedDataLength;
  });
  await page.goto(`${base}${path}`, { waitUntil: 'commit' });
  // Navigation start of the first page: the overview's, where there is one.
  const started = await page.evaluate(() => performance.timeOrigin);
  if (section) {
    // A fan chooses the section as soon as the overview shows it.
    const shape = page.locator(`#ov-${section}`);
    await shape.waitFor({ state: 'visible', timeout: 30_000 });
    await Promise.all([page.waitForURL(`**/sections/${section}`, { waitUntil: 'commit' }), shape.click()]);
  }
  await page.locator(pickable).waitFor({ state: 'attached', timeout: 30_000 });
  // Everything the page needed to let a seat be picked has arrived.
  counting = false;
  const seat = page.locator('#seat-map circle.seat.av').first();
  await seat.click();
  await page.locator('#seat-map circle.seat.sel').waitFor({ timeout: 10_000 });
  await page.locator('#picker[data-ready="true"]').waitFor({ state: 'attached', timeout: 30_000 });
  const [selectedAt, readyAt] = await page.evaluate(() => [performance.timeOrigin + window.__selectedAt, performance.timeOrigin + window.__readyAt]);
  const ms = Math.round(selectedAt - started);
  const appMs = Math.round(readyAt - started);
  const seats = await page.locator('#seat-map circle.seat').count();
  await context.close();
  return { ms, appMs, bytes, seats };
}

console.log('| venue | seats drawn where the seat is picked | navigation → seat selected (median) | runs (ms) | transferred before a seat can be picked (median) | navigation → whole app ready (median) |');
console.log('|---|---|---|---|---|---|');
for (const spec of venues) {
  const [label, path, section] = spec.split('|');
  // One warm-up load so the server's first drawing of each page is not counted.
  await once(path, section || null);
  const results = [];
  for (let i = 0; i < runs; i++) results.push(await once(path, section || null));
  const ms = results.map((r) => r.ms);
  const kb = median(results.map((r) => r.bytes)) / 1024;
  const appMs = median(results.map((r) => r.appMs));
  console.log(`| ${label} | ${results[0].seats.toLocaleString('en-GB')} | **${median(ms)} ms** | ${ms.join(', ')} | **${kb.toFixed(0)} KB** | ${appMs} ms |`);
}
await browser.close();
