import { BASE_A, BASE_B, expect, expectSameDocument, holdSeats, markDocument, openEvent, seat, seatStatuses, snap, test } from './helpers';

test('a hold made through instance A shows live in a browser connected to instance B', async ({ staff, newFan }, testInfo) => {
  const { eventId } = await staff.createEvent();
  const a = await newFan('on-a', { baseURL: BASE_A });
  const b = await newFan('on-b', { baseURL: BASE_B });

  // B's browser talks to instance B only (page and live feed).
  await openEvent(b.page, eventId, { baseURL: BASE_B });
  expect(new URL(b.page.url()).origin).toBe(BASE_B);
  const mark = await markDocument(b.page);
  await expect(seat(b.page, 'A-1-2')).toHaveClass(/\bav\b/);
  await snap(b.page, testInfo, '01-b-before');

  // A holds through instance A.
  await openEvent(a.page, eventId, { baseURL: BASE_A });
  expect(new URL(a.page.url()).origin).toBe(BASE_A);
  await holdSeats(a.page, ['A-1-2', 'A-2-2']);
  await snap(a.page, testInfo, '02-a-holds');

  // B's page, fed by instance B, greys the seats out without a reload.
  for (const id of ['A-1-2', 'A-2-2']) {
    await expect(seat(b.page, id)).toHaveClass(/\bhd\b/, { timeout: 3_000 });
    await expect(seat(b.page, id)).toHaveAttribute('aria-disabled', 'true');
  }
  await expect(seat(b.page, 'A-1-1')).toHaveClass(/\bav\b/);
  await expectSameDocument(b.page, mark);
  await snap(b.page, testInfo, '03-b-sees-held');

  // Instance B's API agrees; then A pays and B sees the seats sold, still live.
  expect(await seatStatuses(b.context.request, eventId)).toMatchObject({ 'A-1-2': 'held', 'A-2-2': 'held' });
  await a.page.locator('#pay-button').click();
  await expect(a.page).toHaveURL(/\/bookings\/[0-9a-f-]{36}$/);
  for (const id of ['A-1-2', 'A-2-2']) {
    await expect(seat(b.page, id)).toHaveClass(/\bsd\b/, { timeout: 3_000 });
    await expect(seat(b.page, id)).toHaveAttribute('aria-label', /, sold$/);
  }
  await expectSameDocument(b.page, mark);
  await snap(b.page, testInfo, '04-b-sees-sold');
});
