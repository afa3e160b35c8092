import { bookByApi, expect, mailsTo, snap, test, waitForPicker } from './helpers';

test('a fan joins the waiting list of a sold-out tier, is offered a refunded seat, and buys it', async ({ staff, newFan }, testInfo) => {
  test.setTimeout(90_000);
  const { eventId, name } = await staff.createEvent();

  // Another fan buys the whole front tier: it is sold out, the back is not.
  const buyer = await newFan('front-row-buyer');
  const front = ['A-1-1', 'A-1-2', 'A-1-3', 'A-1-4', 'A-1-5', 'A-1-6', 'A-1-7', 'A-1-8'];
  const bookingId = await bookByApi(buyer.context.request, eventId, front);

  // The fan finds the front sold out and joins its waiting list.
  const fan = await newFan('waiting');
  const fanPage = fan.page;
  await fanPage.goto(`/events/${eventId}`);
  await waitForPicker(fanPage);
  const box = fanPage.locator('#waitlist');
  await expect(box).toContainText('Sold out in Front');
  const form = box.locator('#waitlist-join');
  await expect(form).toHaveAttribute('data-ready', 'true', { timeout: 20_000 });
  await form.getByLabel('Tier').selectOption('Front');
  await form.getByLabel('Seats').fill('1');
  await form.getByRole('button', { name: 'Join the waiting list' }).click();
  await expect(box.locator('#waitlist-status')).toHaveText('You are number 1 on the waiting list for 1 seat in Front.');
  await snap(fanPage, testInfo, '01-on-the-waiting-list');

  // The box office refunds one of the buyer's tickets: its seat is offered to the fan.
  const booking = await (await buyer.context.request.get(`/api/v1/bookings/${bookingId}`)).json();
  const ticket = booking.tickets.find((t: { seat_id: string }) => t.seat_id === 'A-1-4');
  const refund = await staff.api.post(`/api/v1/admin/bookings/${bookingId}/refund`, {
    data: { ticket_ids: [ticket.ticket_id], reason: 'cannot come' },
    headers: { 'Idempotency-Key': `e2e-refund-${Date.now()}` },
  });
  expect(refund.status(), await refund.text()).toBe(200);

  // The offer arrives by mail and on the event's page, where it is a hold of the fan's.
  const [offerMail] = await mailsTo(fan.email);
  expect(offerMail.subject).toContain(`Seats for ${name} are yours to buy until`);
  expect(offerMail.body).toContain('section A, row 1, seat 4');
  await expect
    .poll(
      async () => {
        await fanPage.reload();
        return fanPage.locator('#pay-button').count();
      },
      { timeout: 15_000, message: 'the offer held on the fan page' },
    )
    .toBe(1);
  await waitForPicker(fanPage);
  await expect(box.locator('#waitlist-status')).toContainText('Seats came back for you: A-1-4 (€50.00), kept until');
  await snap(fanPage, testInfo, '02-offer');

  // Nobody else can take it meanwhile.
  const other = await newFan('too-late');
  const tried = await other.context.request.post(`/api/v1/events/${eventId}/holds`, { data: { seat_ids: ['A-1-4'] } });
  expect(tried.status()).toBe(409);

  // The fan pays as for any hold.
  await fanPage.locator('input[name="card"][value="tok_visa"]').check();
  await fanPage.locator('#pay-button').click();
  await expect(fanPage).toHaveURL(/\/bookings\/[0-9a-f-]{36}$/);
  await fanPage.goto('/account');
  await expect(fanPage.locator('#my-waitlists li')).toContainText('bought from the waiting list');
  await snap(fanPage, testInfo, '03-bought');

  // The box office sees who was offered what.
  const list = await (await staff.api.get(`/api/v1/admin/events/${eventId}/waitlist`)).json();
  expect(list.lines[0].state).toBe('bought');
  expect(list.lines[0].seat_ids).toEqual(['A-1-4']);
});
