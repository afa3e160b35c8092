// axe-core audits shared by the accessibility specs.

import { writeFile } from 'node:fs/promises';
import AxeBuilder from '@axe-core/playwright';
import type { Page, TestInfo } from '@playwright/test';
import { expect, snap } from './helpers';

interface Finding {
  rule: string;
  impact: string | null | undefined;
  help: string;
  nodes: { target: string; message: string }[];
}

/**
 * Runs axe on the page; attaches the full report; returns the findings of
 * the given impacts (all of them when `impacts` is omitted).
 *
 * Legacy mode runs the whole audit inside the page, and `resultTypes` keeps
 * only one example node of each passing rule: violations are still reported
 * in full. Without these, a 10,000-seat map costs minutes, spent building a
 * unique selector for every seat that passed. (There are no iframes, which
 * is all that legacy mode gives up.)
 */
async function violations(page: Page, testInfo: TestInfo, name: string, impacts?: string[]): Promise<Finding[]> {
  const results = await new AxeBuilder({ page }).setLegacyMode(true).options({ resultTypes: ['violations'] }).analyze();
  const report = testInfo.outputPath(`axe-${name}.json`);
  const incomplete = results.incomplete.map((i) => ({ rule: i.id, impact: i.impact, nodes: i.nodes.map((n) => n.target.map(String).join(' ')) }));
  const summary = { url: page.url(), violations: results.violations, incomplete };
  await writeFile(report, JSON.stringify(summary, null, 2));
  await testInfo.attach(`axe-${name}.json`, { path: report, contentType: 'application/json' });
  return results.violations
    .filter((v) => !impacts || impacts.includes(v.impact ?? ''))
    .map((v) => ({
      rule: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes.map((n) => ({ target: n.target.map(String).join(' '), message: (n.failureSummary ?? '').replace(/\s+/g, ' ') })),
    }));
}

export async function expectNoSeriousViolations(page: Page, testInfo: TestInfo, name: string) {
  await snap(page, testInfo, `axe-${name}`, true);
  const findings = await violations(page, testInfo, name, ['serious', 'critical']);
  expect(findings, `serious or critical axe violations on ${page.url()}:\n${JSON.stringify(findings, null, 2)}`).toEqual([]);
}

/** No axe violation of any impact. */
export async function expectNoViolations(page: Page, testInfo: TestInfo, name: string) {
  await snap(page, testInfo, `axe-${name}`, true);
  const findings = await violations(page, testInfo, name);
  expect(findings, `axe violations on ${page.url()}:\n${JSON.stringify(findings, null, 2)}`).toEqual([]);
}
