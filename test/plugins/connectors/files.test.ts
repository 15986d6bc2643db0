/**
 * The connectors that need no server: `csv` (a folder of files read by DuckDB; file tracking
 * skips an unchanged file and replaces a changed one), the `webhook` inbox (secret checked by the
 * kernel's guard, 413 over 5 MB, nothing stored on any error) and import (CSV, Parquet, JSON and
 * .xlsx uploads, a preview first, recorded in _service.imports).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DuckDBInstance } from '@duckdb/node-api';
import ExcelJS from 'exceljs';
import { makeProject, startServer, tempDir, type TestServer } from '../../helpers.js';

const WEBHOOK_SECRET = 'hook-secret-0123456789';

describe('csv connector, webhook inbox and import', () => {
  let root: string;
  let s: TestServer;
  const count = async (sql: string) => Number((await s.request('POST', '/api/query', { sql })).body.rows[0][0]);

  before(async () => {
    root = makeProject({
      'project.yml': 'name: files\ndatabase:\n  path: w.duckdb\n',
      '.env': `SERVICE_WEBHOOK_SECRET_ORDERS_HOOK=${WEBHOOK_SECRET}\n`,
      'data/exports/products.csv': 'id,name,price\n1,Pen,1.50\n2,Book,12.00\n',
      'data/exports/stock.csv': 'sku,qty,updated\nA,5,2024-01-01 10:00:00\nB,7,2024-01-02 11:00:00\n',
      'data/exports/readme.md': 'not a table\n',
    });
    s = await startServer(root);
  });

  after(async () => {
    await s?.close();
  });

  it('csv: setup discovers the files of a folder; file tracking syncs a file only when it changed', async () => {
    const d = await s.request('POST', '/api/connectors/discover', { connector_type: 'csv', config: { path: 'data/exports' } });
    assert.equal(d.status, 200, d.text);
    assert.deepEqual(d.body.tables.map((t: { name: string }) => t.name), ['products', 'stock']);
    assert.deepEqual(d.body.tables[0].columns, [{ name: 'id', type: 'BIGINT' }, { name: 'name', type: 'VARCHAR' }, { name: 'price', type: 'DOUBLE' }]);

    const r = await s.request('POST', '/api/connectors/setup', {
      connector_type: 'csv',
      connection_name: 'exports',
      config: { path: 'data/exports' },
      tables: [{ name: 'products', cdc_mode: 'file_tracking' }, { name: 'stock', cdc_mode: 'high_watermark', cdc_column: 'updated' }],
      target_schema: 'raw',
    });
    assert.equal(r.status, 200, r.text);
    const first = await s.request('POST', '/api/connectors/sync/exports');
    assert.deepEqual(first.body.results.map((x: { status: string; rows_synced: number }) => `${x.status}:${x.rows_synced}`), ['success:2', 'success:2']);
    const again = await s.request('POST', '/api/connectors/sync/exports');
    assert.equal(again.body.results[0].status, 'skipped');
    assert.equal(again.body.results[1].rows_synced, 0);

    const file = path.join(root, 'data/exports/products.csv');
    fs.writeFileSync(file, 'id,name,price\n1,Pen,1.75\n2,Book,12.00\n3,Ink,3.10\n');
    const later = new Date(Date.now() + 5000);
    fs.utimesSync(file, later, later);
    fs.appendFileSync(path.join(root, 'data/exports/stock.csv'), 'C,9,2024-01-03 12:00:00\n');
    const changed = await s.request('POST', '/api/connectors/sync/exports');
    assert.deepEqual(changed.body.results.map((x: { status: string; rows_synced: number }) => `${x.status}:${x.rows_synced}`), ['success:3', 'success:1']);
    assert.deepEqual((await s.request('POST', '/api/query', { sql: 'SELECT name, price FROM raw.products ORDER BY id' })).body.rows, [['Pen', 1.75], ['Book', 12], ['Ink', 3.1]]);
    assert.equal(await count('SELECT count(*) FROM raw.stock'), 3);
    const state = (await s.request('GET', '/api/cdc/exports')).body.tables;
    assert.equal(state.find((x: { table_name: string }) => x.table_name === 'products').file_mtime, fs.statSync(file).mtimeMs / 1000);

    const outside = await s.request('POST', '/api/connectors/test', { connector_type: 'csv', config: { path: '../' } });
    assert.equal(outside.body.ok, false);
    assert.match(outside.body.message, /outside|escape/i);
    // Where the files must go instead (issue 33 point 6).
    assert.match(outside.body.message, /Copy the files under the project \(e\.g\. data\/orders\.csv\)/);
  });

  it('webhook: stores payloads with the right secret; 401 without it or with a wrong one, 403 unconfigured, 413 over 5 MB, nothing stored on an error', async () => {
    const setup = await s.request('POST', '/api/connectors/setup', { connector_type: 'webhook', connection_name: 'shop_hook', config: { secret: 'another-secret-42' } });
    assert.equal(setup.status, 200, setup.text);
    assert.deepEqual(setup.body.secrets, ['SERVICE_WEBHOOK_SECRET_SHOP_HOOK']);
    assert.ok(!fs.readFileSync(path.join(root, 'project.yml'), 'utf8').includes('another-secret-42'));
    assert.equal(await count('SELECT count(*) FROM landing.shop_hook_inbox'), 0);

    const post = (name: string, body: string, secret?: string) =>
      fetch(`${s.url}/api/webhook/${name}`, { method: 'POST', headers: { 'content-type': 'application/json', ...(secret ? { 'x-service-webhook-secret': secret } : {}) }, body });
    const ok = await post('orders_hook', JSON.stringify({ order: 7, items: [1, 2] }), WEBHOOK_SECRET);
    assert.equal(ok.status, 200);
    const stored = (await ok.json()) as { id: string; table: string };
    assert.equal(stored.table, 'landing.orders_hook_inbox');
    const rows = (await s.request('POST', '/api/query', { sql: "SELECT id, payload->>'order', typeof(received_at) FROM landing.orders_hook_inbox" })).body.rows;
    assert.deepEqual(rows, [[stored.id, '7', 'TIMESTAMP']]);
    const viaSetupSecret = await post('shop_hook', '{"a":1}', 'another-secret-42');
    assert.equal(viaSetupSecret.status, 200);

    const noSecret = await post('orders_hook', '{"x":1}');
    assert.equal(noSecret.status, 401);
    const wrong = await post('orders_hook', '{"x":1}', 'wrong-secret');
    assert.equal(wrong.status, 401);
    const wrongBody = (await wrong.json()) as { error: { code: string; message: string; details: Record<string, unknown> } };
    assert.deepEqual(Object.keys(wrongBody.error).sort(), ['code', 'details', 'message']);
    assert.equal(wrongBody.error.code, 'webhook_secret_invalid');
    assert.equal(wrongBody.error.details.webhook, 'orders_hook');
    assert.ok(!JSON.stringify(wrongBody).includes(WEBHOOK_SECRET) && !JSON.stringify(wrongBody).includes('wrong-secret'), 'no secret in the error');
    // The setup's own secret is no key for another webhook either.
    assert.equal((await post('orders_hook', '{"x":1}', 'another-secret-42')).status, 401);
    const unconfigured = await post('other_hook', '{"x":1}', WEBHOOK_SECRET);
    assert.equal(unconfigured.status, 403);
    const big = await post('orders_hook', JSON.stringify({ blob: 'x'.repeat(5 * 1024 * 1024) }), WEBHOOK_SECRET);
    assert.equal(big.status, 413);
    const notJson = await post('orders_hook', '{not json', WEBHOOK_SECRET);
    assert.equal(notJson.status, 400);
    const badName = await post('bad-name!', '{}', WEBHOOK_SECRET);
    assert.equal(badName.status, 400);
    assert.equal(await count('SELECT count(*) FROM landing.orders_hook_inbox'), 1);
    assert.equal(await count("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'other_hook_inbox'"), 0);
  });

  it('imports CSV, Parquet, JSON and .xlsx uploads after a preview, and records each import', async () => {
    const dir = tempDir('dp-import-');
    try {
      const db = await DuckDBInstance.create(':memory:');
      const c = await db.connect();
      const parquet = path.join(dir, 'sales.parquet');
      await c.run(`COPY (SELECT i AS id, 'r' || i AS region, i * 2.5 AS amount FROM range(1, 101) t(i)) TO '${parquet}' (FORMAT parquet)`);
      c.closeSync();
      const wb = new ExcelJS.Workbook();
      const ws = wb.addWorksheet('Budget');
      ws.addRow(['team', 'amount', 'approved', 'due']);
      ws.addRow(['data', 1200.5, true, new Date(Date.UTC(2024, 4, 1))]);
      ws.addRow(['web', 800, false, new Date(Date.UTC(2024, 5, 1))]);
      const xlsx = path.join(dir, 'Budget 2024.xlsx');
      await wb.xlsx.writeFile(xlsx);
      const files: Array<[string, Buffer]> = [
        ['people.csv', Buffer.from('id,name\n1,Ada\n2,Grace\n3,Alan\n')],
        ['sales.parquet', fs.readFileSync(parquet)],
        ['events.json', Buffer.from('[{"id": 1, "kind": "click"}, {"id": 2, "kind": "view"}]')],
        ['Budget 2024.xlsx', fs.readFileSync(xlsx)],
      ];
      const upload = (name: string, data: Buffer, fields: Record<string, string> = {}) => {
        const form = new FormData();
        for (const [k, v] of Object.entries(fields)) form.append(k, v);
        form.append('file', new Blob([new Uint8Array(data)]), name);
        return fetch(`${s.url}/api/import`, { method: 'POST', body: form });
      };

      const preview = await upload('Budget 2024.xlsx', files[3]![1], { preview: 'true' });
      assert.equal(preview.status, 200);
      const p = (await preview.json()) as { columns: Array<{ name: string; type: string }>; rows: unknown[][]; table: string };
      assert.equal(p.table, 'budget_2024');
      assert.deepEqual(p.columns, [{ name: 'team', type: 'VARCHAR' }, { name: 'amount', type: 'DOUBLE' }, { name: 'approved', type: 'BOOLEAN' }, { name: 'due', type: 'TIMESTAMP' }]);
      assert.equal(p.rows.length, 2);
      const csvPreview = (await (await upload('people.csv', files[0]![1], { preview: 'true' })).json()) as { columns: Array<{ name: string; type: string }> };
      assert.deepEqual(csvPreview.columns, [{ name: 'id', type: 'BIGINT' }, { name: 'name', type: 'VARCHAR' }]);
      assert.equal(await count("SELECT count(*) FROM duckdb_tables() WHERE schema_name = 'landing' AND table_name IN ('people', 'budget_2024')"), 0);

      const expected: Record<string, number> = { people: 3, sales: 100, events: 2, budget_2024: 2 };
      for (const [name, data] of files) {
        const r = await upload(name, data);
        const body = (await r.json()) as { table: string; rows_imported: number };
        assert.equal(r.status, 200, JSON.stringify(body));
        assert.equal(body.rows_imported, expected[body.table]);
        assert.equal(await count(`SELECT count(*) FROM landing.${body.table}`), expected[body.table]);
      }
      assert.deepEqual((await s.request('POST', '/api/query', { sql: "SELECT team, amount, approved, due::VARCHAR FROM landing.budget_2024 ORDER BY team" })).body.rows, [
        ['data', 1200.5, true, '2024-05-01 00:00:00'],
        ['web', 800, false, '2024-06-01 00:00:00'],
      ]);
      const recorded = (await s.request('POST', '/api/query', { sql: 'SELECT table_name, format, rows_imported FROM _service.imports ORDER BY table_name' })).body.rows;
      assert.deepEqual(recorded, [['budget_2024', 'xlsx', 2], ['events', 'json', 2], ['people', 'csv', 3], ['sales', 'parquet', 100]]);

      // The full DAG shows each import, and the connector script linked to the tables it loads.
      const dag = (await s.request('GET', '/api/dag/full')).body as { nodes: Array<{ id: string; type: string; targets?: string[] }>; edges: Array<{ source: string; target: string }> };
      for (const t of ['people', 'sales', 'events', 'budget_2024']) assert.equal(dag.nodes.find((n) => n.id === `landing.${t}`)?.type, 'import', t);
      const script = dag.nodes.find((n) => n.id === 'ingest/connector_exports.ts');
      assert.deepEqual(script?.targets, ['raw.products', 'raw.stock']);
      assert.ok(dag.edges.some((e) => e.source === 'ingest/connector_exports.ts' && e.target === 'raw.products'));

      const exists = await upload('people.csv', files[0]![1]);
      assert.equal(exists.status, 409);
      const appended = await upload('people.csv', files[0]![1], { mode: 'append' });
      assert.equal(appended.status, 200);
      assert.equal(await count('SELECT count(*) FROM landing.people'), 6);
      const other = await upload('people.csv', files[0]![1], { schema: 'staging', table: 'folks' });
      assert.equal(other.status, 200);
      assert.equal(await count('SELECT count(*) FROM staging.folks'), 3);

      const unsupported = await upload('notes.docx', Buffer.from('x'));
      assert.equal(unsupported.status, 400);
      const broken = await upload('broken.parquet', Buffer.from('not parquet at all'));
      assert.equal(broken.status, 400);
      assert.equal(((await broken.json()) as { error: { code: string } }).error.code, 'import_parse_failed');
      const badTable = await upload('people.csv', files[0]![1], { table: 'drop table x' });
      assert.equal(badTable.status, 400);
      const noFile = await fetch(`${s.url}/api/import`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
      assert.equal(noFile.status, 400);
      assert.deepEqual(fs.readdirSync(path.join(root, '.dp', 'imports')), [], 'upload scratch files left behind');
      assert.equal(await count("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'broken'"), 0);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
