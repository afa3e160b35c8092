import path from 'node:path';
import type { Page, TestInfo } from '@playwright/test';
import { expectNoViolations } from './axe';
import { bookByApi, expect, seat, signInAsStaff, snap, test, waitForPicker } from './helpers';

/** A screenshot for the README's box-office guide. */
async function guideShot(page: Page, testInfo: TestInfo, name: string) {
  await page.screenshot({ path: path.join(testInfo.project.outputDir, `staff-${name}.png`), fullPage: true });
}

async function ready(page: Page, selector: string) {
  await expect(page.locator(selector)).toHaveAttribute('data-ready', 'true', { timeout: 20_000 });
}

test('a box-office day: layout, event, blocks, counter sale, refund, door, dashboard and audit', async ({ page, newFan }, testInfo) => {
  test.setTimeout(120_000);
  await page.setViewportSize({ width: 1280, height: 900 });
  await signInAsStaff(page, '/admin');
  await expect(page.getByRole('heading', { name: 'Box office' })).toBeVisible();

  // A layout from the generator: 2 rows of 6, an aisle after seat 3, a
  // wheelchair space with its companion seat; the preview draws it.
  const layoutName = `Studio ${Date.now()}`;
  await page.goto('/admin/layouts/new');
  await ready(page, '.layout-builder');
  await page.locator('#layout-name').fill(layoutName);
  const section = page.locator('.section-spec').first();
  await section.getByLabel('Rows', { exact: true }).fill('2');
  await section.getByLabel('Rows', { exact: true }).dispatchEvent('change');
  await section.getByLabel('Seats per row').fill('6');
  await section.getByLabel('Seats per row').dispatchEvent('change');
  await section.getByLabel(/Aisles after seats/).fill('3');
  await section.getByLabel(/Aisles after seats/).dispatchEvent('change');
  await section.getByLabel(/Tiers by row/).fill('1 Front, 2 Back');
  await section.getByLabel(/Tiers by row/).dispatchEvent('change');
  await section.getByLabel(/Wheelchair spaces/).fill('2: 1');
  await section.getByLabel(/Wheelchair spaces/).dispatchEvent('change');
  await section.getByLabel(/Companion seats/).fill('2: 2');
  await section.getByLabel(/Companion seats/).dispatchEvent('change');
  await expect(page.locator('#layout-preview circle.seat')).toHaveCount(12);
  await expect(page.locator('#layout-preview circle.seat.wc')).toHaveCount(1);
  await expect(page.locator('#export-json')).toHaveValue(/"aisles_after": \[\s*3\s*\]/);
  await guideShot(page, testInfo, 'layout');
  await page.locator('#save-layout').click();
  await expect(page).toHaveURL('/admin/layouts');
  await expect(page.getByRole('row', { name: new RegExp(layoutName) })).toContainText('12');

  // An event seated from it, published at once.
  const eventName = `Counter Night ${Date.now()}`;
  await page.goto('/admin/events/new');
  await page.getByLabel('Name').fill(eventName);
  await page.getByLabel('Venue').fill('Studio');
  await page.getByLabel('Category').fill('theatre');
  await page.getByLabel('City').fill('Leeds');
  await page.getByLabel(/Performers/).fill('The Counter Players\nJo Bell');
  await page.getByLabel('Starts (UTC)').fill('2031-06-01T20:00');
  const layoutOption = page.getByLabel('Layout').locator('option', { hasText: layoutName });
  await page.getByLabel('Layout').selectOption((await layoutOption.getAttribute('value'))!);
  await page.getByLabel(/Prices/).fill('Front=40.00\nBack=20.00');
  await page.getByLabel(/Ticket types/).fill('Adult: Front=40.00, Back=20.00\nChild: Back=10.00');
  await page.getByLabel(/Fans may cancel until/).fill('72');
  await page.getByLabel(/The seller keeps/).fill('5');
  await page.getByLabel(/a fee per ticket/).fill('1.50');
  await page.getByRole('button', { name: 'Create event' }).click();
  await expect(page).toHaveURL(/\/admin\/events\/[0-9a-f-]{36}$/);
  const eventId = page.url().split('/').pop()!;
  await expect(page.getByRole('heading', { name: eventName })).toBeVisible();
  await expect(page.locator('.figures')).toContainText('12 available');
  // Fans find it by what staff entered (and its stamp: earlier runs made others like it).
  const stamp = eventName.split(' ').pop()!;
  const found = await (await page.request.get(`/api/v1/events?city=leeds&category=theatre&q=${encodeURIComponent(`jo bell ${stamp}`)}`)).json();
  expect(found.events.map((e: { event_id: string }) => e.event_id)).toEqual([eventId]);
  expect(found.events[0].refund_policy).toEqual({ cancel_until_hours: 72, keep_percent: 5, fee_cents: 150 });
  expect(found.events[0].ticket_types).toEqual([
    { name: 'Adult', prices: [{ tier: 'Front', price_cents: 4000 }, { tier: 'Back', price_cents: 2000 }] },
    { name: 'Child', prices: [{ tier: 'Back', price_cents: 1000 }] },
  ]);
  await expect(page.getByLabel(/Ticket types/)).toHaveValue('Adult: Front=40.00, Back=20.00\nChild: Back=10.00');
  await expect(page.getByLabel(/Fans may cancel until/)).toHaveValue('72');
  await expect(page.getByLabel(/a fee per ticket/)).toHaveValue('1.50');

  // A fan books two Front seats online.
  const fan = await newFan('boxoffice');
  const fanBooking = await bookByApi(fan.context.request, eventId, ['A-1-4', 'A-1-5']);

  // The seat desk: block two seats for the house, then sell two at the counter.
  await page.goto(`/admin/events/${eventId}/seats`);
  await ready(page, '#desk');
  await expect(seat(page, 'A-1-4')).toHaveClass(/\bsd\b/);
  await seat(page, 'A-2-5').click();
  await seat(page, 'A-2-6').click();
  await page.locator('#desk-reason').fill('house seats');
  await page.locator('#block-button').click();
  await expect(page.locator('#desk .message')).toContainText('Blocked A-2-5, A-2-6.');
  await expect(seat(page, 'A-2-5')).toHaveClass(/\bbk\b/);
  const fanSeats = await (await fan.context.request.get(`/api/v1/events/${eventId}/seats`)).json();
  expect(fanSeats.seats.find((s: { seat_id: string }) => s.seat_id === 'A-2-5').status, 'fans see a blocked seat as sold').toBe('sold');

  // An adult in the front row and a child at the back.
  await seat(page, 'A-1-1').click();
  await seat(page, 'A-2-1').click();
  await expect(page.locator('#desk .total')).toContainText('60.00');
  await page.locator('#desk li[data-seat-id="A-2-1"] select.ticket-type').selectOption('Child');
  await expect(page.locator('#desk .total')).toContainText('50.00');
  await page.locator('#customer-name').fill('Walk-in Guest');
  await guideShot(page, testInfo, 'seat-desk');
  await page.locator('#sell-button').click();
  await expect(page.locator('#desk .message')).toContainText('Sold A-1-1, A-2-1 for €50.00');
  await expect(seat(page, 'A-1-1')).toHaveClass(/\bsd\b/);
  const print = page.locator('#print-link');
  await expect(print).toBeVisible();
  await print.click();
  await expect(page).toHaveURL(/\/bookings\/[0-9a-f-]{36}\/print$/);
  await expect(page.locator('.ticket')).toHaveCount(2);
  await expect(page.locator('.ticket svg').first()).toBeVisible();
  await expect(page.locator('.ticket .ticket-type')).toHaveText(['Adult', 'Child']);
  await snap(page, testInfo, 'counter-tickets', true);

  // The fan calls: find the booking by email, refund one ticket.
  await page.goto(`/admin/bookings?q=${encodeURIComponent(fan.email)}`);
  const row = page.locator(`tr[data-booking-id="${fanBooking}"]`);
  await expect(row).toContainText('A-1-4 A-1-5');
  await row.getByRole('link').click();
  await expect(page).toHaveURL(`/admin/bookings/${fanBooking}`);
  await ready(page, 'section.refunds');
  await page.locator('li[data-seat-id="A-1-5"] input[type=checkbox]').check();
  await page.locator('#refund-reason').fill('cannot come');
  await guideShot(page, testInfo, 'refund');
  await page.locator('#refund-selected').click();
  await expect(page.locator('section.refunds .message')).toContainText(/[Rr]efunded/);
  await expect(page.locator('li[data-seat-id="A-1-5"] .ticket-state')).toHaveText('refunded');
  await expect(page.locator('li[data-seat-id="A-1-5"] input[type=checkbox]')).toBeDisabled();
  const code = (await page.locator('li[data-seat-id="A-1-4"] code').textContent())!.trim();

  // At the door: the typed code admits once, and says so the second time.
  await page.goto('/admin/checkin');
  await ready(page, '.scanner');
  await page.locator('#door-event').selectOption(eventId);
  await page.locator('#ticket-code').fill(code);
  await page.locator('#ticket-code').press('Enter');
  await expect(page.locator('.verdict')).toHaveClass(/\badmitted\b/);
  await expect(page.locator('.verdict .detail')).toContainText('row 1, seat 4');
  await guideShot(page, testInfo, 'door');
  await page.locator('#ticket-code').fill(code);
  await page.locator('#ticket-code').press('Enter');
  await expect(page.locator('.verdict')).toHaveClass(/\brefused\b/);
  await expect(page.locator('.verdict .headline')).toHaveText('Already used');
  await expect(page.locator('.checked-in')).toContainText('1 checked in');

  // The figures add up: 4 sold less 1 refunded, 2 blocked; 130.00 taken less 40.00 back.
  await page.goto(`/admin/events/${eventId}/dashboard`);
  await expect(page.locator('#fig-sold')).toHaveText('3');
  await expect(page.locator('#fig-blocked')).toHaveText('2');
  await expect(page.locator('#fig-checked-in')).toHaveText('1');
  await expect(page.locator('#fig-revenue')).toContainText('90.00');
  // By type: the fan's adult ticket and the counter's adult and child.
  await expect(page.locator('#by-type tbody tr')).toHaveText([/Adult\s*2\s*€80\.00/, /Child\s*1\s*€10\.00/]);
  await expect(page.locator('.dashboard')).toHaveAttribute('data-refreshed', 'true', { timeout: 10_000 });
  await guideShot(page, testInfo, 'dashboard');
  await page.goto(`/admin/events/${eventId}/audit`);
  await expect(page.locator('#oversold')).toHaveText('0');
  await expect(page.locator('main')).toContainText('block');
  await guideShot(page, testInfo, 'audit');
});

test.describe('accessibility of the staff pages (axe: no violations at all)', () => {
  test('every staff page', async ({ page, staff, newFan }, testInfo) => {
    test.setTimeout(120_000);
    const { eventId } = await staff.createEvent();
    const fan = await newFan('axe-staff');
    const bookingId = await bookByApi(fan.context.request, eventId, ['A-1-1']);
    await signInAsStaff(page, '/admin');
    const pages = [
      ['home', '/admin'],
      ['new-event', '/admin/events/new'],
      ['event', `/admin/events/${eventId}`],
      ['seats', `/admin/events/${eventId}/seats`],
      ['dashboard', `/admin/events/${eventId}/dashboard`],
      ['audit', `/admin/events/${eventId}/audit`],
      ['bookings', '/admin/bookings'],
      ['booking', `/admin/bookings/${bookingId}`],
      ['checkin', '/admin/checkin'],
      ['payments', '/admin/payments'],
      ['layouts', '/admin/layouts'],
      ['new-layout', '/admin/layouts/new'],
      ['staff-accounts', '/admin/staff'],
    ];
    for (const [name, url] of pages) {
      const res = await page.goto(url);
      expect(res?.status(), url).toBe(200);
      await expectNoViolations(page, testInfo, `staff-${name}`);
    }
  });
});

test("the generator's stadium bowl: previewed, saved, and an event seated from it", async ({ page, newFan }, testInfo) => {
  test.setTimeout(120_000);
  await page.setViewportSize({ width: 1280, height: 900 });
  await signInAsStaff(page, '/admin/layouts/new');
  await ready(page, '.layout-builder');
  await page.locator('#template-kind').selectOption('bowl');
  await page.locator('#template-sections').fill('8');
  await page.locator('#template-lower').fill('6');
  await page.locator('#template-upper').fill('4');
  await page.locator('#template-floor').fill('400');
  await page.locator('#use-template').click();
  await expect(page.locator('.section-spec')).toHaveCount(17);
  await expect(page.locator('#layout-preview .section.standing')).toHaveCount(1);
  await expect(page.locator('#layout-preview g.section')).toHaveCount(17);
  expect(await page.locator('#layout-preview circle.seat').count()).toBeGreaterThan(3000);
  await expect(page.locator('#layout-preview .stage-label')).toHaveText('STAGE');
  // The export carries the geometry.
  await expect(page.locator('#export-json')).toHaveValue(/"curve": \d/);
  await expect(page.locator('#export-json')).toHaveValue(/"standing": \{\s*"capacity": 400/);
  const layoutName = `Bowl ${Date.now()}`;
  await page.locator('#layout-name').fill(layoutName);
  await guideShot(page, testInfo, 'layout-bowl');
  await page.locator('#save-layout').click();
  await expect(page).toHaveURL('/admin/layouts');
  await expect(page.getByRole('row', { name: new RegExp(layoutName) })).toBeVisible();

  const eventName = `Bowl Night ${Date.now()}`;
  await page.goto('/admin/events/new');
  await page.getByLabel('Name').fill(eventName);
  await page.getByLabel('Venue').fill('The Bowl');
  await page.getByLabel('Starts (UTC)').fill('2031-07-01T19:00');
  const layoutOption = page.getByLabel('Layout').locator('option', { hasText: layoutName });
  await page.getByLabel('Layout').selectOption((await layoutOption.getAttribute('value'))!);
  await page.getByLabel(/Prices/).fill('Premium=95.00\nStandard=65.00\nValue=35.00\nFloor=55.00');
  await page.getByLabel(/Published/).check();
  await page.getByRole('button', { name: 'Create event' }).click();
  await expect(page).toHaveURL(/\/admin\/events\/[0-9a-f-]{36}$/);
  const eventId = page.url().split('/').pop()!;

  // The desk works a section at a time; a fan meets the overview.
  await page.goto(`/admin/events/${eventId}/seats`);
  await expect(page.locator('#venue-overview a.ov-section')).toHaveCount(17);
  await page.goto(`/admin/events/${eventId}/seats?section=103`);
  await ready(page, '#desk');
  expect(await page.locator('#seat-map circle.seat').count()).toBeGreaterThan(100);
  const fan = await newFan('bowl');
  await fan.page.goto(`/events/${eventId}`);
  await waitForPicker(fan.page);
  await expect(fan.page.locator('#venue-overview a.ov-section')).toHaveCount(17);
  await expect(fan.page.locator('#ov-FLOOR')).toHaveAttribute('aria-label', 'Standing area FLOOR, 400 of 400 places left, €55.00');

  // Standing places sell at the counter by count; the fan's overview follows.
  await page.goto(`/admin/events/${eventId}/seats?section=FLOOR`);
  await ready(page, '#desk');
  await page.locator('#desk-places').fill('2');
  await page.locator('#customer-name').fill('Floor Guest');
  await page.locator('#sell-button').click();
  await expect(page.locator('#desk .message')).toContainText(/Sold FLOOR-GA-\d+, FLOOR-GA-\d+ for/);
  await expect(fan.page.locator('#ov-FLOOR')).toHaveAttribute('aria-label', 'Standing area FLOOR, 398 of 400 places left, €55.00');
  await page.goto(`/admin/events/${eventId}/dashboard`);
  await expect(page.locator('#fig-sold')).toHaveText('2');
  await expect(page.locator('.dashboard')).toHaveAttribute('data-refreshed', 'true', { timeout: 10_000 });
});

test("the stadium's dashboard and its desk's overview, at 80,000 places", async ({ page }) => {
  test.setTimeout(90_000);
  await signInAsStaff(page, '/admin');
  const events = await (await page.request.get('/api/v1/events?q=Summer%20Stadium%20Festival')).json();
  const stadium = events.events.find((e: { name: string }) => e.name === 'Summer Stadium Festival');
  await page.goto(`/admin/events/${stadium.event_id}/dashboard`);
  await expect(page.locator('.dashboard')).toHaveAttribute('data-refreshed', 'true', { timeout: 15_000 });
  expect(Number((await page.locator('#fig-available').textContent())!.replace(/,/g, ''))).toBeGreaterThan(70_000);
  await page.goto(`/admin/events/${stadium.event_id}/seats`);
  await expect(page.locator('#venue-overview a.ov-section')).toHaveCount(81);
  await page.locator('#ov-FLOOR').click();
  await expect(page).toHaveURL(/\/seats\?section=FLOOR$/);
  await ready(page, '#desk');
  await expect(page.locator('#desk-places')).toBeVisible();
});
