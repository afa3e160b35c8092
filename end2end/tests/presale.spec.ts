import { expect, holdSeats, seat, signInAsStaff, snap, test, waitForPicker } from './helpers';

test('the box office makes a fan-club code; a fan enters it before the public sale, holds a seat it opens and pays; the use is counted', async ({
  page,
  staff,
  newFan,
}, testInfo) => {
  test.setTimeout(90_000);
  // The public sale opens in a week.
  const { eventId } = await staff.createEvent({ saleOpensInMs: 7 * 24 * 3600_000 });

  // Staff make a shared code for the front tier on the event's page.
  await signInAsStaff(page, `/admin/events/${eventId}`);
  const form = page.locator('#new-codes');
  await form.getByLabel(/^For/).fill('Fan club');
  await form.getByLabel(/^Shared code/).fill('FANCLUB-E2E');
  await form.getByLabel('Uses per code').fill('4');
  await form.getByLabel(/^Tiers it opens/).fill('Front');
  await form.getByRole('button', { name: 'Make codes' }).click();
  await expect(page).toHaveURL(new RegExp(`/admin/events/${eventId}\\?saved=1`));
  const batch = page.locator('table.presale-batches tbody tr').first();
  await expect(batch).toContainText('Fan club');
  await expect(batch).toContainText('shared (FA…)');
  await expect(batch.locator('.uses')).toHaveText('0 (0 codes used)');

  // A fan finds the presale on the event's page; without a code nothing is on sale.
  const fan = await newFan('presale');
  const fanPage = fan.page;
  await fanPage.goto(`/events/${eventId}`);
  await waitForPicker(fanPage);
  await expect(fanPage.locator('#presale .presale-open')).toContainText('Presale for Fan club until');
  await expect(fanPage.locator('#picker')).toContainText('not on sale right now');
  const codeForm = fanPage.locator('#presale-code');
  await expect(codeForm).toHaveAttribute('data-ready', 'true', { timeout: 20_000 });

  // A wrong code is refused in place; the right one, typed loosely, opens the front tier.
  await codeForm.getByLabel('Presale code').fill('NOT-A-CODE');
  await codeForm.getByRole('button', { name: 'Use code' }).click();
  await expect(codeForm.locator('.msg.error')).toHaveText('this code does not open a presale of this event now');
  await codeForm.getByLabel('Presale code').fill('fanclub e2e');
  await codeForm.getByRole('button', { name: 'Use code' }).click();
  await expect(fanPage.locator('#presale-pass')).toContainText('Presale for Fan club: your code opens tier Front, up to 4 tickets');
  await waitForPicker(fanPage);
  await snap(fanPage, testInfo, '01-presale-code-accepted');

  // A back seat is not the code's: refused; a front seat is held and paid for.
  await seat(fanPage, 'A-2-1').click();
  await fanPage.locator('#hold-button').click();
  await expect(fanPage.locator('#picker .message .msg.error')).toHaveText('your presale code does not open these seats');
  await seat(fanPage, 'A-2-1').click();
  await holdSeats(fanPage, ['A-1-1']);
  await fanPage.locator('input[name="card"][value="tok_visa"]').check();
  await fanPage.locator('#pay-button').click();
  await expect(fanPage).toHaveURL(/\/bookings\/[0-9a-f-]{36}$/);
  await snap(fanPage, testInfo, '02-presale-booking');

  // The box office sees the use; the change log has the code's making.
  await page.reload();
  await expect(page.locator('table.presale-batches tbody tr').first().locator('.uses')).toHaveText('1 (1 codes used)');
});
