// Runs once the servers are up, before any test: checks that the server
// binary and the site bundle come from the same build. If they do not, the
// server's pages name islands the WebAssembly lacks, nothing hydrates, and
// every browser test would time out with a misleading error.

import { request, type FullConfig } from '@playwright/test';

export default async function globalSetup(config: FullConfig) {
  const baseURL = config.projects[0].use.baseURL as string;
  const api = await request.newContext({ baseURL });
  try {
    const events = await (await api.get('/api/v1/events')).json();
    const list: { event_id: string }[] = Array.isArray(events) ? events : events.events;
    const pages = ['/', '/signin', '/signup'];
    if (list.length > 0) pages.push(`/events/${list[0].event_id}`);
    const islands = new Set<string>();
    for (const path of pages) {
      const html = await (await api.get(path)).text();
      for (const m of html.matchAll(/<leptos-island data-component="([A-Za-z0-9_]+)"/g)) islands.add(m[1]);
    }
    const bundle = await (await api.get('/pkg/frontrow.js')).text();
    const missing = [...islands].filter((name) => !bundle.includes(name));
    if (islands.size === 0 || missing.length > 0) {
      throw new Error(
        `The server binary and the site bundle (target/site/pkg) are out of step: the pages name islands ` +
          `the bundle does not have (${missing.join(', ') || 'none found at all'}). Rebuild both, then run the tests again.`,
      );
    }
  } finally {
    await api.dispose();
  }
}
