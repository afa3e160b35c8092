import {
  attachment,
  expect,
  mailsTo,
  openEvent,
  pdfPages,
  PASSWORD,
  seat,
  seatStatuses,
  selectSeats,
  snap,
  test,
  uniqueEmail,
  waitForAuthForm,
  waitForPicker,
  holdSeats,
} from './helpers';

test('a fan signs up, holds seats, pays, and gets one ticket per seat', async ({ page, staff }, testInfo) => {
  const { eventId, name: eventName } = await staff.createEvent();
  const seats = ['A-1-3', 'A-1-4'];

  // The events list, searched by the event's name, links to it.
  await page.goto(`/?q=${encodeURIComponent(eventName)}`);
  const card = page.locator(`.event-card[data-event-id="${eventId}"]`);
  await expect(card).toContainText(eventName);
  await expect(card).toContainText('16 of 16 seats available');
  await snap(page, testInfo, '01-events-list', true);
  await card.getByRole('link', { name: eventName }).click();
  await expect(page).toHaveURL(`/events/${eventId}`);
  await waitForPicker(page);
  await expect(page.locator('#seat-map circle.seat')).toHaveCount(16);
  await expect(page.locator('#seat-map circle.seat.av')).toHaveCount(16);

  // Not signed in: picking works, holding sends the fan to sign in first.
  await selectSeats(page, seats);
  await expect(page.locator('#hold-button')).toHaveText('Hold 2 seats');
  await snap(page, testInfo, '02-selected-signed-out');
  await page.locator('#hold-button').click();
  await expect(page).toHaveURL(`/signin?next=/events/${eventId}`);
  await snap(page, testInfo, '03-sign-in-first');

  // Sign up from there, and come back to the event.
  await page.getByRole('link', { name: 'Create an account' }).click();
  await expect(page).toHaveURL(`/signup?next=/events/${eventId}`);
  await waitForAuthForm(page);
  const email = uniqueEmail('journey');
  await page.getByLabel('Name').fill('Journey Fan');
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(PASSWORD);
  await snap(page, testInfo, '04-sign-up-form');
  await page.getByRole('button', { name: 'Create account' }).click();
  await expect(page).toHaveURL(`/events/${eventId}`);
  await waitForPicker(page);
  await expect(page.locator('.site-header')).toContainText('Journey Fan');
  await snap(page, testInfo, '05-signed-in-event');

  // Pick, hold: the countdown runs and the seats are marked as the fan's.
  await holdSeats(page, seats);
  await expect(page.locator('.held-seats')).toContainText('Section A, row 1, seat 3');
  await expect(page.locator('.held-seats')).toContainText('Section A, row 1, seat 4');
  await expect(page.locator('.message')).toContainText('Held: Section A, row 1, seat 3 and Section A, row 1, seat 4');
  await expect(page.locator('#countdown')).toHaveText(/^[45]:\d\d$/);
  await expect(page.locator('#pay-button')).toHaveText('Pay €100.00');
  expect(await seatStatuses(page.request, eventId)).toMatchObject({ 'A-1-3': 'held', 'A-1-4': 'held', 'A-1-5': 'available' });
  await snap(page, testInfo, '06-held');

  // Pay with the approving card: the browser lands on the booking.
  await page.locator('input[name="card"][value="tok_visa"]').check();
  await page.locator('#pay-button').click();
  await expect(page).toHaveURL(/\/bookings\/[0-9a-f-]{36}$/);
  const bookingId = page.url().split('/').pop()!;
  const booking = page.locator(`section.booking[data-booking-id="${bookingId}"]`);
  await expect(booking).toBeVisible();
  await expect(booking.locator('h1')).toHaveText("You're going!");
  await expect(booking.locator('.booking-id')).toHaveText(bookingId);
  await expect(booking.locator('.booking-status')).toHaveText('confirmed');
  await expect(booking).toContainText(eventName);
  await expect(booking).toContainText('€100.00');

  // One ticket per seat, each with its own QR code and code.
  const tickets = booking.locator('ul.tickets li.ticket');
  await expect(tickets).toHaveCount(2);
  const codes: string[] = [];
  for (const [i, seatId] of seats.entries()) {
    const ticket = booking.locator(`li.ticket[data-seat-id="${seatId}"]`);
    await expect(ticket).toHaveCount(1);
    await expect(ticket.locator('h2')).toHaveText(`Section A, row 1, seat ${seatId.split('-')[2]}`);
    const qr = ticket.locator('.qr svg');
    await expect(qr).toBeVisible();
    const box = await qr.boundingBox();
    expect(box!.width, `QR ${i} is drawn at a scannable size`).toBeGreaterThan(50);
    expect(await qr.locator('rect, path').count(), 'the QR SVG has modules').toBeGreaterThan(0);
    const code = (await ticket.locator('code').innerText()).trim();
    expect(code.length).toBeGreaterThan(5);
    codes.push(code);
  }
  expect(new Set(codes).size, 'each ticket has its own code').toBe(2);
  await snap(page, testInfo, '07-booking', true);

  // The API agrees: one booking with these seats and codes.
  const mine = await (await page.request.get('/api/v1/me/bookings')).json();
  const forEvent = mine.bookings.filter((b: { event_id: string }) => b.event_id === eventId);
  expect(forEvent).toHaveLength(1);
  expect(forEvent[0].booking_id).toBe(bookingId);
  expect([...forEvent[0].seat_ids].sort()).toEqual(seats);
  expect(forEvent[0].total_cents).toBe(10000);
  expect(forEvent[0].tickets.map((t: { code: string }) => t.code).sort()).toEqual([...codes].sort());
  expect(await seatStatuses(page.request, eventId)).toMatchObject({ 'A-1-3': 'sold', 'A-1-4': 'sold' });
  await expect(booking.locator('.holder')).toHaveText('Journey Fan');

  // One mail in the inbox: both tickets as PDF pages, and the calendar entry.
  const [mail] = await mailsTo(email);
  expect(mail.subject).toBe(`Your tickets for ${eventName}`);
  for (const code of codes) expect(mail.body).toContain(code);
  expect(mail.body).toContain(`/bookings/${bookingId}`);
  const pdf = attachment(mail, 'tickets.pdf');
  expect(pdf.subarray(0, 5).toString()).toBe('%PDF-');
  expect(pdfPages(pdf)).toBe(2);
  const ics = attachment(mail, 'event.ics').toString('utf8');
  expect(ics).toContain('BEGIN:VEVENT');
  expect(ics).toContain(`SUMMARY:${eventName}`);
  await new Promise((resolve) => setTimeout(resolve, 1500));
  expect(await mailsTo(email), 'sent once').toHaveLength(1);

  // The printable page: one ticket section per seat, each with a QR SVG and its code.
  await page.getByRole('link', { name: 'Print tickets' }).click();
  await expect(page).toHaveURL(`/bookings/${bookingId}/print`);
  const printed = page.locator('section.ticket');
  await expect(printed).toHaveCount(2);
  for (let i = 0; i < 2; i++) {
    await expect(printed.nth(i).locator('svg')).toBeVisible();
  }
  for (const code of codes) {
    await expect(page.locator('section.ticket code', { hasText: code })).toHaveCount(1);
  }
  await expect(page.locator('section.ticket').first()).toContainText('Journey Fan');
  await snap(page, testInfo, '08-print', true);
  // It prints: the print stylesheet hides the toolbar.
  await page.emulateMedia({ media: 'print' });
  await expect(page.locator('.toolbar')).toBeHidden();
  await page.emulateMedia({ media: 'screen' });

  // My bookings lists it, linking to the booking.
  await page.goto('/account');
  await expect(page.getByRole('heading', { name: 'My bookings' })).toBeVisible();
  await expect(page.locator('.account')).toContainText(email);
  const line = page.locator(`.booking-list li:has(a[href="/bookings/${bookingId}"])`);
  await expect(line).toHaveCount(1);
  await expect(line.locator('a')).toHaveText(eventName);
  await expect(line).toContainText('2 seats');
  await expect(line).toContainText('€100.00');
  await expect(line).toContainText('confirmed');
  await snap(page, testInfo, '09-account', true);
  await line.locator('a').click();
  await expect(page).toHaveURL(`/bookings/${bookingId}`);

  // Back on the map, the seats are sold.
  await openEvent(page, eventId);
  await expect(seat(page, 'A-1-3')).toHaveClass(/\bsd\b/);
  await expect(seat(page, 'A-1-4')).toHaveClass(/\bsd\b/);
  await expect(seat(page, 'A-1-3')).toHaveAttribute('aria-disabled', 'true');
  await expect(seat(page, 'A-1-3')).toHaveAttribute('aria-label', /, sold$/);
  await snap(page, testInfo, '10-sold-on-map');
});

test('a declined card, then an approving one, on the same hold makes exactly one booking', async ({ staff, newFan }, testInfo) => {
  const { eventId } = await staff.createEvent();
  const fan = await newFan('decline');
  const { page } = fan;
  const seats = ['A-2-1', 'A-2-2'];

  await openEvent(page, eventId);
  await holdSeats(page, seats);
  await expect(page.locator('#pay-button')).toHaveText('Pay €50.00');
  const holdMessage = page.locator('.message');

  // Declined: nothing is charged, the seats stay held, the timer keeps running.
  await page.locator('input[name="card"][value="tok_chargeDeclined"]').check();
  await expect(page.locator('input[name="card"][value="tok_chargeDeclined"]')).toBeChecked();
  await page.locator('#pay-button').click();
  await expect(holdMessage).toHaveText(
    'Your card was declined and nothing was charged. Try another card: your seats stay held until the timer runs out.',
  );
  await expect(page).toHaveURL(`/events/${eventId}`);
  await expect(page.locator('#countdown')).toBeVisible();
  await expect(page.locator('#pay-button')).toBeEnabled();
  for (const id of seats) await expect(seat(page, id)).toHaveClass(/\bmine\b/);
  expect(await seatStatuses(page.request, eventId)).toMatchObject({ 'A-2-1': 'held', 'A-2-2': 'held' });
  let mine = await (await page.request.get('/api/v1/me/bookings')).json();
  expect(mine.bookings.filter((b: { event_id: string }) => b.event_id === eventId)).toHaveLength(0);
  await snap(page, testInfo, '01-declined');

  // The approving card on the same hold: one booking.
  await page.locator('input[name="card"][value="tok_visa"]').check();
  await page.locator('#pay-button').click();
  await expect(page).toHaveURL(/\/bookings\/[0-9a-f-]{36}$/);
  const bookingId = page.url().split('/').pop()!;
  await expect(page.locator('.booking-status')).toHaveText('confirmed');
  await expect(page.locator('li.ticket')).toHaveCount(2);
  await snap(page, testInfo, '02-booked');

  mine = await (await page.request.get('/api/v1/me/bookings')).json();
  const forEvent = mine.bookings.filter((b: { event_id: string }) => b.event_id === eventId);
  expect(forEvent, 'exactly one booking for the event').toHaveLength(1);
  expect(forEvent[0].booking_id).toBe(bookingId);
  expect(forEvent[0].status).toBe('confirmed');
  expect([...forEvent[0].seat_ids].sort()).toEqual(seats);
  expect(forEvent[0].total_cents).toBe(5000);
  expect(forEvent[0].tickets).toHaveLength(2);
  expect(await seatStatuses(page.request, eventId)).toMatchObject({ 'A-2-1': 'sold', 'A-2-2': 'sold', 'A-2-3': 'available' });
});
