import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import AxeBuilder from '@axe-core/playwright';
import type { APIRequestContext, Page, TestInfo } from '@playwright/test';
import { BASE_A, DEMO_EVENT_NAME, expect, holdSeats, openEvent, snap, test, waitForAuthForm, waitForClickHandler } from './helpers';

interface Finding {
  rule: string;
  impact: string | null | undefined;
  help: string;
  nodes: { target: string; message: string }[];
}

/** Runs axe on the page; attaches the full report; returns the serious and critical findings. */
async function seriousViolations(page: Page, testInfo: TestInfo, name: string): Promise<Finding[]> {
  const results = await new AxeBuilder({ page }).analyze();
  const report = testInfo.outputPath(`axe-${name}.json`);
  const summary = { url: page.url(), violations: results.violations, incomplete: results.incomplete.map((i) => i.id) };
  await writeFile(report, JSON.stringify(summary, null, 2));
  await testInfo.attach(`axe-${name}.json`, { path: report, contentType: 'application/json' });
  return results.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => ({
      rule: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes.map((n) => ({ target: n.target.map(String).join(' '), message: (n.failureSummary ?? '').replace(/\s+/g, ' ') })),
    }));
}

async function expectNoSeriousViolations(page: Page, testInfo: TestInfo, name: string) {
  await snap(page, testInfo, `axe-${name}`, true);
  const findings = await seriousViolations(page, testInfo, name);
  expect(findings, `serious or critical axe violations on ${page.url()}:\n${JSON.stringify(findings, null, 2)}`).toEqual([]);
}

async function demoEventId(api: APIRequestContext): Promise<string> {
  const res = await api.get(`${BASE_A}/api/v1/events`);
  expect(res.status()).toBe(200);
  const body = await res.json();
  const list: { event_id: string; name: string }[] = Array.isArray(body) ? body : body.events;
  const demo = list.find((e) => e.name === DEMO_EVENT_NAME);
  expect(demo, 'the seeded demo event is listed').toBeTruthy();
  return demo!.event_id;
}

/** A confirmed booking for the fan signed in to `api`, made through the JSON API. */
async function bookByApi(api: APIRequestContext, eventId: string, seatIds: string[]): Promise<string> {
  const hold = await api.post(`/api/v1/events/${eventId}/holds`, { data: { seat_ids: seatIds } });
  expect(hold.status(), await hold.text()).toBe(201);
  const { hold_id, hold_token } = await hold.json();
  const checkout = await api.post(`/api/v1/holds/${hold_id}/checkout`, {
    data: { hold_token, payment_token: 'tok_visa' },
    headers: { 'Idempotency-Key': `e2e-${Date.now()}-${Math.random().toString(36).slice(2)}` },
  });
  expect(checkout.status(), await checkout.text()).toBe(201);
  return (await checkout.json()).booking_id;
}

test.describe('accessibility (axe: no serious or critical violations)', () => {
  test('events page', async ({ newFan }, testInfo) => {
    const { page } = await newFan('axe-events');
    await page.goto('/');
    await expect(page.locator('.event-card').first()).toBeVisible();
    await expectNoSeriousViolations(page, testInfo, 'events');
  });

  test('demo event seat map page (and its screenshot for the README)', async ({ newFan }, testInfo) => {
    test.setTimeout(180_000);
    const { page } = await newFan('axe-map');
    const eventId = await demoEventId(page.request);
    await page.setViewportSize({ width: 1440, height: 900 });
    await openEvent(page, eventId);
    await expect(page.locator('#seat-map circle.seat').first()).toBeVisible();
    expect(await page.locator('#seat-map circle.seat').count()).toBeGreaterThan(1000);
    await page.screenshot({ path: path.join(testInfo.project.outputDir, 'seat-map.png'), fullPage: true });
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
