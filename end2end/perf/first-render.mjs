// First render of the seat map in real Chromium: loads the event page
// several times (fresh context each time, nothing cached) and prints the
// median of first contentful paint (the server-rendered map on screen) and
// of the moment the seat picker is interactive (its island hydrated).
// Usage: node perf/first-render.mjs BASE_URL EVENT_ID [RUNS]
import { chromium } from 'playwright-core';

const [base, eventId, runsArg] = process.argv.slice(2);
const runs = Number(runsArg ?? 7);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu'],
});
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fcp = [];
const interactive = [];
const ttfb = [];
for (let i = 0; i < runs; i++) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  const started = Date.now();
  await page.goto(`${base}/events/${eventId}`, { waitUntil: 'load' });
  await page.waitForSelector('#picker[data-ready="true"]', { timeout: 30_000 });
  const ready = Date.now() - started;
  const timing = await page.evaluate(() => {
    const nav = performance.getEntriesByType('navigation')[0];
    const paint = performance.getEntriesByName('first-contentful-paint')[0];
    return { ttfb: nav.responseStart, fcp: paint ? paint.startTime : NaN };
  });
  const seats = await page.locator('#seat-map circle.seat').count();
  if (i === 0) console.log(`seats on the map: ${seats}`);
  ttfb.push(timing.ttfb);
  fcp.push(timing.fcp);
  interactive.push(ready);
  await context.close();
}
await browser.close();
console.log(`runs: ${runs}`);
console.log(`time to first byte (median): ${median(ttfb).toFixed(0)} ms`);
console.log(`first contentful paint, seat map on screen (median): ${median(fcp).toFixed(0)} ms`);
console.log(`seat picker interactive (median): ${median(interactive).toFixed(0)} ms`);
