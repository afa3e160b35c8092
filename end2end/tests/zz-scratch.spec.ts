import AxeBuilder from '@axe-core/playwright';
import { BASE_A, openEvent, test } from './helpers';

test('axe timing on the demo map', async ({ newFan }) => {
  test.setTimeout(600_000);
  const { page } = await newFan('scratch');
  const list = await (await page.request.get(`${BASE_A}/api/v1/events`)).json();
  const events = Array.isArray(list) ? list : list.events;
  const demo = events.find((e: any) => e.name.startsWith('The Midnight'));
  await openEvent(page, demo.event_id);
  const lines: string[] = [];
  page.on('console', (m) => { if (/ms|Measure|rule/i.test(m.text())) lines.push(m.text()); });
  const t0 = Date.now();
  await new AxeBuilder({ page }).options({ performanceTimer: true } as any).analyze();
  console.log('total ms', Date.now() - t0);
  console.log(lines.filter((l) => /\d{3,}\.\d*ms|\d{4,}/.test(l)).slice(0, 60).join('\n'));
});
