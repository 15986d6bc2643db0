/**
 * Masked columns marked in the web UI from what the server says, in headless Chromium against
 * a dp server with authentication on examples/shop with a policy on seeds.customers.email: the SQL grid marks
 * the columns of the response's `masked_columns` (an alias and a column masked through lineage,
 * which no client-side guess from policy names finds) for a viewer and none for the exempt admin;
 * an SQL error is marked at the server's `details.line`; the models page's lineage graph marks
 * masked columns (explicit and derived) with a tooltip saying how.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { closeBrowser, gridColumn, login, openPage, runSql, screenshot, startShop, type DpServer, UI_SUITE_TIMEOUT_MS } from './browser.js';

describe('masked columns marked in the web UI (shop)', { timeout: UI_SUITE_TIMEOUT_MS }, () => {
  let server: DpServer;
  before(async () => {
    server = await startShop({ auth: true });
    const api = async (urlPath: string, body: unknown, token?: string) => {
      const res = await fetch(server.url + urlPath, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
        body: JSON.stringify(body),
      });
      const json = (await res.json()) as { token?: string };
      assert.ok(res.status < 300, `${urlPath}: ${res.status} ${JSON.stringify(json)}`);
      return json;
    };
    const { token } = await api('/api/auth/setup', { username: 'ada', password: 'lovelace1', role: 'admin' });
    await api('/api/users', { username: 'vic', password: 'viewer12', role: 'viewer' }, token);
    await api('/api/masking/policies', { schema_name: 'seeds', table_name: 'customers', column_name: 'email', method: 'email' }, token);
  });
  after(async () => {
    await closeBrowser();
    await server?.close();
  });

  /** Names and tooltips of the grid's masked column headers. */
  const maskedHeaders = (page: Page) =>
    page.locator('[data-testid="results-grid"] [role="columnheader"][data-masked="true"]').evaluateAll((hs) => hs.map((h) => ({ name: (h.querySelector('.dp-grid-name') as HTMLElement).innerText.trim(), title: h.getAttribute('title') ?? '' })));

  it('the SQL grid marks the columns the server masked: an alias and a column masked through lineage', async () => {
    const v = await openPage(server, '/sql');
    try {
      await login(v.page, 'vic', 'viewer12');
      await runSql(v.page, 'SELECT customer_id, email AS contact, upper(first_name) AS shout\nFROM seeds.customers ORDER BY customer_id LIMIT 3');
      await v.page.getByTestId('result-status').getByText('Rows 1–3').waitFor();
      assert.deepEqual(await gridColumn(v.page, 1), ['***@example.com', '***@example.com', '***@example.org']);
      const aliased = await maskedHeaders(v.page);
      assert.deepEqual(
        aliased.map((h) => h.name),
        ['contact'],
      );
      assert.match(aliased[0]!.title, /masked with 'email'.*seeds\.customers\.email/);
      await v.page.getByTestId('result-status').getByText('masked: contact').waitFor();
      await screenshot(v.page, 'sql-masked-alias');

      // staging.stg_customers is a view: its email is lower(seeds.customers.email), masked through a derived policy.
      await runSql(v.page, 'SELECT customer_id, country, email FROM staging.stg_customers ORDER BY customer_id LIMIT 2');
      await v.page.getByTestId('result-status').getByText('Rows 1–2').waitFor();
      const derived = await maskedHeaders(v.page);
      assert.deepEqual(
        derived.map((h) => h.name),
        ['email'],
      );
      assert.match(derived[0]!.title, /derived through lineage from seeds\.customers\.email/);
    } finally {
      await v.close();
    }
  });

  it("the explorer's sample marks what the server masked, here through lineage in a mart", async () => {
    const v = await openPage(server, '/explorer/marts/customer_orders');
    try {
      await login(v.page, 'vic', 'viewer12');
      await v.page.getByRole('tab', { name: 'Sample rows' }).click();
      await v.page.getByTestId('results-grid').getByText('Ada Lovelace').waitFor();
      const headers = await maskedHeaders(v.page);
      assert.deepEqual(
        headers.map((h) => h.name),
        ['email'],
      );
      assert.match(headers[0]!.title, /derived through lineage from seeds\.customers\.email/);
    } finally {
      await v.close();
    }
  });

  it('marks nothing for the exempt admin', async () => {
    const a = await openPage(server, '/sql');
    try {
      await login(a.page, 'ada', 'lovelace1');
      await runSql(a.page, 'SELECT customer_id, email AS contact FROM seeds.customers ORDER BY customer_id LIMIT 3');
      await a.page.getByTestId('result-status').getByText('Rows 1–3').waitFor();
      assert.equal((await gridColumn(a.page, 1))[0], 'ada@example.com');
      assert.deepEqual(await maskedHeaders(a.page), []);
    } finally {
      await a.close();
    }
  });

  it("marks an SQL error at the server's line, not where the message's quoted name first appears", async () => {
    const v = await openPage(server, '/sql');
    try {
      await login(v.page, 'vic', 'viewer12');
      // The quoted name also appears on line 1 (in a string): only details.line points at line 2.
      await runSql(v.page, "SELECT 'nope_col' AS label,\n  nope_col\nFROM seeds.customers");
      await v.page.getByRole('alert').waitFor();
      const marked = v.page.locator('.cm-dp-error-line');
      await marked.waitFor();
      assert.equal(await marked.count(), 1);
      assert.equal((await marked.innerText()).trim(), 'nope_col');
    } finally {
      await v.close();
    }
  });

  it("the lineage graph marks masked columns (the policy's column and one derived from it) with how they are masked", async () => {
    const v = await openPage(server, '/models/m/staging.stg_customers');
    try {
      await login(v.page, 'vic', 'viewer12');
      const graph = v.page.getByTestId('lineage-graph');
      const derived = graph.locator('[data-node-id="staging.stg_customers.email"]');
      await derived.waitFor();
      await graph.locator('[data-node-id="staging.stg_customers.email"][data-masked="true"]').waitFor();
      assert.match((await derived.getAttribute('title')) ?? '', /masked for your role \(viewer\) with 'redact', computed from seeds\.customers\.email \(derived through lineage\)/);
      const source = graph.locator('[data-node-id="seeds.customers.email"]');
      assert.equal(await source.getAttribute('data-masked'), 'true');
      assert.match((await source.getAttribute('title')) ?? '', /with 'email', by a policy on this column/);
      assert.equal(await graph.locator('[data-node-id="staging.stg_customers.country"]').getAttribute('data-masked'), null);
      await screenshot(v.page, 'lineage-masked');
    } finally {
      await v.close();
    }
    // The exempt admin sees the same marks, saying they read raw values.
    const a = await openPage(server, '/models/m/staging.stg_customers');
    try {
      await login(a.page, 'ada', 'lovelace1');
      const node = a.page.getByTestId('lineage-graph').locator('[data-node-id="staging.stg_customers.email"][data-masked="true"]');
      await node.waitFor();
      assert.match((await node.getAttribute('title')) ?? '', /masked for other roles; admin reads raw values/);
    } finally {
      await a.close();
    }
  });
});
