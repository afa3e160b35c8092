import { expect, test } from '@playwright/test';

test('the server-rendered shell hydrates and calls the server', async ({ page }) => {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(e.message));

  const response = await page.goto('/');
  expect(response?.status()).toBe(200);
  // Rendered on the server: the demo event is in the HTML before any script runs.
  const html = await response!.text();
  expect(html).toContain('The Midnight Aurora: World Tour');

  // Hydrated: the WebAssembly took over and the page turned interactive.
  await expect(page.locator('#app-state')).toHaveAttribute('data-interactive', 'true');
  await expect(page.locator('#app-state')).toHaveText('live');

  // A button click runs a server function from the browser.
  const reload = page.waitForResponse((r) => r.url().includes('/_app/') && r.status() === 200);
  await page.getByRole('button', { name: 'Refresh' }).click();
  await reload;
  await expect(page.locator('.event-card').first()).toContainText('Harbour Arena');
  await page.screenshot({ path: 'test-results/shell.png', fullPage: true });
  expect(errors).toEqual([]);
});
