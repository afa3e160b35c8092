import { expect, snap, test } from './helpers';

// The demo's catalogue (seeded for instance A): events in Lisbon, London,
// Manchester and Berlin, in six categories, one of them not on sale yet.

/** The names of the events the results list, in order. */
async function listed(page: import('@playwright/test').Page): Promise<string[]> {
  return page.locator('.event-card h2').allTextContents();
}

test('a fan searches the events by words and city, filters by category, dates and sale, and opens one', async ({ newFan }, testInfo) => {
  const { page } = await newFan('search');
  await page.goto('/');
  const search = page.getByRole('search');

  // Free text finds a performer; the result is a link to share.
  await search.getByLabel('Search').fill('ana costa');
  await search.getByRole('button', { name: 'Search' }).click();
  await expect(page).toHaveURL(/\/\?q=ana\+costa/);
  expect(await listed(page)).toEqual(['Jazz by the River']);
  await expect(page.locator('#result-count')).toContainText('1 event');

  // A city, then a category within it.
  await page.goto('/');
  await search.getByLabel('City').selectOption('Manchester');
  await search.getByRole('button', { name: 'Search' }).click();
  const manchester = await listed(page);
  expect(manchester).toEqual(expect.arrayContaining(['Stand-up Saturday', 'City Derby', 'Summer Stadium Festival']));
  expect(manchester).not.toContain('Hamlet');
  await search.getByLabel('Category').selectOption('comedy');
  await search.getByRole('button', { name: 'Search' }).click();
  await expect(page).toHaveURL(/city=Manchester&category=comedy/);
  expect(await listed(page)).toEqual(['Stand-up Saturday']);
  await snap(page, testInfo, 'search-city-category', true);

  // On sale now: Lisbon's jazz night opens later.
  await page.goto('/?city=Lisbon');
  expect(await listed(page)).toEqual(expect.arrayContaining(['Jazz by the River', 'The Midnight Aurora: World Tour']));
  await search.getByLabel('On sale now').check();
  await search.getByRole('button', { name: 'Search' }).click();
  expect(await listed(page)).toEqual(['The Midnight Aurora: World Tour']);

  // A date range: the day Hamlet is on, and no other demo event.
  const found = await (await page.request.get('/api/v1/events?q=hamlet')).json();
  const day = (found.events[0].starts_at as string).slice(0, 10);
  await page.goto('/');
  await search.getByLabel('From').fill(day);
  await search.getByLabel('To').fill(day);
  await search.getByRole('button', { name: 'Search' }).click();
  await expect(page).toHaveURL(new RegExp(`from=${day}&to=${day}`));
  const onThatDay = await listed(page);
  expect(onThatDay).toContain('Hamlet');
  expect(onThatDay).not.toContain('City Derby');
  // The page and the API answer the same search alike.
  const api = await (await page.request.get(`/api/v1/events?from=${day}&to=${day}`)).json();
  expect(onThatDay).toEqual(api.events.map((e: { name: string }) => e.name));

  // Nothing matches: said so, with a way back.
  await page.goto('/?q=no+such+show');
  await expect(page.locator('.events .notice')).toHaveText('No events match this search.');
  await page.getByRole('link', { name: 'Clear the search' }).click();
  await expect(page).toHaveURL('/');

  // The event's page has the details a fan looks for.
  await page.goto('/?q=hamlet');
  await page.getByRole('link', { name: 'Hamlet' }).click();
  const facts = page.locator('#event-facts');
  await expect(facts).toContainText('Old Quay Playhouse, 12 Quay Street, London SE1 9PX, London');
  await expect(facts).toContainText('doors');
  await expect(facts).toContainText('The Quayside Players');
  await expect(facts).toContainText('Suitable for ages 12 and over');
  await expect(facts).toContainText('Front €48.00 · Back €29.00');
  await expect(facts.locator('a.share-link')).toHaveAttribute('href', /^\/events\/[0-9a-f-]{36}$/);
  await snap(page, testInfo, 'event-facts');
});
