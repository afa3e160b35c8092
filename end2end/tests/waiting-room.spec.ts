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

test('a fan with a presale code waits in the presale queue, is drawn at its opening, admitted, and holds', async ({ page }, testInfo) => {
  test.setTimeout(120_000);
  const staff = await signedIn('staff@frontrow.test', false);
  const created = await staff.post('/api/v1/admin/events', {
    data: {
      name: `Presale Queue Night ${Date.now()}`, kind: 'concert', venue: 'Queue Hall',
      starts_at: new Date(Date.now() + 30 * 86400e3).toISOString(),
      sale_opens_at: new Date(Date.now() + 86400e3).toISOString(),
      hold_ttl_seconds: 300, max_seats_per_order: 4, waiting_room_enabled: true,
      tiers: [{ tier: 'Floor', price_cents: 4000 }],
      sections: [{ section: 'A', rows: [{ row: '1', seats: 10, tier: 'Floor' }] }],
    },
  });
  expect(created.status()).toBe(201);
  const eventId = (await created.json()).event_id as string;
  // The presale opens in 25 seconds: long enough to queue before it.
  const opensAt = Date.now() + 25_000;
  const codes = await staff.post(`/api/v1/admin/events/${eventId}/access-codes`, {
    data: {
      label: 'Fan club', code: 'CLUB-E2E-QUEUE', max_uses: 4, limit_unit: 'tickets',
      starts_at: new Date(opensAt).toISOString(), ends_at: new Date(Date.now() + 3600e3).toISOString(),
    },
  });
  expect(codes.status(), await codes.text()).toBe(201);

  const email = unique('presale-queue');
  await page.goto(`/signup?next=/events/${eventId}`);
  await expect(page.locator('form.auth-form')).toHaveAttribute('data-ready', 'true', { timeout: 20_000 });
  await page.getByLabel('Name').fill('Presale Fan');
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill('correct-horse-battery');
  await page.getByRole('button', { name: 'Create account' }).click();

  // Before the public sale the waiting room asks for a presale code.
  await page.waitForURL(`**/events/${eventId}/queue`);
  const codeForm = page.locator('#presale-code');
  await expect(codeForm).toBeVisible();
  await codeForm.getByLabel('Presale code').fill('NOT-A-CODE');
  await codeForm.getByRole('button', { name: 'Use code' }).click();
  await expect(page.locator('#presale-error')).toHaveText('this code does not open a presale of this event now');
  await codeForm.getByLabel('Presale code').fill('club e2e queue');
  await codeForm.getByRole('button', { name: 'Use code' }).click();

  // In the presale's pre-queue until its opening draw.
  await expect(page.locator('#phase')).toHaveText('Presale queue');
  await expect(page.locator('#headline')).toContainText('The presale has not opened yet');
  await page.screenshot({ path: testInfo.outputPath('presale-pre-queue.png'), fullPage: true });

  // At the opening: drawn, admitted (the only fan), on to the seats.
  await page.waitForURL(`**/events/${eventId}`, { timeout: 60_000 });
  expect(Date.now()).toBeGreaterThanOrEqual(opensAt - 1_000);
  await expect(page.locator('#presale-pass')).toContainText('Presale for Fan club');
  await expect(page.locator('#picker')).toHaveAttribute('data-ready', 'true', { timeout: 20_000 });
  await page.locator('#s-A-1-3').click();
  await page.locator('#hold-button').click();
  await expect(page.locator('#countdown')).toBeVisible();
  await expect(page.locator('#s-A-1-3')).toHaveClass(/mine/);
  await page.screenshot({ path: testInfo.outputPath('presale-admitted-and-holding.png'), fullPage: true });

  const stats = await (await staff.get(`/api/v1/admin/events/${eventId}/waiting-room`)).json();
  expect(stats.presale.admitted_total).toBe(1);
  expect(stats.presale.drawn_at).toBeTruthy();
  // The public sale's queue is apart: not drawn, nobody admitted.
  expect(stats.admitted_total).toBe(0);
  expect(stats.drawn_at).toBeNull();
});
