// Shared fixtures and helpers for the frontrow browser tests.
//
// Every test makes its own small event through the admin API and its own
// fans with unique emails, so tests never depend on each other's seats.

import {
  expect,
  request,
  test as base,
  type APIRequestContext,
  type Browser,
  type BrowserContext,
  type Locator,
  type Page,
  type Response,
  type TestInfo,
} from '@playwright/test';
import fs from 'node:fs';
import path from 'node:path';

export { expect };

const portA = Number(process.env.FRONTROW_E2E_PORT ?? 3100);
const portB = Number(process.env.FRONTROW_E2E_PORT_B ?? portA + 1);
/** Instance A (seeded; the tests' default base URL). */
export const BASE_A = `http://127.0.0.1:${portA}`;
/** Instance B: another process on the same database. */
export const BASE_B = `http://127.0.0.1:${portB}`;

export const STAFF = { email: 'staff@frontrow.test', password: 'frontrow-demo' };
export const DEMO_EVENT_NAME = 'The Midnight Aurora: World Tour';
export const STADIUM_EVENT_NAME = 'Summer Stadium Festival';
export const PASSWORD = 'correct-horse-battery';

// ------------------------------------------------------------ test hooks

/**
 * Runs before any page script: notes on each element which event types got
 * a listener. The sign-in form is an island with no "ready" marker of its
 * own, so a test knows it is hydrated once its form listens for `submit`
 * (typing into it before then would be lost). Expando properties only: the
 * DOM the app and axe see is unchanged.
 */
const LISTENER_PROBE = `(() => {
  const add = EventTarget.prototype.addEventListener;
  EventTarget.prototype.addEventListener = function (type, listener, options) {
    try {
      if (!this.__e2eListens) {
        Object.defineProperty(this, '__e2eListens', { value: new Set(), enumerable: false });
      }
      this.__e2eListens.add(type);
    } catch (_) {}
    return add.call(this, type, listener, options);
  };
})();`;

/** Errors a page reported: uncaught exceptions and console errors (WASM panics land there). */
export type PageErrors = string[];

function watchErrors(page: Page, errors: PageErrors) {
  page.on('pageerror', (e) => errors.push(`pageerror on ${page.url()}: ${e.message}`));
  page.on('console', (m) => {
    const text = m.text();
    // The server's HTML names an island the WebAssembly bundle lacks: the two builds are out of step.
    if (m.type() === 'warning' && text.includes('Could not find WASM function for the island')) {
      errors.push(`server and site bundle out of step on ${page.url()}: ${text}`);
      return;
    }
    if (m.type() !== 'error') return;
    // The browser logs every non-2xx fetch; the tests provoke 401/402/409/410 on purpose.
    if (text.startsWith('Failed to load resource')) return;
    errors.push(`console.error on ${page.url()}: ${text}`);
  });
}

/** Prepares a browser context made by a test: the listener probe and error capture. */
export async function prepareContext(context: BrowserContext, errors: PageErrors) {
  await context.addInitScript(LISTENER_PROBE);
  for (const p of context.pages()) watchErrors(p, errors);
  context.on('page', (p) => watchErrors(p, errors));
}

// ------------------------------------------------------------ API helpers

export function uniqueEmail(tag: string): string {
  const suffix = Math.random().toString(36).slice(2, 8);
  return `${tag}-${Date.now()}-${suffix}@example.test`;
}

function isoIn(ms: number): string {
  return new Date(Date.now() + ms).toISOString();
}

export interface RefundPolicy {
  cancel_until_hours: number | null;
  keep_percent?: number;
  fee_cents?: number;
}

export interface EventOptions {
  name?: string;
  holdTtlSeconds?: number;
  maxSeatsPerOrder?: number;
  refundPolicy?: RefundPolicy;
  ticketTypes?: { name: string; prices: { tier: string; price_cents: number }[] }[];
  /** When the public sale opens, from now (default: an hour ago). */
  saleOpensInMs?: number;
}

export interface CreatedEvent {
  eventId: string;
  name: string;
}

/** The box office: a staff session of its own, never shared with a fan's browser. */
export class Staff {
  constructor(public readonly api: APIRequestContext) {}

  static async login(baseURL = BASE_A) {
    const api = await request.newContext({ baseURL });
    const res = await api.post('/api/v1/auth/login', { data: STAFF });
    expect(res.status(), await res.text()).toBe(200);
    return new Staff(api);
  }

  /** A small on-sale event: section A, row 1 (8 Front seats at 50.00), row 2 (8 Back seats at 25.00). */
  async createEvent(opts: EventOptions = {}): Promise<CreatedEvent> {
    const name = opts.name ?? `E2E ${Date.now()}-${Math.random().toString(36).slice(2, 6)}`;
    const res = await this.api.post('/api/v1/admin/events', {
      data: {
        name,
        kind: 'concert',
        venue: 'Test Hall',
        starts_at: isoIn(30 * 24 * 3600_000),
        sale_opens_at: isoIn(opts.saleOpensInMs ?? -3600_000),
        hold_ttl_seconds: opts.holdTtlSeconds ?? 300,
        max_seats_per_order: opts.maxSeatsPerOrder ?? 8,
        waiting_room_enabled: false,
        refund_policy: opts.refundPolicy ?? {},
        ticket_types: opts.ticketTypes ?? [],
        tiers: [
          { tier: 'Front', price_cents: 5000 },
          { tier: 'Back', price_cents: 2500 },
        ],
        sections: [
          {
            section: 'A',
            rows: [
              { row: '1', seats: 8, tier: 'Front' },
              { row: '2', seats: 8, tier: 'Back' },
            ],
          },
        ],
      },
    });
    expect(res.status(), await res.text()).toBe(201);
    const body = await res.json();
    expect(body.seats_total).toBe(16);
    return { eventId: body.event_id, name };
  }

  /** Changes an event as the settings form would (PATCH). */
  async changeEvent(eventId: string, changes: Record<string, unknown>) {
    const res = await this.api.patch(`/api/v1/admin/events/${eventId}`, { data: changes });
    expect(res.status(), await res.text()).toBe(200);
  }

  async dispose() {
    await this.api.dispose();
  }
}

interface SeatState {
  seat_id: string;
  status: 'available' | 'held' | 'sold';
}

/** Seat statuses as the API reports them (anonymous GET). */
export async function seatStatuses(api: APIRequestContext, eventId: string): Promise<Record<string, string>> {
  const res = await api.get(`/api/v1/events/${eventId}/seats`);
  expect(res.status()).toBe(200);
  const body = await res.json();
  return Object.fromEntries((body.seats as SeatState[]).map((s) => [s.seat_id, s.status]));
}

export interface Fan {
  email: string;
  name: string;
  context: BrowserContext;
  page: Page;
}

/** Signs a fan up through the JSON API inside the browser context, so the page shares the session cookie. */
export async function signUpByApi(context: BrowserContext, tag: string, baseURL = BASE_A): Promise<{ email: string; name: string }> {
  const email = uniqueEmail(tag);
  const name = `Fan ${tag}`;
  const res = await context.request.post(`${baseURL}/api/v1/auth/signup`, { data: { email, password: PASSWORD, name } });
  expect(res.status(), await res.text()).toBe(201);
  return { email, name };
}

async function seededEventId(api: APIRequestContext, name: string): Promise<string> {
  // The catalogue comes in pages: ask for this event by name.
  const res = await api.get(`${BASE_A}/api/v1/events?q=${encodeURIComponent(name)}`);
  expect(res.status()).toBe(200);
  const body = await res.json();
  const list: { event_id: string; name: string }[] = Array.isArray(body) ? body : body.events;
  const found = list.find((e) => e.name === name);
  expect(found, `the seeded event ${name} is listed`).toBeTruthy();
  return found!.event_id;
}

/** The seeded demo event (10,000 seats). */
export async function demoEventId(api: APIRequestContext): Promise<string> {
  return seededEventId(api, DEMO_EVENT_NAME);
}

/** The seeded stadium (70,000 seats around a 10,000-place standing floor). */
export async function stadiumEventId(api: APIRequestContext): Promise<string> {
  return seededEventId(api, STADIUM_EVENT_NAME);
}

/** A confirmed booking for the fan signed in to `api`, made through the JSON API. */
export async function bookByApi(api: APIRequestContext, eventId: string, seatIds: string[]): Promise<string> {
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

// ------------------------------------------------------------ page helpers

/** The seat picker's hold call: the app's `hold_seats` server function. */
export function isHoldCall(r: Response): boolean {
  return r.url().endsWith('/_app/hold') && r.request().method() === 'POST';
}

export function seat(page: Page, seatId: string): Locator {
  return page.locator(`#s-${seatId}`);
}

/** Opens an event page and waits until the picker is hydrated and, unless told not to, the live feed connected. */
export async function openEvent(page: Page, eventId: string, opts: { baseURL?: string; live?: boolean } = {}) {
  const res = await page.goto(`${opts.baseURL ?? ''}/events/${eventId}`);
  expect(res?.status()).toBe(200);
  await waitForPicker(page, opts.live ?? true);
}

export async function waitForPicker(page: Page, live = true) {
  await expect(page.locator('#picker')).toHaveAttribute('data-ready', 'true', { timeout: 20_000 });
  if (live) {
    await expect(page.locator('.live-status')).toHaveAttribute('data-live', 'live', { timeout: 15_000 });
  }
}

/** Waits until the sign-in/sign-up island form is hydrated (typing into it earlier would be lost). */
export async function waitForAuthForm(page: Page) {
  await page.waitForFunction(
    () => {
      const form = document.querySelector('form.auth-form') as (HTMLFormElement & { __e2eListens?: Set<string> }) | null;
      // Newer builds mark the form data-ready="true" once hydrated; any build's form listens for submit then.
      return !!form && (form.dataset.ready === 'true' || !!form.__e2eListens?.has('submit'));
    },
    undefined,
    { timeout: 20_000 },
  );
}

/** Signs the demo staff member in through the sign-in page, then opens `next`. */
export async function signInAsStaff(page: Page, next: string) {
  await page.goto(`/signin?next=${next}`);
  await waitForAuthForm(page);
  await page.getByLabel('Email').fill(STAFF.email);
  await page.getByLabel('Password').fill(STAFF.password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page).toHaveURL(next);
}

/** Waits until an island button has its click handler (it is hydrated). */
export async function waitForClickHandler(locator: Locator) {
  await expect
    .poll(
      () => locator.evaluate((el) => !!(el as Element & { __e2eListens?: Set<string> }).__e2eListens?.has('click')),
      { timeout: 20_000 },
    )
    .toBe(true);
}

/** Marks the current document; `expectSameDocument` later proves no reload or navigation happened. */
export async function markDocument(page: Page): Promise<string> {
  const mark = `m-${Math.random().toString(36).slice(2)}`;
  await page.evaluate((m) => ((window as unknown as { __e2eMark: string }).__e2eMark = m), mark);
  return mark;
}

export async function expectSameDocument(page: Page, mark: string) {
  const now = await page.evaluate(() => (window as unknown as { __e2eMark?: string }).__e2eMark ?? null);
  expect(now, 'the page must not have reloaded or navigated').toBe(mark);
}

export async function selectSeats(page: Page, seatIds: string[]) {
  for (const id of seatIds) {
    await seat(page, id).click();
    await expect(seat(page, id)).toHaveClass(/\bsel\b/);
    await expect(seat(page, id)).toHaveAttribute('aria-pressed', 'true');
  }
  await expect(page.locator('.selection li')).toHaveCount(seatIds.length);
}

/** Selects the seats, holds them, and waits for the countdown. */
export async function holdSeats(page: Page, seatIds: string[]) {
  await selectSeats(page, seatIds);
  const button = page.locator('#hold-button');
  await expect(button).toHaveText(seatIds.length === 1 ? 'Hold 1 seat' : `Hold ${seatIds.length} seats`);
  await button.click();
  await expect(page.locator('#countdown')).toBeVisible();
  await expect(page.locator('.held-seats li')).toHaveCount(seatIds.length);
  for (const id of seatIds) {
    await expect(seat(page, id)).toHaveClass(/\bmine\b/);
  }
}

/** "A-1-3" → "Section A, row 1, seat 3" (the app's seat label). */
export function seatLabel(seatId: string): string {
  const [section, row, number] = seatId.split('-');
  return `Section ${section}, row ${row}, seat ${number}`;
}

/** Presses Tab until `target` has the keyboard focus (at most `limit` times). */
export async function tabTo(page: Page, target: Locator, limit = 200) {
  for (let i = 0; i < limit; i++) {
    if (await target.evaluate((el) => el === document.activeElement).catch(() => false)) return;
    await page.keyboard.press('Tab');
  }
  throw new Error(`Tab never reached ${target}`);
}

export async function snap(page: Page, testInfo: TestInfo, name: string, fullPage = false) {
  await page.screenshot({ path: testInfo.outputPath(`${name}.png`), fullPage });
}

// ------------------------------------------------------------ fixtures

export interface Fixtures {
  /** Errors seen on any page of the test; checked empty at the end of every test. */
  pageErrors: PageErrors;
  staff: Staff;
  /** A new browser context with a signed-up fan in it (through the API). */
  newFan: (tag: string, opts?: { baseURL?: string }) => Promise<Fan>;
}

export const test = base.extend<Fixtures>({
  pageErrors: async ({}, use) => {
    const errors: PageErrors = [];
    await use(errors);
    expect(errors, 'errors reported by the pages').toEqual([]);
  },
  context: async ({ context, pageErrors }, use) => {
    await prepareContext(context, pageErrors);
    await use(context);
  },
  staff: async ({}, use) => {
    const staff = await Staff.login();
    await use(staff);
    await staff.dispose();
  },
  newFan: async ({ browser, pageErrors }, use) => {
    const made: BrowserContext[] = [];
    await use(async (tag, opts = {}) => {
      const baseURL = opts.baseURL ?? BASE_A;
      const context = await (browser as Browser).newContext({ baseURL });
      made.push(context);
      await prepareContext(context, pageErrors);
      const who = await signUpByApi(context, tag, baseURL);
      const page = await context.newPage();
      return { ...who, context, page };
    });
    for (const c of made) await c.close();
  },
});

/** The file outbox the servers under test write their mail to (playwright.config.ts). */
const OUTBOX = path.join(__dirname, '..', '..', 'target', 'e2e-data', 'outbox.jsonl');

export interface SentMail {
  to: string;
  subject: string;
  body: string;
  attachments?: { filename: string; content_type: string; content: string }[];
}

/** The mail sent to `to` so far, waiting up to 10 s for at least `atLeast` of them. */
export async function mailsTo(to: string, atLeast = 1): Promise<SentMail[]> {
  let found: SentMail[] = [];
  await expect
    .poll(
      () => {
        const text = fs.existsSync(OUTBOX) ? fs.readFileSync(OUTBOX, 'utf8') : '';
        found = text
          .split('\n')
          .filter((line) => line.trim())
          .map((line) => JSON.parse(line) as SentMail)
          .filter((mail) => mail.to === to);
        return found.length;
      },
      { timeout: 10_000, message: `mail to ${to}` },
    )
    .toBeGreaterThanOrEqual(atLeast);
  return found;
}

/** A mail's attachment, decoded. */
export function attachment(mail: SentMail, filename: string): Buffer {
  const file = mail.attachments?.find((a) => a.filename === filename);
  expect(file, `${filename} is attached`).toBeTruthy();
  return Buffer.from(file!.content, 'base64');
}

/** The pages of a PDF (its page objects). */
export function pdfPages(pdf: Buffer): number {
  const text = pdf.toString('latin1');
  return (text.match(/\/Type \/Page\b(?!s)/g) ?? []).length;
}
