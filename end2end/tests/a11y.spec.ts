import { expectNoSeriousViolations } from './axe';
import { bookByApi, demoEventId, expect, holdSeats, openEvent, test, waitForAuthForm, waitForClickHandler } from './helpers';

test.describe('accessibility (axe: no serious or critical violations)', () => {
  test('events page', async ({ newFan }, testInfo) => {
    const { page } = await newFan('axe-events');
    await page.goto('/');
    await expect(page.locator('.event-card').first()).toBeVisible();
    await expectNoSeriousViolations(page, testInfo, 'events');
  });

  test('demo event seat map page', async ({ newFan }, testInfo) => {
    test.setTimeout(120_000);
    const { page } = await newFan('axe-map');
    await openEvent(page, await demoEventId(page.request));
    await expect(page.locator('#seat-map circle.seat')).toHaveCount(10_000);
    await expectNoSeriousViolations(page, testInfo, 'demo-event');
  });

  test('small event page with a hold in progress', async ({ staff, newFan }, testInfo) => {
    const { eventId } = await staff.createEvent();
    const { page } = await newFan('axe-hold');
    await openEvent(page, eventId);
    await expectNoSeriousViolations(page, testInfo, 'event-picking');
    await holdSeats(page, ['A-1-1', 'A-1-2']);
    await expectNoSeriousViolations(page, testInfo, 'event-holding');
  });

  test('sign-in page', async ({ page }, testInfo) => {
    await page.goto('/signin');
    await waitForAuthForm(page);
    await expect(page.getByRole('button', { name: 'Sign in' })).toBeVisible();
    await expectNoSeriousViolations(page, testInfo, 'signin');
    // With an error shown, too.
    await page.getByLabel('Email').fill('nobody@example.test');
    await page.getByLabel('Password').fill('wrong-password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect(page.getByRole('alert')).not.toBeEmpty();
    await expectNoSeriousViolations(page, testInfo, 'signin-error');
  });

  test('sign-up page', async ({ page }, testInfo) => {
    await page.goto('/signup');
    await waitForAuthForm(page);
    await expectNoSeriousViolations(page, testInfo, 'signup');
  });

  test('booking page and printable tickets', async ({ staff, newFan }, testInfo) => {
    const { eventId } = await staff.createEvent();
    const { page, context } = await newFan('axe-booking');
    const bookingId = await bookByApi(context.request, eventId, ['A-1-4', 'A-1-5']);
    await page.goto(`/bookings/${bookingId}`);
    await expect(page.locator('li.ticket')).toHaveCount(2);
    await expectNoSeriousViolations(page, testInfo, 'booking');
    await page.goto(`/bookings/${bookingId}/print`);
    await expect(page.locator('section.ticket')).toHaveCount(2);
    await expectNoSeriousViolations(page, testInfo, 'print');
  });

  test('account page', async ({ staff, newFan }, testInfo) => {
    const { eventId } = await staff.createEvent();
    const { page, context } = await newFan('axe-account');
    await bookByApi(context.request, eventId, ['A-2-6']);
    await page.goto('/account');
    await expect(page.locator('.booking-list li')).toHaveCount(1);
    await waitForClickHandler(page.getByRole('button', { name: 'Sign out' }));
    await expectNoSeriousViolations(page, testInfo, 'account');
  });
});
