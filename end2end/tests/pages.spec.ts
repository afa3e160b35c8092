import path from 'node:path';
import { demoEventId, expect, PASSWORD, snap, test, uniqueEmail, waitForClickHandler, waitForPicker } from './helpers';

test('signing out from My bookings ends the session', async ({ newFan }, testInfo) => {
  const { page } = await newFan('sign-out');
  await page.goto('/account');
  await expect(page.getByRole('heading', { name: 'My bookings' })).toBeVisible();
  await expect(page.locator('.account .notice')).toContainText('No bookings yet.');
  const signOut = page.getByRole('button', { name: 'Sign out' });
  await waitForClickHandler(signOut);
  await signOut.click();
  await expect(page).toHaveURL('/');
  await expect(page.locator('.site-header').getByRole('link', { name: 'Sign in' })).toBeVisible();
  expect((await page.request.get('/api/v1/me')).status()).toBe(401);
  // My bookings now asks to sign in first.
  await page.goto('/account');
  await expect(page).toHaveURL('/signin?next=/account');
  await snap(page, testInfo, 'signed-out');
});

test('the demo event seat map renders every seat (README screenshot)', async ({ newFan }, testInfo) => {
  const { page } = await newFan('readme');
  const eventId = await demoEventId(page.request);
  const seats = await (await page.request.get(`/api/v1/events/${eventId}/seats`)).json();
  await page.setViewportSize({ width: 1440, height: 900 });
  await page.goto(`/events/${eventId}?view=whole`);
  await waitForPicker(page);
  await expect(page.locator('#seat-map circle.seat')).toHaveCount(seats.seats.length);
  expect(seats.seats.length).toBeGreaterThanOrEqual(10_000);
  await expect(page.locator('#seat-map g.section').first()).toBeVisible();
  await page.screenshot({ path: path.join(testInfo.project.outputDir, 'seat-map.png'), fullPage: true });
});

test('signing up and signing in work without JavaScript', async ({ browser }, testInfo) => {
  const context = await browser.newContext({ javaScriptEnabled: false });
  const page = await context.newPage();
  await page.goto('/signup?next=/account');
  const email = uniqueEmail('nojs');
  await page.getByLabel('Name').fill('No Script');
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Create account' }).click();
  await expect(page).toHaveURL('/account');
  await expect(page.getByRole('heading', { name: 'My bookings' })).toBeVisible();

  // Signing out is a form too.
  await page.getByRole('button', { name: 'Sign out' }).click();
  await expect(page).toHaveURL('/');

  // A wrong password comes back to the form with the reason.
  await page.goto('/signin?next=/account');
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill('not the password');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.locator('form.auth-form [role=alert]')).toContainText('wrong email or password');
  await snap(page, testInfo, 'no-js-sign-in-refused');
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page).toHaveURL('/account');
  await context.close();
});
