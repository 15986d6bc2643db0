/**
 * The semantic layer's and the catalog's pages in headless Chromium against a real dp server on
 * a copy of examples/shop (seeded, transformed, and committed to a git repository with one file
 * changed): the metrics explorer, the docs and guide reader with its search, the overview, and the
 * git status in the header.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { before, describe, it } from 'node:test';
import { gridColumn, onPage, screenshot, shopForTests, withAttribute, UI_SUITE_TIMEOUT_MS } from './browser.js';

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-c', 'user.name=Ada Lovelace', '-c', 'user.email=ada@example.com', '-c', 'init.defaultBranch=main', '-c', 'commit.gpgsign=false', ...args], { cwd, encoding: 'utf8' });

describe('web UI: metrics, docs and guide, overview, git status', { timeout: UI_SUITE_TIMEOUT_MS }, () => {
  const server = shopForTests();
  before(() => {
    git(server.root, 'init', '-q');
    git(server.root, 'add', '-A');
    git(server.root, 'commit', '-q', '-m', 'shop as shipped');
    fs.appendFileSync(path.join(server.root, 'transform', 'marts', 'customer_orders.sql'), '-- edited\n');
  });

  it('explores a metric: dimensions, grain and range, the compiled SQL, the table and a chart', async () => {
    await onPage(server, '/metrics', async (page) => {
      await page.getByLabel('Metric').selectOption('order_count');
      await page.getByRole('checkbox', { name: 'status' }).check();
      await page.getByLabel('Grain').selectOption('quarter');
      await page.getByLabel('Start').fill('2024-01-01');
      await page.getByLabel('End').fill('2025-01-01');
      const sql = page.getByTestId('metric-sql');
      // The page names the bounds the SQL shown was compiled with: once both dates are there, the
      // SQL is the one for the whole form (filled last), not an answer to an earlier edit.
      await page.getByText("$start = '2024-01-01', $end = '2025-01-01'", { exact: false }).waitFor();
      await sql.getByText(/date_trunc\('quarter', order_date\)/).waitFor();
      // The range arrives in a later compile than the grain: wait for the SQL the assertion reads.
      await sql.getByText(/CAST\(\$start AS TIMESTAMP\)/).waitFor();
      assert.match(await sql.innerText(), /status, count\(DISTINCT order_id\) AS order_count FROM staging\.stg_orders WHERE .*CAST\(\$start AS TIMESTAMP\)/s);
      await page.getByRole('button', { name: 'Run' }).click();
      await page.getByTestId('metric-result').waitFor();
      const statuses = await gridColumn(page, 1);
      assert.ok(statuses.length > 0);
      assert.ok(statuses.every((s) => ['completed', 'shipped', 'pending', 'returned'].includes(s)), statuses.join(','));
      // Over time with a dimension: one line per value, with a legend.
      await page.locator('[data-testid="series-chart"] canvas').waitFor();
      const values = [...new Set(statuses)];
      await withAttribute(page.getByTestId('series-chart'), 'data-series', String(values.length)).waitFor();
      for (const v of values) await page.getByLabel('Legend').getByText(v, { exact: true }).waitFor();
      await screenshot(page, 'metrics-explorer');
      // One series over time draws a line.
      await page.getByRole('checkbox', { name: 'status' }).uncheck();
      await page.getByRole('button', { name: 'Run' }).click();
      await page.getByTestId('line-chart').waitFor();
    });
  });

  it('reads the project docs and the guide, and searches the guide', async () => {
    await onPage(server, '/guide', async (page) => {
      const content = page.getByTestId('guide-content');
      await content.getByRole('heading', { name: 'marts.customer_orders' }).waitFor();
      await content.getByRole('heading', { name: 'total_revenue' }).waitFor();
      await content.getByRole('cell', { name: 'staging.stg_customers.email' }).first().waitFor();
      await page.getByRole('link', { name: 'Getting started' }).click();
      await content.getByRole('heading', { name: 'Getting started', level: 2 }).waitFor();
      assert.match(page.url(), /\/guide\/getting-started$/);
      await page.getByLabel('Search the guide').fill('masking policy');
      const results = page.getByTestId('wiki-search-results');
      await results.getByRole('link', { name: /Column masking/ }).click();
      await content.getByRole('heading', { name: 'Column masking', level: 2 }).waitFor();
      await screenshot(page, 'guide-reader');
    });
  });

  it('shows the overview: totals, tables with row counts, recent runs, sources and exposures', async () => {
    await onPage(server, '/overview', async (page) => {
      await page.getByTestId('total-models').getByText('5').waitFor();
      await page.getByTestId('total-metrics').getByText('4').waitFor();
      const row = page.getByRole('row', { name: /seeds\.orders/ });
      await row.getByRole('cell', { name: '120' }).waitFor();
      await page.getByRole('cell', { name: 'landing.events' }).waitFor();
      await page.getByRole('cell', { name: 'revenue_dashboard' }).waitFor();
      await page.getByText('success').first().waitFor();
      await screenshot(page, 'overview');
    });
  });

  it('shows the git branch and the changed file in the header', async () => {
    await onPage(server, '/overview', async (page) => {
      const status = page.getByTestId('git-status');
      await status.getByText('main').waitFor();
      await status.getByText('1 changed').waitFor();
      await page.getByTestId('git-menu').click();
      await page.getByTestId('git-changed-files').getByText('transform/marts/customer_orders.sql').waitFor();
      await page.getByText('shop as shipped').waitFor();
    });
  });
});
