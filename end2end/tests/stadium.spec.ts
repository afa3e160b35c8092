// The stadium, as a fan meets it: the venue overview, a section's seats,
// the list without the map (keyboard only), best available across the
// venue, standing places by count, and another fan's overview following
// a section's sale live. axe on every level.

import path from 'node:path';
import type { APIRequestContext, Page } from '@playwright/test';
import { expectNoViolations } from './axe';
import { expect, stadiumEventId, tabTo, test, waitForClickHandler, waitForPicker, type Staff } from './helpers';

/** The first section of the overview with seats free (of the lower ring, 101 to 140). */
async function openSection(page: Page, eventId: string, section: string) {
  await page.goto(`/events/${eventId}`);
  await expect(page.locator('#venue-overview')).toBeVisible();
  await waitForPicker(page);
  await page.locator(`#ov-${section}`).click();
  await expect(page).toHaveURL(`/events/${eventId}/sections/${section}`);
  await waitForPicker(page);
}

/** Pays for the hold shown with the approving test card; lands on the booking. */
async function pay(page: Page) {
  const payButton = page.locator('#pay-button');
  await waitForClickHandler(payButton);
  await payButton.click();
  await expect(page).toHaveURL(/\/bookings\/[0-9a-f-]{36}$/, { timeout: 20_000 });
}

test('a fan picks a seat in a stadium section from the overview, holds it and pays', async ({ newFan }, testInfo) => {
  test.setTimeout(120_000);
  const { page } = await newFan('stadium');
  await page.setViewportSize({ width: 1440, height: 900 });
  const eventId = await stadiumEventId(page.request);
  await page.goto(`/events/${eventId}`);
  const overview = page.locator('#venue-overview');
  await expect(overview).toBeVisible();
  await expect(overview.locator('a.ov-section')).toHaveCount(81);
  await expect(page.locator('#ov-107')).toHaveAttribute('aria-label', /^Section 107, [\d,]+ of [\d,]+ available, from €/);
  await expect(page.locator('#ov-FLOOR')).toHaveAttribute('aria-label', /^Standing area FLOOR, [\d,]+ of 10,000 places left/);
  expect(await page.locator('circle.seat').count(), 'no seat is drawn on the overview').toBe(0);
  await waitForPicker(page);
  await page.screenshot({ path: path.join(testInfo.project.outputDir, 'stadium-overview.png') });
  await expectNoViolations(page, testInfo, 'stadium-overview');

  await page.locator('#ov-107').click();
  await expect(page).toHaveURL(`/events/${eventId}/sections/107`);
  await waitForPicker(page);
  const seats = page.locator('#seat-map circle.seat');
  expect(await seats.count()).toBeGreaterThan(500);
  expect(await page.locator('#seat-map circle.seat:not([id^="s-107-"])').count(), 'only this section is drawn').toBe(0);
  await expect(page.getByRole('link', { name: 'Whole venue' })).toBeVisible();
  await expect(page.locator('a[rel="next"]')).toHaveText('Section 108 →');
  await page.screenshot({ path: path.join(testInfo.project.outputDir, 'stadium-section.png') });
  await expectNoViolations(page, testInfo, 'stadium-section');

  const free = page.locator('#seat-map circle.seat.av').first();
  const seatId = ((await free.getAttribute('id')) ?? '').slice(2);
  await free.click();
  await expect(free).toHaveClass(/\bsel\b/);
  await page.locator('#hold-button').click();
  await expect(page.locator('#countdown')).toBeVisible();
  await expect(page.locator('.held-seats li')).toHaveText([/^Section 107, row \d+, seat \d+$/]);
  await expectNoViolations(page, testInfo, 'stadium-section-holding');
  await pay(page);
  await expect(page.locator(`li.ticket[data-seat-id="${seatId}"]`)).toBeVisible();
});

test('seats picked before the app has arrived become the picker\'s selection, by mouse and keyboard', async ({ newFan }) => {
  test.setTimeout(90_000);
  const { page } = await newFan('first-pick');
  const eventId = await stadiumEventId(page.request);
  // The app's code is held back until the fan has picked: only the
  // first-pick module can answer these clicks.
  let letAppIn = () => {};
  const appMayLoad = new Promise<void>((resolve) => (letAppIn = resolve));
  await page.route('**/pkg/frontrow.js', async (route) => {
    await appMayLoad;
    await route.continue();
  });
  await page.goto(`/events/${eventId}/sections/125`);
  await expect(page.locator('#seat-map')).toHaveAttribute('data-picker', 'first', { timeout: 20_000 });
  await expect(page.locator('#picker')).not.toHaveAttribute('data-ready', 'true');

  const free = page.locator('#seat-map circle.seat.av');
  const [first, second] = [free.nth(0), free.nth(1)];
  const ids = await Promise.all([first, second].map(async (s) => ((await s.getAttribute('id')) ?? '').slice(2)));
  await first.click();
  await expect(first).toHaveClass(/\bsel\b/);
  await expect(first).toHaveAttribute('aria-pressed', 'true');
  await second.click();
  await second.click();
  await expect(second).not.toHaveClass(/\bsel\b/);
  // By keyboard: into the map, along the row to a free seat, Enter.
  await page.locator('#seat-map circle.seat[tabindex="0"]').focus();
  const focused = () => page.evaluate(() => document.activeElement?.id ?? '');
  const pickable = () => page.evaluate(() => !!document.activeElement?.matches('circle.seat.av:not(.sel)'));
  for (let i = 0; i < 40 && !(await pickable()); i++) await page.keyboard.press('ArrowRight');
  ids.push((await focused()).slice(2));
  await page.keyboard.press('Enter');
  await expect(page.locator(`#s-${ids[2]}`)).toHaveClass(/\bsel\b/);
  await expect(page.locator('#picker')).not.toHaveAttribute('data-ready', 'true');

  letAppIn();
  await waitForPicker(page);
  await expect(page.locator('#seat-map')).toHaveAttribute('data-picker', 'app');
  await expect(page.locator('.selection li')).toHaveCount(2);
  await expect(page.locator('.selection li').nth(0)).toHaveAttribute('data-seat-id', ids[0]);
  await expect(page.locator('.selection li').nth(1)).toHaveAttribute('data-seat-id', ids[2]);
  // One handler answers each click from now on: a click unselects once.
  await page.locator(`#s-${ids[2]}`).click();
  await expect(page.locator(`#s-${ids[2]}`)).not.toHaveClass(/\bsel\b/);
  await expect(page.locator('.selection li')).toHaveCount(1);
  await page.locator('#hold-button').click();
  await expect(page.locator('#countdown')).toBeVisible();
  await expect(page.locator('.held-seats li')).toHaveText([/^Section 125, row \d+, seat \d+$/]);
  await expect(page.locator(`#s-${ids[0]}`)).toHaveClass(/\bmine\b/);
});

test('keyboard only: section, row and seat from the lists, held and paid', async ({ newFan }, testInfo) => {
  test.setTimeout(120_000);
  const { page } = await newFan('stadium-keys');
  const eventId = await stadiumEventId(page.request);
  await page.goto(`/events/${eventId}`);
  await waitForPicker(page);
  await tabTo(page, page.getByRole('link', { name: 'Choose from a list instead' }));
  await page.keyboard.press('Enter');
  await expect(page).toHaveURL(`/events/${eventId}/sections`);
  await expect(page.getByRole('heading', { name: 'Choose a section' })).toBeVisible();
  await expectNoViolations(page, testInfo, 'list-sections');

  await tabTo(page, page.getByRole('link', { name: /^Section 112, / }));
  await page.keyboard.press('Enter');
  await expect(page).toHaveURL(`/events/${eventId}/sections/112/rows`);
  await expectNoViolations(page, testInfo, 'list-rows');
  await tabTo(page, page.getByRole('link', { name: /^Row 20: \d+ of \d+ available/ }));
  await page.keyboard.press('Enter');
  await expect(page).toHaveURL(`/events/${eventId}/sections/112/rows/20`);
  await expectNoViolations(page, testInfo, 'list-seats');

  const first = page.locator('.seat-choices input:not([disabled])').first();
  const seatId = (await first.getAttribute('value'))!;
  await tabTo(page, first);
  await page.keyboard.press('Space');
  await expect(first).toBeChecked();
  await tabTo(page, page.getByRole('button', { name: 'Hold selected seats' }));
  await page.keyboard.press('Enter');
  // Paid for beside the picker, on the section's page.
  await expect(page).toHaveURL(new RegExp(`/events/${eventId}/sections/112`));
  await waitForPicker(page);
  await expect(page.locator('#countdown')).toBeVisible();
  await expect(page.locator('.held-seats li')).toHaveText([`Section 112, row 20, seat ${seatId.split('-')[2]}`]);
  const payButton = page.locator('#pay-button');
  await waitForClickHandler(payButton);
  await tabTo(page, payButton);
  await page.keyboard.press('Enter');
  await expect(page).toHaveURL(/\/bookings\/[0-9a-f-]{36}$/, { timeout: 20_000 });
  await expect(page.locator(`li.ticket[data-seat-id="${seatId}"]`)).toBeVisible();
});

test('best available from the overview finds seats together across the venue', async ({ newFan }, testInfo) => {
  const { page } = await newFan('stadium-best');
  const eventId = await stadiumEventId(page.request);
  await page.goto(`/events/${eventId}`);
  await waitForPicker(page);
  await page.locator('form.best select[name=count]').selectOption('4');
  await page.locator('form.best select[name=tier]').selectOption('Premium');
  await page.locator('#best-button').click();
  await expect(page.locator('#countdown')).toBeVisible();
  const held = page.locator('.held-seats li');
  await expect(held).toHaveCount(4);
  const labels = await held.allTextContents();
  const rowOf = (label: string) => label.replace(/, seat \d+$/, '');
  expect(new Set(labels.map(rowOf)).size, `four seats in one row: ${labels}`).toBe(1);
  await expectNoViolations(page, testInfo, 'stadium-best-available');
  await page.locator('#release-button').click();
  await expect(page.locator('#best-button')).toBeVisible();
});

test('standing places are held by count, paid for and ticketed', async ({ newFan }, testInfo) => {
  const { page } = await newFan('stadium-floor');
  const eventId = await stadiumEventId(page.request);
  await page.goto(`/events/${eventId}`);
  await waitForPicker(page);
  await page.locator('#ov-FLOOR').click();
  await expect(page).toHaveURL(`/events/${eventId}/sections/FLOOR`);
  await waitForPicker(page);
  const left = Number((await page.locator('#places-available').textContent())!.replace(/,/g, ''));
  expect(left).toBeGreaterThan(3);
  await expectNoViolations(page, testInfo, 'stadium-floor');
  await page.locator('#places-select').selectOption('3');
  await expect(page.locator('#hold-places-button')).toHaveText('Hold 3 places');
  await page.locator('#hold-places-button').click();
  await expect(page.locator('#countdown')).toBeVisible();
  await expect(page.locator('.held-seats li')).toHaveCount(3);
  await expect(page.locator('.held-seats li').first()).toHaveText(/^Standing area FLOOR, place \d+$/);
  // The page's own count follows the live feed.
  await expect(page.locator('#places-available')).toHaveText((left - 3).toLocaleString('en-GB'));
  await pay(page);
  await expect(page.locator('li.ticket')).toHaveCount(3);
  await expect(page.locator('li.ticket h2').first()).toHaveText(/^Standing area FLOOR, place \d+$/);
});

/** A small venue that opens on its overview: two placed sections of six seats and a standing area. */
async function smallVenue(staff: Staff): Promise<string> {
  const rows = (tier: string) => [1, 2].map((r) => ({ row: String(r), seats: 3, tier }));
  const res = await staff.api.post('/api/v1/admin/events', {
    data: {
      name: `Open Air ${Date.now()}`,
      kind: 'concert',
      venue: 'The Park',
      starts_at: new Date(Date.now() + 30 * 86400_000).toISOString(),
      sale_opens_at: new Date(Date.now() - 3600_000).toISOString(),
      max_seats_per_order: 8,
      tiers: [{ tier: 'Stand', price_cents: 4000 }, { tier: 'Floor', price_cents: 2000 }],
      stage: { label: 'STAGE', x: 0, y: 0, width: 300, height: 60 },
      sections: [
        { section: 'A', rows: rows('Stand'), placement: { x: -200, y: 200, rotation: 30, curve: 300 } },
        { section: 'B', rows: rows('Stand'), placement: { x: 200, y: 200, rotation: -30, curve: 300 } },
        { section: 'FLOOR', standing: { capacity: 10, tier: 'Floor', width: 240, depth: 160 }, placement: { x: 0, y: 160 } },
      ],
    },
  });
  expect(res.status(), await res.text()).toBe(201);
  return (await res.json()).event_id;
}

async function buyAll(api: APIRequestContext, eventId: string, seatIds: string[]) {
  const hold = await api.post(`/api/v1/events/${eventId}/holds`, { data: { seat_ids: seatIds } });
  expect(hold.status(), await hold.text()).toBe(201);
  const { hold_id, hold_token } = await hold.json();
  const paid = await api.post(`/api/v1/holds/${hold_id}/checkout`, {
    data: { hold_token, payment_token: 'tok_visa' },
    headers: { 'Idempotency-Key': `sellout-${Date.now()}` },
  });
  expect(paid.status(), await paid.text()).toBe(201);
}

test("another fan's overview follows a section selling out, live", async ({ staff, newFan }) => {
  const eventId = await smallVenue(staff);
  const watcher = await newFan('overview-watcher');
  await watcher.page.goto(`/events/${eventId}`);
  await waitForPicker(watcher.page);
  const shape = watcher.page.locator('#ov-A');
  await expect(shape).toHaveAttribute('aria-label', 'Section A, 6 of 6 available, from €40.00');
  await expect(watcher.page.locator('#availability')).toHaveText('22 of 22 seats available');

  const buyer = await newFan('overview-buyer');
  await buyAll(buyer.context.request, eventId, ['A-1-1', 'A-1-2', 'A-1-3', 'A-2-1', 'A-2-2', 'A-2-3']);
  await expect(shape).toHaveAttribute('aria-label', 'Section A, sold out');
  await expect(shape).toHaveClass(/\bshade-0\b/);
  await expect(watcher.page.locator('#availability')).toHaveText('16 of 22 seats available');
  await expect(watcher.page.locator('#ov-B')).toHaveAttribute('aria-label', 'Section B, 6 of 6 available, from €40.00');
});

test('without JavaScript: a seat found through the lists is held', async ({ browser }) => {
  const context = await browser.newContext({ javaScriptEnabled: false });
  const page = await context.newPage();
  const eventId = await stadiumEventId(page.request);
  await page.goto(`/signup?next=/events/${eventId}/sections`);
  await page.getByLabel('Name').fill('No Script Fan');
  await page.getByLabel('Email').fill(`nojs-list-${Date.now()}@example.test`);
  await page.getByLabel('Password').fill('correct-horse-battery');
  await page.getByRole('button', { name: 'Create account' }).click();
  await expect(page).toHaveURL(`/events/${eventId}/sections`);
  await page.getByRole('link', { name: /^Section 125, / }).click();
  await page.getByRole('link', { name: /^Row 30: / }).click();
  const first = page.locator('.seat-choices input:not([disabled])').first();
  const seatId = (await first.getAttribute('value'))!;
  await first.check();
  await page.getByRole('button', { name: 'Hold selected seats' }).click();
  await expect(page).toHaveURL(`/events/${eventId}/sections/125#picker`);
  await expect(page.getByRole('heading', { name: 'Held for you' })).toBeVisible();
  await expect(page.locator('.held-seats li')).toHaveText([`Section 125, row 30, seat ${seatId.split('-')[2]}`]);
  await context.close();
});
