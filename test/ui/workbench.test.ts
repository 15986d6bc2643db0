/**
 * The web UI in headless Chromium against a real dp server on a copy of examples/shop (no
 * auth): the shell, the SQL workspace and the pages of today's plugins. One server and one
 * browser for the whole file; each test opens its own browser context.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { gridColumn, onPage, runSql, screenshot, shopForTests, UI_SUITE_TIMEOUT_MS } from './browser.js';

describe('web UI (shop, no auth)', { timeout: UI_SUITE_TIMEOUT_MS }, () => {
  const server = shopForTests();

  it('serves the shell at / with an import map allowed by the CSP, and client-side routes load it', async () => {
    const res = await fetch(`${server.url}/sql`, { headers: { accept: 'text/html' } });
    assert.equal(res.status, 200);
    const html = await res.text();
    assert.match(html, /<script type="importmap">/);
    const csp = res.headers.get('content-security-policy') ?? '';
    assert.match(csp, /script-src 'self' 'sha256-[A-Za-z0-9+/=]+'/, csp);
    // An API path never falls back to the page.
    const api = await fetch(`${server.url}/api/nope`, { headers: { accept: 'text/html' } });
    assert.equal(api.status, 404);
    assert.equal((await api.json()).error.code, 'not_found');
  });

  it('runs a query with Ctrl+Enter and shows its rows and column types', async () => {
    await onPage(server, '/sql', async (page) => {
      await page.locator('.dp-sql .cm-content').waitFor();
      await runSql(page, 'SELECT customer_id, full_name FROM staging.stg_customers ORDER BY customer_id LIMIT 3');
      await page.getByTestId('result-status').getByText('Rows 1–3').waitFor();
      const ids = await gridColumn(page, 0);
      assert.deepEqual(ids, ['1', '2', '3']);
      const header = await page.locator('[data-testid="results-grid"] [role="columnheader"]').allInnerTexts();
      assert.ok(header.some((h) => /customer_id\s*\n?\s*(INTEGER|BIGINT)/.test(h)), header.join(' | '));
      await screenshot(page, 'sql-workspace');
    });
  });

  it('completes tables and columns from /api/autocomplete in the editor', async () => {
    await onPage(server, '/sql', async (page) => {
      const editor = page.locator('.dp-sql .cm-content');
      await editor.click();
      await page.keyboard.press('Control+A');
      await page.keyboard.press('Delete');
      await page.keyboard.type('SELECT * FROM marts.cust');
      const option = page.locator('.cm-tooltip-autocomplete li', { hasText: 'customer_orders' });
      await option.waitFor();
      // CodeMirror ignores Enter in the first moments after the list opens (interactionDelay): wait past it.
      await page.waitForTimeout(200);
      await page.keyboard.press('Enter');
      assert.match(await editor.innerText(), /FROM marts\.customer_orders/);
    });
  });

  it('marks an engine error at its line and shows the API message', async () => {
    await onPage(server, '/sql', async (page) => {
      await runSql(page, 'SELECT 1 AS ok\nFROM staging.stg_customers\nWHERE no_such_column = 1');
      const alert = page.getByRole('alert');
      await alert.waitFor();
      assert.match(await alert.innerText(), /no_such_column/);
      await page.locator('.cm-dp-error-line').waitFor();
      const marked = await page.locator('.cm-dp-error-line').innerText();
      assert.match(marked, /WHERE no_such_column/);
      // The query's 400 is the browser's own network log line.
    }, { expectedErrors: /status of 400/ });
  });

  it('binds $parameters, pages through a result with a row count, explains, exports CSV and keeps a history', async () => {
    await onPage(server, '/sql', async (page) => {
      await page.getByLabel('Rows per page').selectOption('100');
      await runSql(page, 'SELECT order_id FROM staging.stg_orders WHERE order_id > $min ORDER BY order_id');
      await page.getByLabel('Parameter min').fill('5');
      await page.getByTestId('run-query').click();
      await page.getByTestId('result-status').getByText('Rows 1–100 (more rows)').waitFor();
      assert.equal((await gridColumn(page, 0))[0], '6');
      await page.getByRole('button', { name: 'Count rows' }).click();
      await page.getByTestId('result-status').getByText('Rows 1–100 of 115').waitFor();
      await page.getByRole('button', { name: 'Next →' }).click();
      await page.getByTestId('result-status').getByText('Rows 101–115').waitFor();
      assert.equal((await gridColumn(page, 0))[0], '106');
      await page.getByRole('button', { name: 'Explain' }).click();
      // The plan arrives after the click: wait for it, then read it.
      await page.getByTestId('explain-plan').getByText(/SEQ_SCAN|TABLE_SCAN|FILTER|PROJECTION/i).first().waitFor();
      const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Export CSV' }).click()]);
      const file = await download.path();
      const csv = fs.readFileSync(file!, 'utf8').trim().split(/\r?\n/);
      assert.equal(csv[0], 'order_id');
      assert.equal(csv.length, 116, 'the export has every row, not one page');
      await page.getByRole('button', { name: /History/ }).click();
      await page.getByLabel('Query history').getByText('WHERE order_id > $min').first().waitFor();
      // The history survives a reload (localStorage).
      await page.reload();
      await page.getByRole('button', { name: /History \(\d+\)/ }).click();
      await page.getByLabel('Query history').getByText('WHERE order_id > $min').first().waitFor();
    });
  });

  it('explores a table: sample rows, columns and a profile with a chart per column', async () => {
    await onPage(server, '/explorer', async (page) => {
      await page.getByRole('link', { name: /customer_orders/ }).click();
      await page.waitForURL('**/explorer/marts/customer_orders');
      await page.getByRole('tab', { name: 'Sample rows' }).click();
      await page.getByTestId('results-grid').getByText('Ada Lovelace').waitFor();
      await page.getByRole('tab', { name: 'Columns' }).click();
      await page.getByRole('cell', { name: 'lifetime_value' }).waitFor();
      await page.getByRole('tab', { name: 'Profile' }).click();
      await page.getByTestId('profile').waitFor();
      // A chart per column (eight), each drawn on its canvas once its distribution query answered.
      await page.waitForFunction(() => document.querySelectorAll('[data-testid="bar-chart"] canvas').length === 8);
      await screenshot(page, 'explorer-profile');
    });
  });

  it('opens the DAG, clicks a model and sees its column lineage and impact graphs', async () => {
    await onPage(server, '/models', async (page) => {
      const node = page.locator('[data-testid="graph"] [data-node-id="marts.customer_orders"]');
      await node.waitFor();
      await screenshot(page, 'models-dag');
      await node.click();
      await page.waitForURL('**/models/m/marts.customer_orders');
      const lineage = page.getByTestId('lineage-graph');
      await lineage.locator('[data-node-id="staging.stg_customers.full_name"]').waitFor();
      await lineage.locator('[data-node-id="marts.customer_orders.lifetime_value"]').waitFor();
      // Edges are drawn after the nodes they join: wait for the sixth.
      await lineage.locator('.react-flow__edge').nth(5).waitFor();
      await screenshot(page, 'model-lineage');
      // A source column opens its own model.
      await lineage.locator('[data-node-id="staging.stg_customers.full_name"]').click();
      await page.waitForURL('**/models/m/staging.stg_customers');
      await page.getByRole('tab', { name: 'Impact' }).click();
      await page.getByTestId('impact-graph').locator('[data-node-id="marts.customer_orders"]').waitFor();
      await page.getByRole('link', { name: 'Full DAG' }).or(page.getByRole('tab', { name: 'Full DAG' })).first().click();
      await page.locator('[data-testid="graph"] [data-node-id="seeds.customers"]').waitFor();
      await screenshot(page, 'models-full-dag');
    });
  });

  it('runs check, lint and diff from the models page and shows their results', async () => {
    await onPage(server, '/models', async (page) => {
      const panel = page.getByTestId('result-panel');
      await page.getByRole('button', { name: 'Check', exact: true }).click();
      await panel.getByText(/validation \d+ passed, 0 failed/).waitFor();
      await page.getByRole('button', { name: 'Lint', exact: true }).click();
      await panel.locator('strong', { hasText: 'Lint' }).waitFor();
      await page.getByRole('button', { name: 'Diff', exact: true }).click();
      await panel.getByRole('cell', { name: 'staging.stg_orders' }).waitFor();
      assert.ok((await panel.getByText('unchanged').count()) >= 1);
    });
  });

  it('edits and saves a model, refuses a save over someone else’s change, and rebuilds it with live status', async () => {
    await onPage(
      server,
      '/models/m/marts.revenue_by_month',
      async (page) => {
        const editor = page.locator('[data-testid="model-view"] .cm-content');
        // The model's file is edited together (/ws/collaborate): typing once the document is live.
        await page.getByTestId('collab-editor').getByText('live', { exact: true }).waitFor();
        await editor.click();
        await page.keyboard.press('Control+End');
        await page.keyboard.insertText('\n-- edited in the browser');
        await page.getByRole('button', { name: 'Save', exact: true }).click();
        await page.getByText(/^saved /).waitFor();
        const file = path.join(server.root, 'transform', 'marts', 'revenue_by_month.sql');
        assert.match(fs.readFileSync(file, 'utf8'), /-- edited in the browser$/);
        // Someone else changes the file: the next save is refused, and nothing is overwritten.
        fs.appendFileSync(file, '\n-- edited elsewhere');
        await editor.click();
        await page.keyboard.press('Control+End');
        await page.keyboard.insertText('\n-- second browser edit');
        await page.keyboard.press('Control+s');
        await page.getByTestId('collab-conflict').getByText(/changed on disk/).waitFor();
        assert.match(fs.readFileSync(file, 'utf8'), /-- edited elsewhere$/);
        await page.getByRole('button', { name: 'Load the file from disk (drop ours)' }).click();
        await page.locator('[data-testid="model-view"] .cm-content').getByText('-- edited elsewhere').waitFor();
        // Rebuild it: the status comes in live from the transform event stream.
        await page.getByRole('button', { name: 'Build', exact: true }).click();
        await page.getByTestId('result-panel').getByRole('cell', { name: 'marts.revenue_by_month' }).waitFor();
        // The live status badge (first), and the model's details panel once the run is recorded.
        await page.locator('[data-testid="model-view"]').getByText('built', { exact: true }).first().waitFor();
        await page.getByTestId('last-build').getByText('built', { exact: true }).waitFor();
        await screenshot(page, 'model-edit');
      },
    );
  });

  it('creates a model from the dialog and opens it', async () => {
    await onPage(server, '/models', async (page) => {
      await page.getByRole('button', { name: '+ New model' }).click();
      await page.getByLabel('Name').fill('orders_by_country');
      await page.getByLabel('SQL').fill('SELECT country, count(*) AS customers FROM staging.stg_customers GROUP BY 1');
      await page.getByRole('button', { name: 'Create', exact: true }).click();
      await page.waitForURL('**/models/m/marts.orders_by_country');
      assert.ok(fs.existsSync(path.join(server.root, 'transform', 'marts', 'orders_by_country.sql')));
    });
  });

  it('shows quality: runs contracts and lists their history, assertions and freshness', async () => {
    await onPage(server, '/quality', async (page) => {
      await page.getByRole('tab', { name: 'Contracts' }).click();
      await page.getByRole('cell', { name: 'customer_orders_contract' }).waitFor();
      await page.getByRole('button', { name: 'Run all contracts' }).click();
      await page.getByRole('row', { name: /customer_orders_contract/ }).getByText('pass').waitFor();
      await page.getByRole('cell', { name: 'customer_orders_contract' }).click();
      await page.getByText('History of customer_orders_contract').waitFor();
      await page.getByRole('tab', { name: 'Assertions' }).click();
      await page.getByRole('cell', { name: 'unique(customer_id)' }).first().click();
      await page.getByTestId('assertion-diagnosis').getByText(/passed/).first().waitFor();
      await page.getByRole('tab', { name: 'Freshness' }).click();
      await page.getByRole('cell', { name: 'raw_events' }).waitFor();
      await screenshot(page, 'quality');
    });
  });

  it('follows the system theme: dark colours in a dark browser', async () => {
    await onPage(server, '/sql', async (page) => {
      await page.locator('.dp-sql .cm-content').waitFor();
      const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
      assert.equal(bg, 'rgb(20, 23, 28)');
      await screenshot(page, 'sql-dark');
    }, { colorScheme: 'dark' });
  });

  it('switches the environment from the header (admin), last because it changes the database for everyone', async () => {
    await onPage(
      server,
      '/sql',
      async (page) => {
        await page.getByTestId('project-name').getByText('shop').waitFor();
        await page.locator('select#dp-env').selectOption('prod');
        // It applies to everyone, so it asks first.
        await page.getByRole('button', { name: 'Switch for everyone' }).click();
        await page.waitForFunction(() => (document.querySelector('#dp-env') as HTMLSelectElement | null)?.value === 'prod');
        const env = await (await fetch(`${server.url}/api/environment`)).json();
        assert.equal(env.active, 'prod');
        await page.getByTestId('health').getByText('healthy').waitFor();
      },
      // Reads that met the switch's brief 503 were retried; the browser still logs the 503 itself.
      { expectedErrors: /status of 503/ },
    );
  });

  it('works from the keyboard: skip link, navigation links and Ctrl+Enter', async () => {
    await onPage(server, '/sql', async (page) => {
      await page.locator('.dp-sql .cm-content').waitFor();
      await page.keyboard.press('Tab');
      assert.equal(await page.evaluate(() => document.activeElement?.textContent), 'Skip to content');
      // Tab to the Explorer link and open it with Enter.
      for (let i = 0; i < 30; i++) {
        await page.keyboard.press('Tab');
        if ((await page.evaluate(() => document.activeElement?.textContent?.trim())) === 'Explorer') break;
      }
      await page.keyboard.press('Enter');
      await page.waitForURL('**/explorer');
    });
  });
});
