/**
 * The Connectors page in headless Chromium against a real dp server: the add-connector wizard
 * (type → parameters → test → discover → create) for a csv folder, sync now with its results,
 * the CDC state and a reset, a webhook inbox, and the import wizard (file → preview → import).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { makeProject } from '../../helpers.js';
import { closeBrowser, openPage, screenshot, serveProject, type DpServer, UI_SUITE_TIMEOUT_MS } from '../../ui/browser.js';

describe('Connectors page', { timeout: UI_SUITE_TIMEOUT_MS }, () => {
  let server: DpServer;

  before(async () => {
    const root = makeProject({
      'project.yml': 'name: uitest\ndatabase:\n  path: w.duckdb\n',
      'data/exports/products.csv': 'id,name,price\n1,Pen,1.50\n2,Book,12.00\n',
      'data/exports/stock.csv': 'sku,qty\nA,5\nB,7\nC,9\n',
    });
    server = await serveProject(root);
  });

  after(async () => {
    await closeBrowser();
    await server?.close();
  });

  it('adds a csv connector through the wizard, syncs it and shows its CDC state', async () => {
    const { page, errors, close } = await openPage(server, '/connectors');
    try {
      await page.getByText('No connectors yet').waitFor();
      await page.getByRole('tab', { name: 'Add connector' }).click();
      await page.getByLabel('Connector type').selectOption('csv');
      await page.getByLabel('Connection name').fill('exports');
      await page.getByLabel('path', { exact: true }).fill('data/exports');
      await page.getByRole('button', { name: '3. Test connection' }).click();
      await page.getByText('ok: 2 CSV files').waitFor();
      await page.getByRole('button', { name: '4. Discover tables' }).click();
      await page.getByLabel('table products').waitFor();
      await page.getByLabel('table stock').uncheck();
      await page.getByRole('button', { name: '5. Create connector' }).click();

      await page.getByRole('cell', { name: 'exports', exact: true }).waitFor();
      await page.getByText('landing.products (full_refresh)').waitFor();
      assert.ok(fs.existsSync(path.join(server.root, 'ingest', 'connector_exports.ts')));
      assert.match(fs.readFileSync(path.join(server.root, 'project.yml'), 'utf8'), /connectors:\n {2}exports:/);

      await page.getByRole('button', { name: 'Sync now' }).click();
      const results = page.getByTestId('sync-results');
      await results.getByText('success').waitFor();
      assert.match(await results.innerText(), /products\s+success\s+2/);
      await page.getByText(/never|success/).first().waitFor();

      await page.getByRole('button', { name: 'CDC state' }).click();
      const cdc = page.getByTestId('cdc-state');
      await cdc.getByRole('cell', { name: 'products' }).waitFor();
      page.once('dialog', (d) => void d.accept());
      await cdc.getByRole('button', { name: 'Reset', exact: true }).click();
      await cdc.getByText('Nothing synced yet.').waitFor();
      await screenshot(page, 'connectors-list');
      assert.deepEqual(errors, []);
    } finally {
      await close();
    }
  });

  it('lists a webhook inbox and imports a file after a preview', async () => {
    const r = await fetch(`${server.url}/api/connectors/setup`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ connector_type: 'webhook', connection_name: 'orders_hook', config: {} }),
    });
    assert.equal(r.status, 200, await r.text());
    const { page, errors, close } = await openPage(server, '/connectors');
    try {
      await page.getByRole('tab', { name: 'Webhook inboxes' }).click();
      await page.getByText(`${server.url}/api/webhook/orders_hook`).waitFor();
      await page.getByText('landing.orders_hook_inbox').waitFor();

      await page.getByRole('tab', { name: 'Import a file' }).click();
      await page.getByLabel('File to import').setInputFiles({ name: 'People List.csv', mimeType: 'text/csv', buffer: Buffer.from('id,name\n1,Ada\n2,Grace\n3,Alan\n') });
      await page.getByRole('button', { name: '2. Preview' }).click();
      const preview = page.getByTestId('import-preview');
      await preview.getByText('id (BIGINT)').waitFor();
      await preview.getByRole('cell', { name: 'Grace' }).waitFor();
      assert.equal(await page.getByLabel('Import table').inputValue(), 'people_list');
      await page.getByRole('button', { name: '3. Import' }).click();
      await page.getByText('Imported 3 rows into landing.people_list').waitFor();
      await screenshot(page, 'connectors-import');
      assert.deepEqual(errors, []);
    } finally {
      await close();
    }
  });
});
