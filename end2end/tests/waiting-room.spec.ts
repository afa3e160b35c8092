// The waiting room in a real browser: a fan who opens a sale with its
// waiting room on is sent to the queue, watches their position fall as the
// box office lets more shoppers in, is admitted, reaches the seat map, and
// can hold a seat (the admission token travels with the hold).
import { expect, request as playwrightRequest, test } from '@playwright/test';

const base = `http://127.0.0.1:${Number(process.env.FRONTROW_E2E_PORT ?? 3100)}`;

async function signedIn(email: string, signup = true) {
  const api = await playwrightRequest.newContext({ baseURL: base });
  const r = signup
    ? await api.post('/api/v1/auth/signup', { data: { email, password: 'correct-horse-battery', name: 'Queue Fan' } })
    : await api.post('/api/v1/auth/login', { data: { email, password: 'frontrow-demo' } });
  expect(r.ok(), await r.text()).toBeTruthy();
  return api;
}

const unique = (tag: string) => `${tag}-${Date.now()}-${Math.random().toString(36).slice(2, 8)}@example.test`;

test('a fan waits in the queue, sees the position fall, is admitted and reaches the seat map', async ({ page }, testInfo) => {
  const staff = await signedIn('staff@frontrow.test', false);
  const created = await staff.post('/api/v1/admin/events', {
    data: {
      name: `Queue Night ${Date.now()}`, kind: 'concert', venue: 'Queue Hall',
      starts_at: new Date(Date.now() + 30 * 86400e3).toISOString(),
      sale_opens_at: new Date(Date.now() - 60e3).toISOString(),
      hold_ttl_seconds: 300, max_seats_per_order: 4, waiting_room_enabled: true,
      tiers: [{ tier: 'Floor', price_cents: 4000 }],
      sections: [{ section: 'A', rows: [{ row: '1', seats: 10, tier: 'Floor' }, { row: '2', seats: 10, tier: 'Floor' }] }],
    },
  });
  expect(created.status()).toBe(201);
  const eventId = (await created.json()).event_id as string;
  const controls = `/api/v1/admin/events/${eventId}/waiting-room`;
  // One shopper at a time, so the queue moves only when staff say so.
  expect((await staff.patch(controls, { data: { max_active: 1 } })).ok()).toBeTruthy();

  // Three fans join ahead of ours.
  for (let i = 0; i < 3; i++) {
    const ahead = await signedIn(unique('ahead'));
    expect((await ahead.post(`/api/v1/events/${eventId}/queue`)).status()).toBe(201);
  }

  // Our fan signs up in the browser and opens the sale.
  const email = unique('waiting');
  await page.goto(`/signup?next=/events/${eventId}`);
  await expect(page.locator('form.auth-form')).toHaveAttribute('data-ready', 'true', { timeout: 20_000 });
  await page.getByLabel('Name').fill('Queue Fan');
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill('correct-horse-battery');
  await page.getByRole('button', { name: 'Create account' }).click();

  // Sent to the light waiting-room page (no app bundle), with the fairness rule.
  await page.waitForURL(`**/events/${eventId}/queue`);
  await expect(page.getByText('How the queue works')).toBeVisible();
  const position = page.locator('#position');
  // Ticket 4; the first fan is admitted (one shopper at a time): two ahead.
  await expect(position).toHaveText('2', { timeout: 15_000 });
  await page.screenshot({ path: testInfo.outputPath('queue-position-2.png'), fullPage: true });

  expect((await staff.patch(controls, { data: { max_active: 2 } })).ok()).toBeTruthy();
  await expect(position).toHaveText('1', { timeout: 15_000 });
  expect((await staff.patch(controls, { data: { max_active: 3 } })).ok()).toBeTruthy();
  await expect(position).toHaveText('0', { timeout: 15_000 });
  await expect(page.locator('#headline')).toHaveText('You are next.');
  await page.screenshot({ path: testInfo.outputPath('queue-next.png'), fullPage: true });

  // Admitted: straight to the seat map.
  expect((await staff.patch(controls, { data: { max_active: 4 } })).ok()).toBeTruthy();
  await page.waitForURL(`**/events/${eventId}`, { timeout: 15_000 });
  await expect(page.locator('#seat-map')).toBeVisible();
  await expect(page.locator('#picker')).toHaveAttribute('data-ready', 'true', { timeout: 20_000 });
  await page.locator('#s-A-1-5').click();
  await page.locator('#hold-button').click();
  await expect(page.locator('#countdown')).toBeVisible();
  await expect(page.locator('#s-A-1-5')).toHaveClass(/mine/);
  await page.screenshot({ path: testInfo.outputPath('admitted-and-holding.png'), fullPage: true });

  const stats = await (await staff.get(controls)).json();
  expect(stats.admitted_total).toBe(4);
  expect(stats.active_shoppers).toBe(4);
});
