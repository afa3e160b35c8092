import type { Page } from '@playwright/test';
import { expect, openEvent, seat, seatLabel, snap, test } from './helpers';

/** What has keyboard focus: the element's id (or tag) for messages and checks. */
async function focused(page: Page): Promise<string> {
  return page.evaluate(() => {
    const el = document.activeElement;
    if (!el || el === document.body) return 'body';
    return el.id ? `#${el.id}` : `${el.tagName.toLowerCase()}${el.className ? '.' + String(el.className).split(' ')[0] : ''}`;
  });
}

async function press(page: Page, key: string, expected: string) {
  await page.keyboard.press(key);
  await expect.poll(() => focused(page), { message: `${key} should move focus to ${expected}` }).toBe(expected);
}

test('keyboard only: Tab to the map, arrows move between seats, Enter selects, Tab to hold, Enter holds', async ({ staff, newFan }, testInfo) => {
  const { eventId } = await staff.createEvent();
  const { page } = await newFan('keyboard');
  await openEvent(page, eventId);

  // The map is one Tab stop: only the first seat is in the tab order.
  await expect(page.locator('#seat-map circle.seat[tabindex="0"]')).toHaveCount(1);
  await expect(seat(page, 'A-1-1')).toHaveAttribute('tabindex', '0');

  // Tab from the top of the page until a seat has focus.
  const path: string[] = [];
  for (let i = 0; i < 20; i++) {
    await page.keyboard.press('Tab');
    const now = await focused(page);
    path.push(now);
    if (now.startsWith('#s-')) break;
  }
  expect(path[path.length - 1], `Tab stops: ${path.join(' → ')}`).toBe('#s-A-1-1');
  // No other seat was a Tab stop on the way.
  expect(path.filter((p) => p.startsWith('#s-'))).toEqual(['#s-A-1-1']);
  await snap(page, testInfo, '01-map-focused');

  // Arrows move focus (roving tabindex), Home/End jump along the row.
  await press(page, 'ArrowRight', '#s-A-1-2');
  await expect(seat(page, 'A-1-2')).toHaveAttribute('tabindex', '0');
  await expect(seat(page, 'A-1-1')).toHaveAttribute('tabindex', '-1');
  await press(page, 'ArrowDown', '#s-A-2-2');
  await press(page, 'ArrowRight', '#s-A-2-3');
  await press(page, 'ArrowUp', '#s-A-1-3');
  await press(page, 'ArrowUp', '#s-A-1-3'); // no row above: focus stays
  await press(page, 'End', '#s-A-1-8');
  await press(page, 'ArrowRight', '#s-A-1-8'); // end of the row: focus stays
  await press(page, 'Home', '#s-A-1-1');
  await press(page, 'ArrowLeft', '#s-A-1-1');
  await expect(page.locator('#seat-map circle.seat[tabindex="0"]')).toHaveCount(1);
  await press(page, 'ArrowRight', '#s-A-1-2');
  await press(page, 'ArrowRight', '#s-A-1-3');
  // Arrows never select.
  await expect(page.locator('#seat-map circle.seat.sel')).toHaveCount(0);

  // Enter selects the focused seat.
  await page.keyboard.press('Enter');
  await expect(seat(page, 'A-1-3')).toHaveClass(/\bsel\b/);
  await expect(seat(page, 'A-1-3')).toHaveAttribute('aria-pressed', 'true');
  await expect(page.locator('.selection li')).toHaveCount(1);
  await expect(page.locator('.selection li[data-seat-id="A-1-3"]')).toContainText(`${seatLabel('A-1-3')} · €50.00`);
  await expect(page.locator('.message')).toHaveText(`Selected ${seatLabel('A-1-3')}, €50.00.`);
  expect(await focused(page), 'focus stays on the seat').toBe('#s-A-1-3');

  // Space toggles too: select the next seat, unselect it, select it again.
  await press(page, 'ArrowDown', '#s-A-2-3');
  await page.keyboard.press('Space');
  await expect(seat(page, 'A-2-3')).toHaveAttribute('aria-pressed', 'true');
  await expect(page.locator('.selection li')).toHaveCount(2);
  await page.keyboard.press('Space');
  await expect(seat(page, 'A-2-3')).not.toHaveAttribute('aria-pressed', 'true');
  await expect(seat(page, 'A-2-3')).not.toHaveClass(/\bsel\b/);
  await expect(page.locator('.selection li')).toHaveCount(1);
  await page.keyboard.press('Enter');
  await expect(page.locator('.selection li')).toHaveCount(2);
  await expect(page.locator('#hold-button')).toHaveText('Hold 2 seats');
  await snap(page, testInfo, '02-selected-by-keyboard');

  // Tab leaves the map (no seat is a further Tab stop) and reaches the hold button.
  const after: string[] = [];
  for (let i = 0; i < 8; i++) {
    await page.keyboard.press('Tab');
    const now = await focused(page);
    after.push(now);
    if (now === '#hold-button') break;
  }
  expect(after[after.length - 1], `Tab stops after the map: ${after.join(' → ')}`).toBe('#hold-button');
  expect(after.filter((p) => p.startsWith('#s-')), 'seats are one Tab stop').toEqual([]);
  await snap(page, testInfo, '03-hold-button-focused');

  // Enter holds.
  await page.keyboard.press('Enter');
  await expect(page.locator('#countdown')).toBeVisible();
  await expect(page.locator('.held-seats li')).toHaveText([seatLabel('A-1-3'), seatLabel('A-2-3')]);
  for (const id of ['A-1-3', 'A-2-3']) await expect(seat(page, id)).toHaveClass(/\bmine\b/);
  await snap(page, testInfo, '04-held-by-keyboard');

  const seats = await (await page.request.get(`/api/v1/events/${eventId}/seats`)).json();
  const held = seats.seats.filter((s: { status: string }) => s.status === 'held').map((s: { seat_id: string }) => s.seat_id);
  expect(held.sort()).toEqual(['A-1-3', 'A-2-3']);

  // Still by keyboard: Tab on to the pay button (the approving card is the default) and pay.
  // (Where focus is once the hold button has been replaced is noted for the report: today, the body.)
  const focusAfterHold = await focused(page);
  testInfo.annotations.push({ type: 'focus after holding', description: focusAfterHold });
  await expect(page.locator('input[name="card"][value="tok_visa"]')).toBeChecked();
  const toPay: string[] = [];
  for (let i = 0; i < 40; i++) {
    await page.keyboard.press('Tab');
    const now = await focused(page);
    toPay.push(now);
    if (now === '#pay-button') break;
  }
  expect(toPay[toPay.length - 1], `Tab stops to the pay button: ${toPay.join(' → ')}`).toBe('#pay-button');
  await page.keyboard.press('Enter');
  await expect(page).toHaveURL(/\/bookings\/[0-9a-f-]{36}$/);
  await expect(page.locator('li.ticket')).toHaveCount(2);
  await snap(page, testInfo, '05-paid-by-keyboard');
});
