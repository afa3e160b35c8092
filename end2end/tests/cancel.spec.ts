import { attachment, expect, holdSeats, mailsTo, openEvent, pdfPages, seatStatuses, snap, test } from './helpers';

test('a fan chooses an adult and a child ticket, pays, gets both in one mail, cancels one within the terms, and is refused after the deadline', async ({
  staff,
  newFan,
}, testInfo) => {
  // Adults and children; fans may cancel until two days before; the seller keeps 10% and €1.00 a ticket.
  const { eventId, name: eventName } = await staff.createEvent({
    refundPolicy: { cancel_until_hours: 48, keep_percent: 10, fee_cents: 100 },
    ticketTypes: [
      { name: 'Adult', prices: [{ tier: 'Front', price_cents: 5000 }, { tier: 'Back', price_cents: 2500 }] },
      { name: 'Child', prices: [{ tier: 'Front', price_cents: 2000 }, { tier: 'Back', price_cents: 1000 }] },
    ],
  });
  const terms = /each ticket's price comes back less 10% and a €1\.00 fee per ticket\./;
  const fan = await newFan('cancel');
  const { page } = fan;

  // The terms are on the event's page, and beside the pay button.
  await openEvent(page, eventId);
  await expect(page.locator('#event-facts .refund-terms')).toHaveText(terms);
  await expect(page.locator('#event-facts .ticket-types')).toHaveText('Adult: Front €50.00, Back €25.00 · Child: Front €20.00, Back €10.00');
  await holdSeats(page, ['A-1-1', 'A-1-2']);
  await expect(page.locator('#picker .refund-terms')).toHaveText(terms);

  // Each seat is an adult's until the fan says otherwise; the second is a child's.
  await expect(page.locator('#held-total')).toHaveText('€100.00');
  await page.locator('select[data-seat-id="A-1-2"]').selectOption('Child');
  await expect(page.locator('#held-total')).toHaveText('€70.00');
  await expect(page.locator('#pay-button')).toHaveText('Pay €70.00');
  await snap(page, testInfo, '01-types-and-terms-before-paying');
  await page.locator('input[name="card"][value="tok_visa"]').check();
  await page.locator('#pay-button').click();
  await expect(page).toHaveURL(/\/bookings\/[0-9a-f-]{36}$/);
  const bookingId = page.url().split('/').pop()!;
  await expect(page.locator('li.ticket[data-seat-id="A-1-1"] .ticket-type')).toHaveText('Adult');
  await expect(page.locator('li.ticket[data-seat-id="A-1-2"] .ticket-type')).toHaveText('Child');
  await expect(page.locator('.booking-facts')).toContainText('€70.00');

  // One mail: both tickets as pages of one PDF, their types, and the calendar entry.
  const [tickets] = await mailsTo(fan.email);
  expect(tickets.subject).toBe(`Your tickets for ${eventName}`);
  expect(tickets.body).toContain('(Adult, Front, €50.00)');
  expect(tickets.body).toContain('(Child, Front, €20.00)');
  expect(pdfPages(attachment(tickets, 'tickets.pdf'))).toBe(2);
  expect(attachment(tickets, 'event.ics').toString('utf8')).toContain('BEGIN:VEVENT');

  // The booking page repeats them and offers each ticket back at €44.00.
  await expect(page.locator('#refund-terms')).toHaveText(terms);
  const panel = page.locator('section.cancel-tickets');
  await expect(panel).toHaveAttribute('data-ready', 'true', { timeout: 20_000 });
  await expect(panel.locator('li')).toHaveCount(2);
  await expect(panel.locator('li').first()).toContainText('€44.00 back');
  await expect(panel.locator('li').nth(1)).toContainText('€17.00 back');
  await panel.getByRole('checkbox', { name: /Section A, row 1, seat 1/ }).check();
  await expect(page.locator('#cancel-selected')).toHaveText('Cancel 1 ticket (€44.00 back)');
  await snap(page, testInfo, '02-choose-a-ticket');
  await page.locator('#cancel-selected').click();
  await expect(panel.locator('.msg.success')).toHaveText(
    'Cancelled: Section A, row 1, seat 1. €44.00 is on its way back to your card (the seller kept €6.00); a mail confirms it.',
  );
  await snap(page, testInfo, '03-cancelled');

  // Reloaded: one ticket refunded, the other still good; the seat is on sale again.
  await page.reload();
  await expect(page.locator('.booking-status')).toHaveText('partially refunded');
  await expect(page.locator('li.ticket[data-seat-id="A-1-1"]')).toHaveAttribute('data-state', 'refunded');
  await expect(page.locator('li.ticket[data-seat-id="A-1-2"]')).toHaveAttribute('data-state', 'valid');
  await expect(page.locator('.booking-facts')).toContainText('€44.00');
  expect(await seatStatuses(page.request, eventId)).toMatchObject({ 'A-1-1': 'available', 'A-1-2': 'sold' });

  // The mail says what came back.
  const mails = await mailsTo(fan.email, 2);
  const cancelled = mails.find((m) => m.subject.startsWith('Cancelled'));
  expect(cancelled, 'a cancellation mail').toBeTruthy();
  expect(cancelled!.body).toContain('Refunded: €44.00');
  expect(cancelled!.body).toContain('the seller kept €6.00');

  // The show moves to tomorrow: the deadline has passed while the page was open.
  await expect(page.locator('section.cancel-tickets')).toHaveAttribute('data-ready', 'true', { timeout: 20_000 });
  await staff.changeEvent(eventId, { starts_at: new Date(Date.now() + 24 * 3600_000).toISOString() });
  await page.locator('section.cancel-tickets').getByRole('checkbox', { name: /Section A, row 1, seat 2/ }).check();
  await page.locator('#cancel-selected').click();
  await expect(page.locator('section.cancel-tickets .msg.error')).toContainText('could be cancelled until');
  await expect(page.locator('section.cancel-tickets .msg.error')).toContainText('and no longer');
  await snap(page, testInfo, '04-refused-after-the-deadline');
  await page.reload();
  await expect(page.locator('li.ticket[data-seat-id="A-1-2"]')).toHaveAttribute('data-state', 'valid');
  await expect(page.locator('section.cancel-tickets')).toHaveCount(0);
  await expect(page.locator('#refund-terms')).toContainText('that time has passed');
  expect(await seatStatuses(page.request, eventId)).toMatchObject({ 'A-1-2': 'sold' });
  expect(await (await page.request.get(`/api/v1/bookings/${bookingId}`)).json()).toMatchObject({ refunded_cents: 4400 });
});

test('cancelling a whole booking asks once more, then refunds every ticket', async ({ staff, newFan }, testInfo) => {
  const { eventId } = await staff.createEvent({ refundPolicy: { cancel_until_hours: 24 } });
  const fan = await newFan('cancel-all');
  const { page } = fan;
  await openEvent(page, eventId);
  await holdSeats(page, ['A-2-1', 'A-2-2']);
  await expect(page.locator('#picker .refund-terms')).toContainText("each ticket's price comes back in full.");
  await page.locator('input[name="card"][value="tok_visa"]').check();
  await page.locator('#pay-button').click();
  await expect(page).toHaveURL(/\/bookings\/[0-9a-f-]{36}$/);
  const panel = page.locator('section.cancel-tickets');
  await expect(panel).toHaveAttribute('data-ready', 'true', { timeout: 20_000 });

  // A second look first; keeping them changes nothing.
  await page.locator('#cancel-all').click();
  await expect(panel.locator('.confirm')).toContainText('Cancel all 2 tickets and get €50.00 back?');
  await snap(page, testInfo, '01-confirm');
  await page.locator('#cancel-all-keep').click();
  await expect(panel.locator('.confirm')).toHaveCount(0);
  expect(await seatStatuses(page.request, eventId)).toMatchObject({ 'A-2-1': 'sold', 'A-2-2': 'sold' });

  await page.locator('#cancel-all').click();
  await page.locator('#cancel-all-confirm').click();
  await expect(panel.locator('.msg.success')).toContainText('€50.00 is on its way back to your card; a mail confirms it.');
  await page.reload();
  await expect(page.locator('h1')).toHaveText('Booking refunded');
  await expect(page.locator('section.cancel-tickets')).toHaveCount(0);
  expect(await seatStatuses(page.request, eventId)).toMatchObject({ 'A-2-1': 'available', 'A-2-2': 'available' });
});
