/**
 * The web UI for a working day. The SQL workspace, in headless Chromium against a real dp server on a copy
 * of examples/shop: the first query works, the catalog inserts names, columns complete bare and
 * qualified, the grid sorts, filters, selects and copies, tabs survive a reload, queries are
 * saved in the project, a running query shows its time and can be cancelled, results chart
 * (line, bar, area, series from a column) and summarize. The DAG as an operations view: fitted
 * with a minimap, nodes coloured by last build and freshness, dbt selection and "build selected".
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { gridColumn, onPage, runSql, screenshot, shopForTests, withAttribute, UI_SUITE_TIMEOUT_MS } from './browser.js';

/** Replaces the editor's text without running it, leaving the cursor at the end. */
async function typeSql(page: Page, sql: string): Promise<void> {
  await page.locator('.dp-sql .cm-content').click();
  await page.keyboard.press('Control+A');
  await page.keyboard.press('Delete');
  await page.keyboard.insertText(sql);
}

async function editorText(page: Page): Promise<string> {
  return page.locator('.dp-sql .cm-content').innerText();
}

/** The `data-node-id`s of the DAG's nodes drawn inside a selection. */
async function highlighted(page: Page): Promise<string[]> {
  return (await page.locator('[data-testid="graph"] [data-highlighted="true"]').evaluateAll((els) => els.map((e) => e.getAttribute('data-node-id') ?? ''))).sort();
}

describe('SQL workspace and DAG (shop)', { timeout: UI_SUITE_TIMEOUT_MS }, () => {
  const server = shopForTests();

  it('starts with a draft that reads a table the project has, and it runs', async () => {
    await onPage(server, '/sql', async (page) => {
      await page.locator('.dp-sql .cm-content', { hasText: 'FROM marts.customer_orders' }).waitFor();
      await page.getByTestId('run-query').click();
      await page.getByTestId('result-status').getByText(/Rows 1–\d+/).waitFor();
      assert.equal(await page.getByRole('alert').count(), 0);
    });
  });

  it('lists schemas, tables and typed columns in the catalog; a click inserts the name', async () => {
    await onPage(server, '/sql', async (page) => {
      await typeSql(page, 'SELECT  FROM ');
      const catalog = page.getByLabel('Catalog', { exact: true });
      await catalog.getByRole('button', { name: 'Show columns of marts.customer_orders' }).click();
      const columns = catalog.getByRole('list', { name: 'Columns of marts.customer_orders' });
      // The columns load after the click: wait for them, then read them.
      await columns.getByText('lifetime_value').first().waitFor();
      assert.match(await columns.innerText(), /lifetime_value\s+(DECIMAL|DOUBLE|HUGEINT|BIGINT)/);
      // The cursor is at the end: the table goes there; then the column after SELECT.
      await catalog.getByRole('button', { name: 'customer_orders', exact: true }).click();
      assert.equal(await editorText(page), 'SELECT  FROM marts.customer_orders');
      await page.keyboard.press('Control+Home');
      for (let i = 0; i < 'SELECT '.length; i++) await page.keyboard.press('ArrowRight');
      await columns.getByRole('button', { name: 'lifetime_value' }).click();
      assert.equal(await editorText(page), 'SELECT lifetime_value FROM marts.customer_orders');
      // Finding a column name opens its table.
      await catalog.getByLabel('Find in catalog').fill('payment_method');
      await catalog.getByRole('list', { name: 'Columns of marts.revenue_by_month' }).getByRole('button', { name: 'payment_method' }).waitFor();
      assert.equal(await catalog.getByRole('button', { name: 'customer_orders', exact: true }).count(), 0);
    });
  });

  it('completes a bare column of the tables in FROM, and a column after an alias', async () => {
    await onPage(server, '/sql', async (page) => {
      await typeSql(page, 'SELECT  FROM marts.customer_orders');
      await page.keyboard.press('Control+Home');
      for (let i = 0; i < 'SELECT '.length; i++) await page.keyboard.press('ArrowRight');
      await page.keyboard.type('lifet');
      const bare = page.locator('.cm-tooltip-autocomplete li', { hasText: 'lifetime_value' });
      await bare.waitFor();
      assert.match(await bare.innerText(), /marts\.customer_orders/);
      await page.keyboard.press('Escape');

      await typeSql(page, 'SELECT  FROM staging.stg_customers AS c');
      await page.keyboard.press('Control+Home');
      for (let i = 0; i < 'SELECT '.length; i++) await page.keyboard.press('ArrowRight');
      await page.keyboard.type('c.ful');
      await page.locator('.cm-tooltip-autocomplete li', { hasText: 'full_name' }).waitFor();
    });
  });

  it('sorts, filters, selects and copies cells and rows of a result', async () => {
    await onPage(server, '/sql', async (page, opened) => {
      await opened.context.grantPermissions(['clipboard-read', 'clipboard-write']);
      await runSql(page, 'SELECT customer_id, full_name FROM staging.stg_customers ORDER BY customer_id LIMIT 10');
      await page.getByTestId('result-status').getByText('Rows 1–10').waitFor();
      const grid = page.getByTestId('results-grid');
      // Sort: ascending, then descending on a second click.
      await grid.getByRole('button', { name: 'customer_id' }).click();
      await grid.getByRole('button', { name: 'customer_id' }).click();
      await page.getByTestId('grid-shown').getByText('sorted by customer_id (descending)').waitFor();
      assert.deepEqual((await gridColumn(page, 0)).slice(0, 3), ['10', '9', '8']);
      // Filter: a number comparison and text.
      await grid.getByLabel('Filter customer_id').fill('<=3');
      await page.getByTestId('grid-shown').getByText('3 of 10 rows match').waitFor();
      assert.deepEqual(await gridColumn(page, 0), ['3', '2', '1']);
      await grid.getByLabel('Filter full_name').fill('ada');
      await page.getByTestId('grid-shown').getByText('1 of 10 rows match').waitFor();
      assert.deepEqual(await gridColumn(page, 1), ['Ada Lovelace']);
      await page.getByRole('button', { name: 'Clear filters' }).click();
      await page.getByTestId('grid-shown').getByText('10 rows').waitFor();
      // Select a rectangle of cells and copy it with Ctrl+C.
      const cells = grid.locator('[role="row"]:not(.dp-grid-head) [role="gridcell"]');
      await cells.nth(0).click();
      await cells.nth(3).click({ modifiers: ['Shift'] });
      await page.getByText('4 cells selected').waitFor();
      await page.keyboard.press('Control+C');
      await page.getByText('Copied 4 cells').waitFor();
      const copiedCells = (await page.evaluate(() => navigator.clipboard.readText())).split('\n').map((l) => l.split('\t'));
      assert.deepEqual(copiedCells.map((r) => r[0]), ['10', '9']);
      assert.equal(copiedCells[0].length, 2);
      // Whole rows (row numbers) copy with the header.
      const rowHeaders = grid.locator('[role="rowheader"]');
      await rowHeaders.nth(0).click();
      await rowHeaders.nth(2).click({ modifiers: ['Shift'] });
      await page.getByText('3 rows selected').waitFor();
      await page.getByRole('button', { name: 'Copy', exact: true }).click();
      await page.getByText('Copied 3 rows').waitFor();
      const copiedRows = (await page.evaluate(() => navigator.clipboard.readText())).split('\n');
      assert.equal(copiedRows[0], 'customer_id\tfull_name');
      assert.deepEqual(copiedRows.slice(1).map((l) => l.split('\t')[0]), ['10', '9', '8']);
      await screenshot(page, 'sql-grid-tools');
    });
  });

  it('keeps several query tabs across a reload', async () => {
    await onPage(server, '/sql', async (page) => {
      await typeSql(page, 'SELECT 1 AS first_tab');
      await page.getByRole('button', { name: 'New query tab' }).click();
      await page.getByRole('tab', { name: 'Query 2' }).waitFor();
      await typeSql(page, 'SELECT 2 AS second_tab');
      await page.reload();
      await page.getByRole('tab', { name: 'Query 2', selected: true }).waitFor();
      await page.locator('.dp-sql .cm-content', { hasText: 'SELECT 2 AS second_tab' }).waitFor();
      await page.getByRole('tab', { name: 'Query 1' }).click();
      await page.locator('.dp-sql .cm-content', { hasText: 'SELECT 1 AS first_tab' }).waitFor();
      // Each tab keeps its own result.
      await page.getByTestId('run-query').click();
      await page.getByTestId('results-grid').getByRole('button', { name: 'first_tab' }).waitFor();
      await page.getByRole('tab', { name: 'Query 2' }).click();
      // Each waits for the state the click leads to (the render follows the click).
      await page.getByTestId('results-grid').waitFor({ state: 'detached' });
      await page.getByRole('button', { name: 'Close Query 2' }).click();
      await page.getByRole('tab', { name: 'Query 2' }).waitFor({ state: 'detached' });
    });
  });

  it('saves a query in the project under queries/ and opens it again', async () => {
    await onPage(server, '/sql', async (page) => {
      await typeSql(page, 'SELECT country, count(*) AS customers FROM staging.stg_customers GROUP BY country');
      await page.getByRole('button', { name: 'Save…' }).click();
      await page.getByLabel('Query name').fill('customers_by_country');
      await page.getByRole('dialog').getByRole('button', { name: 'Save', exact: true }).click();
      await page.getByRole('tab', { name: 'customers_by_country' }).waitFor();
      const file = path.join(server.root, 'queries', 'customers_by_country.sql');
      assert.equal(fs.readFileSync(file, 'utf8'), 'SELECT country, count(*) AS customers FROM staging.stg_customers GROUP BY country\n');
      // The saved query's tab now edits the file's shared document: an edit marks it unsaved; Ctrl+S saves it through the socket.
      const shared = page.getByTestId('collab-editor');
      await shared.getByText('live', { exact: true }).waitFor();
      await page.locator('.dp-sql .cm-content').click();
      await page.keyboard.press('Control+End');
      await page.keyboard.press('Backspace');
      await page.keyboard.insertText(' ORDER BY 2 DESC\n');
      await shared.getByText('unsaved', { exact: true }).waitFor();
      await page.keyboard.press('Control+S');
      await shared.getByText(/^saved /).waitFor();
      assert.match(fs.readFileSync(file, 'utf8'), /ORDER BY 2 DESC\n$/);
      // Closed and opened again from the list.
      await page.getByRole('button', { name: 'Close customers_by_country' }).click();
      await page.getByRole('button', { name: 'Saved queries' }).click();
      await page.getByLabel('Saved queries').getByRole('button', { name: 'customers_by_country' }).click();
      await page.getByRole('tab', { name: 'customers_by_country', selected: true }).waitFor();
      await page.locator('.dp-sql .cm-content', { hasText: 'ORDER BY 2 DESC' }).waitFor();
    });
  });

  it('shows the elapsed time of a running query and cancels it; the next query runs', async () => {
    await onPage(server, '/sql', async (page) => {
      await runSql(page, 'SELECT sum(a.range * b.range) FROM range(300000) a CROSS JOIN range(300000) b');
      const elapsed = page.getByTestId('elapsed');
      await elapsed.waitFor();
      // The clock moves while the query runs (redrawn by the page, not by the test).
      await page.waitForFunction(() => /\d+(\.\d)? s$/.test(document.querySelector('[data-testid="elapsed"]')?.textContent ?? ''));
      await page.getByRole('button', { name: 'Cancel' }).click();
      await page.getByTestId('query-cancelled').getByText(/Cancelled after \d/).waitFor();
      assert.equal(await page.getByTestId('query-running').count(), 0);
      await runSql(page, 'SELECT 42 AS answer');
      await page.getByTestId('result-status').getByText('Rows 1–1').waitFor();
      assert.deepEqual(await gridColumn(page, 0), ['42']);
    });
  });

  it('charts a result as line, bar or area with one series per value of a second column, and summarizes its columns', async () => {
    await onPage(server, '/sql', async (page) => {
      await runSql(page, 'SELECT month, payment_method, revenue FROM marts.revenue_by_month ORDER BY month');
      await page.getByTestId('result-status').getByText(/Rows 1–/).waitFor();
      await page.getByRole('tab', { name: 'Chart' }).click();
      const chart = page.getByTestId('series-chart');
      await chart.locator('canvas').waitFor();
      // A time x axis starts as a line, one series.
      await withAttribute(withAttribute(chart, 'data-kind', 'line'), 'data-series', '1').waitFor();
      await page.getByLabel('Series by').selectOption({ label: 'payment_method' });
      const methods = (await page.evaluate(async () => {
        const r = await fetch('/api/query', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ sql: 'SELECT DISTINCT payment_method FROM marts.revenue_by_month ORDER BY 1' }) });
        return ((await r.json()) as { rows: string[][] }).rows.map((x) => x[0]);
      })) as string[];
      assert.ok(methods.length >= 2, methods.join());
      await page.waitForFunction((n) => document.querySelector('[data-testid="series-chart"]')?.getAttribute('data-series') === String(n), methods.length);
      const legend = page.getByLabel('Legend');
      for (const m of methods) await legend.getByText(m, { exact: true }).waitFor();
      await page.getByRole('radio', { name: 'Bar' }).click();
      await page.locator('[data-testid="series-chart"][data-kind="bar"] canvas').waitFor();
      await page.getByRole('radio', { name: 'Area' }).click();
      await page.locator('[data-testid="series-chart"][data-kind="area"] canvas').waitFor();
      await screenshot(page, 'sql-chart');

      await runSql(page, "SELECT * FROM (VALUES (1, 'a'), (2, NULL), (3, 'a'), (NULL, 'b')) t(n, s)");
      await page.getByTestId('result-status').getByText('Rows 1–4').waitFor();
      await page.getByRole('tab', { name: 'Summary' }).click();
      const summary = page.getByTestId('column-summary');
      const n = summary.getByRole('row', { name: /^n / });
      assert.match(await n.innerText(), /INTEGER\s+3\s+1 \(25%\)\s+3\s+1\s+3\s+2\s/);
      const s = summary.getByRole('row', { name: /^s / });
      assert.match(await s.innerText(), /VARCHAR\s+3\s+1 \(25%\)\s+2\s+a\s+b\s+—\s+a \(2\)/);
    });
  });

  it('at 900 px the navigation collapses to icons and the workspace keeps its actions on screen', async () => {
    await onPage(
      server,
      '/sql',
      async (page) => {
        const nav = page.getByRole('navigation', { name: 'Pages' });
        await nav.getByRole('link', { name: 'SQL' }).waitFor();
        assert.ok((await nav.boundingBox())!.width < 80, 'the navigation is collapsed');
        await runSql(page, 'SELECT customer_id, full_name, email, country FROM staging.stg_customers ORDER BY 1 LIMIT 5');
        await page.getByTestId('result-status').getByText('Rows 1–5').waitFor();
        for (const name of ['▶ Run', 'Export CSV', 'Copy', 'Next →']) {
          const box = (await page.getByRole('button', { name, exact: true }).boundingBox())!;
          assert.ok(box.x >= 0 && box.x + box.width <= 900, `${name} is on screen`);
        }
        // Names stay reachable: a link by its accessible name still navigates.
        await nav.getByRole('link', { name: 'Models' }).click();
        await page.waitForURL('**/models');
        await screenshot(page, 'narrow-900');
      },
      { viewport: { width: 900, height: 800 } },
    );
  });

  it('opens the DAG fitted with a minimap, each model coloured by its last build with the time of it', async () => {
    await onPage(server, '/models', async (page) => {
      const graph = page.getByTestId('graph');
      const node = graph.locator('[data-node-id="marts.customer_orders"][data-status="fresh"]');
      await node.waitFor();
      // The shop copy was built whenever the suite run's template was (builtShop), so its age is
      // whatever it is: what must hold is that the node shows the model's recorded build time.
      const shown = /built (just now|(\d+) (min|h|d) ago)/.exec(await node.innerText());
      assert.ok(shown, 'the node says when the model was built');
      const freshness = (await (await fetch(`${server.url}/api/freshness`)).json()) as { models: Array<{ model: string; last_built_at: string | null }> };
      const builtAt = freshness.models.find((m) => m.model === 'marts.customer_orders')?.last_built_at;
      assert.ok(builtAt, 'the model has a recorded build');
      const age = (Date.now() - Date.parse(builtAt)) / 1000;
      const unit = { min: 60, h: 3600, d: 86400 }[shown[3] as 'min' | 'h' | 'd'] ?? 60;
      const from = shown[2] ? Number(shown[2]) * unit : 0;
      // The page rounds down and re-renders on a timer, so the age now is at least what it shows
      // and less than one unit more (plus a minute for the page's own refresh interval).
      assert.ok(age >= from && age < from + unit + 60, `shown "${shown[0]}" for a build ${Math.round(age)} s ago`);
      // The minimap draws every node, in its state's colour.
      await page.waitForFunction(() => {
        const g = document.querySelector('[data-testid="graph"]');
        const drawn = g?.querySelectorAll('.react-flow__minimap .react-flow__minimap-node').length ?? 0;
        return drawn > 0 && drawn === g?.querySelectorAll('.react-flow__node').length;
      });
      await graph.locator('.react-flow__minimap rect.dp-node-fresh').first().waitFor();
      // Fitted: every node is inside the visible graph.
      const box = (await graph.boundingBox())!;
      for (const n of await graph.locator('.react-flow__node').all()) {
        const b = (await n.boundingBox())!;
        assert.ok(b.x >= box.x - 1 && b.y >= box.y - 1 && b.x + b.width <= box.x + box.width + 1 && b.y + b.height <= box.y + box.height + 1, 'a node lies outside the fitted view');
      }
      await screenshot(page, 'dag-ops');
    });
  });

  it("selects models with dbt's syntax (+model, model+, schema.*) and builds the selection", async () => {
    await onPage(server, '/models', async (page) => {
      await page.locator('[data-testid="graph"] [data-node-id="marts.customer_orders"][data-status="fresh"]').waitFor();
      const select = page.getByLabel('Select models');
      await select.fill('+marts.customer_orders');
      await page.getByTestId('dag-selection').getByText('3 models selected').waitFor();
      assert.deepEqual(await highlighted(page), ['marts.customer_orders', 'staging.stg_customers', 'staging.stg_orders']);
      await select.fill('stg_orders+');
      await page.getByTestId('dag-selection').getByText('3 models selected').waitFor();
      assert.deepEqual(await highlighted(page), ['marts.customer_orders', 'marts.revenue_by_month', 'staging.stg_orders']);
      await select.fill('staging.*');
      await page.getByTestId('dag-selection').getByText('3 models selected').waitFor();
      assert.deepEqual(await highlighted(page), ['staging.stg_customers', 'staging.stg_orders', 'staging.stg_payments']);
      // Unchanged models are a success, not a warning.
      await select.fill('marts.customer_orders');
      await page.getByRole('button', { name: 'Build selected (1)' }).click();
      await page.getByTestId('dag-run-result').getByText('1 unchanged').waitFor();
      assert.match(await page.getByTestId('dag-run-result').innerText(), /run succeeded/);
      await page.locator('[data-testid="graph"] [data-node-id="marts.customer_orders"][data-status="fresh"]').waitFor();
      const runs = (await (await fetch(`${server.url}/api/transform/runs?limit=1`)).json()) as Array<{ targets: string }>;
      assert.deepEqual(JSON.parse(runs[0].targets), ['marts.customer_orders']);
    });
  });

  it('marks a model whose SQL changed as stale and a failed build as failed', async () => {
    const file = path.join(server.root, 'transform', 'marts', 'revenue_by_month.sql');
    const original = fs.readFileSync(file, 'utf8');
    fs.writeFileSync(file, '-- @config materialized=table, schema=marts\nSELECT no_such_column FROM staging.stg_orders\n');
    try {
      await onPage(
        server,
        '/models',
        async (page) => {
          await page.locator('[data-testid="graph"] [data-node-id="marts.revenue_by_month"][data-status="stale"]').waitFor();
          await page.getByLabel('Select models').fill('marts.revenue_by_month');
          await page.getByRole('button', { name: 'Build selected (1)' }).click();
          await page.getByTestId('dag-run-result').getByText('run failed').waitFor();
          await page.locator('[data-testid="graph"] [data-node-id="marts.revenue_by_month"][data-status="failed"]').waitFor();
          assert.match(await page.getByTestId('dag-run-result').innerText(), /no_such_column/);
          // The others keep their colour.
          await page.locator('[data-testid="graph"] [data-node-id="marts.customer_orders"][data-status="fresh"]').waitFor();
        },
        { expectedErrors: /status of (400|500)/ },
      );
    } finally {
      fs.writeFileSync(file, original);
    }
  });
});
