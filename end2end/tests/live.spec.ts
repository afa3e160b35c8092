import {
  expect,
  expectSameDocument,
  holdSeats,
  isHoldCall,
  markDocument,
  openEvent,
  seat,
  seatLabel,
  seatStatuses,
  selectSeats,
  snap,
  test,
} from './helpers';
import type { Page } from '@playwright/test';

/** Waits until the page shows either a hold (countdown) or an error message; says which. */
async function outcome(page: Page): Promise<'held' | 'refused'> {
  const held = page.locator('#countdown');
  const refused = page.locator('.message .msg.error');
  await expect(held.or(refused)).toBeVisible();
  return (await held.isVisible()) ? 'held' : 'refused';
}

test('two fans race for the same seat: exactly one holds it, the other is told and sees it taken live', async ({ staff, newFan }, testInfo) => {
  const { eventId } = await staff.createEvent();
  const target = 'A-1-3';
  const [a, b] = await Promise.all([newFan('racer-a'), newFan('racer-b')]);
  await Promise.all([openEvent(a.page, eventId), openEvent(b.page, eventId)]);
  const marks = [await markDocument(a.page), await markDocument(b.page)];

  await selectSeats(a.page, [target]);
  await selectSeats(b.page, [target]);
  await Promise.all([snap(a.page, testInfo, '01-a-selected'), snap(b.page, testInfo, '01-b-selected')]);

  // Both click hold at (nearly) the same moment: the buttons' positions are
  // found first, so the two real mouse clicks go out back to back, with no
  // actionability waits between them that could let one fan see the other's
  // hold before clicking.
  const centre = async (p: Page) => {
    const button = p.locator('#hold-button');
    await expect(button).toBeEnabled();
    await button.scrollIntoViewIfNeeded();
    const box = (await button.boundingBox())!;
    return { x: box.x + box.width / 2, y: box.y + box.height / 2 };
  };
  const [at, bt] = [await centre(a.page), await centre(b.page)];
  const holdPost = (p: Page) =>
    p.waitForResponse(isHoldCall);
  const answers = Promise.all([holdPost(a.page), holdPost(b.page)]);
  await Promise.all([a.page.mouse.click(at.x, at.y), b.page.mouse.click(bt.x, bt.y)]);
  // Both requests reached the server: one was granted, the other refused.
  const statuses = (await answers).map((r) => r.status());
  expect([...statuses].sort(), 'hold answers').toEqual([201, 409]);
  const results = await Promise.all([outcome(a.page), outcome(b.page)]);
  expect([...results].sort(), 'exactly one fan wins the seat').toEqual(['held', 'refused']);
  expect(results, 'the page that got 201 shows the hold').toEqual(statuses.map((s) => (s === 201 ? 'held' : 'refused')));
  const [winner, loser] = (await a.page.locator('#countdown').isVisible()) ? [a, b] : [b, a];

  // The winner holds it.
  await expect(winner.page.locator('#countdown')).toHaveText(/^[45]:\d\d$/);
  await expect(winner.page.locator('.held-seats li')).toHaveText([seatLabel(target)]);
  await expect(seat(winner.page, target)).toHaveClass(/\bmine\b/);

  // The loser is told which seat went, nothing is held, and the seat is greyed out in place.
  await expect(loser.page.locator('.message')).toHaveText(
    `Sorry, ${seatLabel(target)} was just taken by someone else. Nothing was held; pick other seats.`,
  );
  await expect(loser.page.locator('#countdown')).toHaveCount(0);
  await expect(seat(loser.page, target)).toHaveClass(/\bhd\b/);
  await expect(seat(loser.page, target)).not.toHaveClass(/\b(sel|mine|av)\b/);
  await expect(seat(loser.page, target)).toHaveAttribute('aria-disabled', 'true');
  await expect(seat(loser.page, target)).not.toHaveAttribute('aria-pressed', 'true');
  await expect(loser.page.locator('.selection li')).toHaveCount(0);
  await expect(loser.page.locator('#hold-button')).toBeDisabled();
  await expectSameDocument(a.page, marks[0]);
  await expectSameDocument(b.page, marks[1]);
  await Promise.all([snap(winner.page, testInfo, '02-winner'), snap(loser.page, testInfo, '02-loser')]);

  // The server agrees: held, and by the winner only.
  expect((await seatStatuses(a.page.request, eventId))[target]).toBe('held');
  const loserTries = await loser.context.request.post(`/api/v1/events/${eventId}/holds`, { data: { seat_ids: [target] } });
  expect(loserTries.status()).toBe(409);
  expect((await loserTries.json()).conflict_seats).toEqual([target]);

  // Clicking the taken seat in the loser's page does not select it.
  // (Forced: Playwright will not click an aria-disabled element, but a fan's mouse can.)
  await seat(loser.page, target).click({ force: true });
  await expect(loser.page.locator('.message')).toHaveText(`${seatLabel(target)} is not available.`);
  await expect(loser.page.locator('.selection li')).toHaveCount(0);
});

test("a seat one fan holds turns held in another fan's page live, and leaves that fan's selection", async ({ staff, newFan }, testInfo) => {
  const { eventId } = await staff.createEvent();
  const [a, b] = await Promise.all([newFan('holder'), newFan('watcher')]);
  await Promise.all([openEvent(a.page, eventId), openEvent(b.page, eventId)]);
  const markB = await markDocument(b.page);

  // B has picked seat 5 (which A is about to hold) and seat 6 (which A leaves alone).
  await selectSeats(b.page, ['A-1-5', 'A-1-6']);
  await expect(b.page.locator('#hold-button')).toHaveText('Hold 2 seats');
  for (const id of ['A-1-5', 'A-1-7']) await expect(seat(b.page, id)).toHaveClass(/\bav\b/);
  await snap(b.page, testInfo, '01-b-before');

  // A holds seats 5 and 7.
  await holdSeats(a.page, ['A-1-5', 'A-1-7']);
  await snap(a.page, testInfo, '02-a-holds');

  // Within a couple of seconds, without a reload, both turn held in B's page.
  for (const id of ['A-1-5', 'A-1-7']) {
    await expect(seat(b.page, id)).toHaveClass(/\bhd\b/, { timeout: 3_000 });
    await expect(seat(b.page, id)).toHaveAttribute('aria-disabled', 'true');
    await expect(seat(b.page, id)).toHaveAttribute('aria-label', /, held$/);
    await expect(seat(b.page, id)).not.toHaveClass(/\bmine\b/);
  }
  // Seat 5 left B's selection, with a message naming it; seat 6 stays selected.
  await expect(b.page.locator('.message')).toHaveText(
    `${seatLabel('A-1-5')} was just taken by someone else and left your selection.`,
  );
  await expect(seat(b.page, 'A-1-5')).not.toHaveClass(/\bsel\b/);
  await expect(seat(b.page, 'A-1-5')).not.toHaveAttribute('aria-pressed', 'true');
  await expect(b.page.locator('.selection li')).toHaveCount(1);
  await expect(b.page.locator('.selection li')).toHaveAttribute('data-seat-id', 'A-1-6');
  await expect(seat(b.page, 'A-1-6')).toHaveClass(/\bsel\b/);
  await expect(b.page.locator('#hold-button')).toHaveText('Hold 1 seat');
  await expectSameDocument(b.page, markB);
  await snap(b.page, testInfo, '03-b-after');

  // B can still hold what is left of the selection.
  await b.page.locator('#hold-button').click();
  await expect(b.page.locator('#countdown')).toBeVisible();
  await expect(b.page.locator('.held-seats li')).toHaveText([seatLabel('A-1-6')]);
  // ...and A sees that live too.
  await expect(seat(a.page, 'A-1-6')).toHaveClass(/\bhd\b/, { timeout: 3_000 });
  await expect(seat(a.page, 'A-1-6')).not.toHaveClass(/\bmine\b/);
  for (const id of ['A-1-5', 'A-1-7']) await expect(seat(a.page, id)).toHaveClass(/\bmine\b/);
  await snap(a.page, testInfo, '04-a-sees-b');
});

test('a hold that runs out expires on screen, and the seats come back live elsewhere', async ({ staff, newFan }, testInfo) => {
  const ttl = 6;
  const { eventId } = await staff.createEvent({ holdTtlSeconds: ttl });
  const seats = ['A-1-1', 'A-1-2'];
  const [a, b] = await Promise.all([newFan('expiring'), newFan('waiting')]);
  await Promise.all([openEvent(a.page, eventId), openEvent(b.page, eventId)]);
  const [markA, markB] = [await markDocument(a.page), await markDocument(b.page)];

  // Record every value the countdown shows, and when the expiry message appears (page clock).
  await a.page.evaluate(() => {
    const w = window as unknown as { __ticks: string[]; __expiredAt?: number };
    w.__ticks = [];
    new MutationObserver(() => {
      const text = document.getElementById('countdown')?.textContent ?? null;
      if (text !== null && w.__ticks[w.__ticks.length - 1] !== text) w.__ticks.push(text);
      if (!w.__expiredAt && document.querySelector('.message')?.textContent?.includes('expired')) w.__expiredAt = Date.now();
    }).observe(document.getElementById('picker')!, { subtree: true, childList: true, characterData: true });
  });

  const holdResponse = a.page.waitForResponse(isHoldCall);
  await holdSeats(a.page, seats);
  const hold = await (await holdResponse).json();
  const expiresAt = Date.parse(hold.expires_at);
  await expect(a.page.locator('#countdown')).toHaveText(/^0:0[3-6]$/);
  for (const id of seats) await expect(seat(b.page, id)).toHaveClass(/\bhd\b/, { timeout: 3_000 });
  await Promise.all([snap(a.page, testInfo, '01-a-holding'), snap(b.page, testInfo, '01-b-sees-held')]);

  // The countdown runs down to zero, then the page says the hold expired.
  await expect(a.page.locator('.message')).toHaveText(
    'Your hold expired and the seats were released. You can pick seats again.',
    { timeout: (ttl + 5) * 1000 },
  );
  const { ticks, expiredAt } = await a.page.evaluate(() => {
    const w = window as unknown as { __ticks: string[]; __expiredAt: number };
    return { ticks: w.__ticks, expiredAt: w.__expiredAt };
  });
  const secs = ticks.map((t) => {
    const [m, s] = t.split(':').map(Number);
    return m * 60 + s;
  });
  expect(secs.length, `countdown values seen: ${ticks.join(' ')}`).toBeGreaterThanOrEqual(3);
  for (let i = 1; i < secs.length; i++) expect(secs[i], `countdown only goes down: ${ticks.join(' ')}`).toBeLessThan(secs[i - 1]);
  // It counts whole seconds rounded up, so its last value is 0:01 (or 0:00); then it is replaced by the message.
  expect(secs[secs.length - 1], `the countdown ran down to zero: ${ticks.join(' ')}`).toBeLessThanOrEqual(1);
  // The hold expired on screen when its time was up: not early, and promptly.
  expect(expiredAt - expiresAt, 'expired on screen at the hold\'s expiry time (ms after expires_at)').toBeGreaterThanOrEqual(-300);
  expect(expiredAt - expiresAt, 'expired on screen at the hold\'s expiry time (ms after expires_at)').toBeLessThanOrEqual(2_500);

  await expect(a.page.locator('#countdown')).toHaveCount(0);
  await expect(a.page.locator('#hold-button')).toBeVisible();
  for (const id of seats) {
    await expect(seat(a.page, id)).toHaveClass(/\bav\b/);
    await expect(seat(a.page, id)).not.toHaveClass(/\bmine\b/);
  }
  await snap(a.page, testInfo, '02-a-expired');

  // In B's page the seats become available again, live.
  for (const id of seats) {
    await expect(seat(b.page, id)).toHaveClass(/\bav\b/, { timeout: 3_000 });
    await expect(seat(b.page, id)).not.toHaveAttribute('aria-disabled', 'true');
    await expect(seat(b.page, id)).toHaveAttribute('aria-label', /, 50\.00$/);
  }
  await expectSameDocument(a.page, markA);
  await expectSameDocument(b.page, markB);
  expect(await seatStatuses(b.page.request, eventId)).toMatchObject({ 'A-1-1': 'available', 'A-1-2': 'available' });
  await snap(b.page, testInfo, '03-b-sees-available');

  // And B can now take them.
  await holdSeats(b.page, seats);
});

test('a hold nobody pays for is reaped by the server and the seats come back live', async ({ staff, newFan }, testInfo) => {
  // No browser holds this one, so only the server's reaper can release it.
  const { eventId } = await staff.createEvent({ holdTtlSeconds: 3 });
  const [a, b] = await Promise.all([newFan('api-holder'), newFan('viewer')]);
  await openEvent(b.page, eventId);
  const mark = await markDocument(b.page);

  const res = await a.context.request.post(`/api/v1/events/${eventId}/holds`, { data: { seat_ids: ['A-2-4', 'A-2-5'] } });
  expect(res.status(), await res.text()).toBe(201);
  for (const id of ['A-2-4', 'A-2-5']) await expect(seat(b.page, id)).toHaveClass(/\bhd\b/, { timeout: 3_000 });
  await snap(b.page, testInfo, '01-held-by-api');

  for (const id of ['A-2-4', 'A-2-5']) await expect(seat(b.page, id)).toHaveClass(/\bav\b/, { timeout: 8_000 });
  await expectSameDocument(b.page, mark);
  expect(await seatStatuses(b.page.request, eventId)).toMatchObject({ 'A-2-4': 'available', 'A-2-5': 'available' });
  await snap(b.page, testInfo, '02-reaped');
});

test('a fan who loses a race is offered the nearest free seats together, and holds them in one click', async ({ staff, newFan }, testInfo) => {
  const { eventId } = await staff.createEvent();
  const [rival, fan] = await Promise.all([newFan('rival'), newFan('offered')]);
  // The fan's page hears nothing live, so it does not learn of the rival's
  // hold before clicking: the hold itself finds the conflict.
  await fan.page.routeWebSocket(/\/live/, () => {});
  await openEvent(fan.page, eventId, { live: false });
  await selectSeats(fan.page, ['A-1-4', 'A-1-5']);
  const taken = await rival.context.request.post(`/api/v1/events/${eventId}/holds`, { data: { seat_ids: ['A-1-5'] } });
  expect(taken.status()).toBe(201);

  const answer = fan.page.waitForResponse(isHoldCall);
  await fan.page.locator('#hold-button').click();
  expect((await answer).status()).toBe(409);
  await expect(fan.page.locator('.message')).toHaveText(
    `Sorry, ${seatLabel('A-1-5')} was just taken by someone else. Nothing was held; pick other seats.`,
  );
  const offer = fan.page.locator('#suggestion-button');
  await expect(offer).toHaveText('Hold these 2 seats instead');
  await expect(fan.page.locator('.suggestion')).toContainText('Nearest free seats together');
  await expect(fan.page.locator('#seat-map circle.suggested')).toHaveCount(2);
  await snap(fan.page, testInfo, '01-offered');

  await offer.click();
  await expect(fan.page.locator('#countdown')).toBeVisible();
  await expect(fan.page.locator('.held-seats li')).toHaveCount(2);
  const statuses = await seatStatuses(fan.page.request, eventId);
  const mine = Object.entries(statuses).filter(([id, s]) => s === 'held' && id !== 'A-1-5').map(([id]) => id);
  expect(mine.length).toBe(2);
  // Side by side, in the row the fan wanted.
  const numbers = mine.map((id) => Number(id.split('-')[2])).sort((a, b) => a - b);
  expect(mine.every((id) => id.startsWith('A-1-'))).toBe(true);
  expect(numbers[1] - numbers[0]).toBe(1);
  await snap(fan.page, testInfo, '02-held-instead');
});
