/**
 * Issue 15 end to end through the connectors plugin, on a real server and DuckDB file: setup
 * (script, project.yml, secrets to .env) and syncs of the remote types, incremental syncs run
 * three times with new rows in between (rest_api and cloud_warehouse_a: none lost, none
 * duplicated), a sync that fails midway (target and state unchanged), a reset and full re-sync,
 * file tracking, and every secret absent from project.yml, the scripts, the responses and the CLI.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import ExcelJS from 'exceljs';
import { spawn } from 'node:child_process';
import { DP_BIN, makeProject, startServer, type TestServer } from '../../helpers.js';
import { startFakeWarehouse, type FakeWarehouse } from './fakes/arrow-warehouse.js';
import { startFakeSaas, type FakeSaas } from './fakes/saas.js';
import { startPostgres, type RunningPostgres } from './support/postgres.js';
import { startS3, type RunningS3 } from './support/s3.js';

const orders = (from: number, n: number, minute: number) =>
  Array.from({ length: n }, (_, i) => ({ id: from + i, customer: `c${(from + i) % 7}`, amount: from + i + 0.5, updated_at: `2024-01-01T10:${String(minute).padStart(2, '0')}:${String(i % 60).padStart(2, '0')}Z` }));

describe('remote connector types through the connectors plugin', () => {
  let api: FakeSaas;
  let wh: FakeWarehouse;
  let s3: RunningS3;
  let pg: RunningPostgres;
  let root: string;
  let s: TestServer;
  const responses: string[] = [];
  const secrets: string[] = [];
  const request = async (method: string, url: string, body?: unknown) => {
    const r = await s.request(method, url, body);
    responses.push(r.text);
    return r;
  };
  const count = async (sql: string) => Number((await s.request('POST', '/api/query', { sql })).body.rows[0][0]);
  const sync = async (name: string) => {
    const r = await request('POST', `/api/connectors/sync/${name}`);
    assert.equal(r.status, 200, r.text);
    return r.body as { status: string; results: Array<{ table: string; status: string; rows_synced: number; watermark_before: string | null; watermark_after: string | null; error: string | null }> };
  };

  before(async () => {
    api = await startFakeSaas('sk_e2e_rest_token_91');
    api.data.set('orders', orders(1, 95, 0));
    api.data.set('payments.charges', Array.from({ length: 130 }, (_, i) => ({ id: `ch_${i}`, amount: 100 + i, created: 1_700_000_000 + i })));
    wh = await startFakeWarehouse('wh_e2e_token_55');
    await wh.db.run('CREATE SCHEMA analytics');
    await wh.db.run("CREATE TABLE analytics.events AS SELECT i::BIGINT AS id, 'e' || i AS name, TIMESTAMP '2024-01-01' + to_seconds(i) AS at FROM range(1, 5001) t(i)");
    s3 = await startS3(['lake']);
    await s3.put('lake', 'exports/orders/2024-01.csv', 'id,amount\n1,10.5\n2,20\n');
    pg = await startPostgres();
    await pg.query('CREATE TABLE public.accounts AS SELECT i AS id, md5(i::text) AS name FROM generate_series(1, 777) i');
    secrets.push(api.token, wh.token, pg.password);
    root = makeProject({ 'project.yml': '# remote sources\nname: cloud\ndatabase:\n  path: cloud.duckdb\n' });
    const wb = new ExcelJS.Workbook();
    const sheet = wb.addWorksheet('Budget');
    sheet.addRow(['line', 'amount']);
    for (let i = 1; i <= 40; i++) sheet.addRow([`line ${i}`, i * 10]);
    fs.mkdirSync(path.join(root, 'data'));
    await wb.xlsx.writeFile(path.join(root, 'data', 'budget.xlsx'));
    s = await startServer(root);
  });
  after(async () => {
    await s?.close();
    await api?.close();
    await wh?.close();
    await s3?.stop();
    await pg?.stop();
  });

  it('lists the nine types with their secret parameters, from this plugin', async () => {
    const r = await request('GET', '/api/connectors/available');
    assert.equal(r.status, 200);
    const mine = r.body.filter((t: { plugin: string }) => t.plugin === 'connectors-cloud');
    assert.deepEqual(mine.map((t: { type: string }) => t.type).sort(), ['cloud_warehouse_a', 'cloud_warehouse_b', 'cloud_warehouse_c', 'crm', 'ecommerce', 'object_storage', 'payments', 'rest_api', 'spreadsheet']);
    assert.deepEqual(mine.find((t: { type: string }) => t.type === 'object_storage').secret_params, ['secret_access_key', 'session_token']);
  });

  it('bad input: missing and wrong-typed params answer 400 naming the field', async () => {
    const missing = await request('POST', '/api/connectors/test', { connector_type: 'rest_api', config: { url: api.url } });
    assert.equal(missing.status, 400);
    assert.equal(missing.body.error.details.field, 'resources');
    // The shape to write (issue 33 point 6).
    assert.match(missing.body.error.message, /"resources": \[\{"name": "orders", "path": "\/v1\/orders"/);
    const wrong = await request('POST', '/api/connectors/discover', { connector_type: 'cloud_warehouse_c', config: { host: 'h', database: 'd', user: 'u', port: 'five' } });
    assert.equal(wrong.status, 400);
    assert.equal(wrong.body.error.details.field, 'port');
  });

  it('rest_api: setup keeps the token in .env; three incremental syncs lose and duplicate nothing', async () => {
    const setup = await request('POST', '/api/connectors/setup', {
      connector_type: 'rest_api',
      connection_name: 'shop_api',
      config: { url: api.url, token: api.token, resources: [{ name: 'orders', path: '/api/paged/orders', records_path: 'data.items', pagination: { style: 'page', size_param: 'per_page', page_size: 10 }, incremental_param: 'updated_since' }] },
      tables: [{ name: 'orders', cdc_mode: 'high_watermark', cdc_column: 'updated_at' }],
      target_schema: 'landing',
    });
    assert.equal(setup.status, 200, setup.text);
    assert.deepEqual(setup.body.secrets, ['SHOP_API_TOKEN']);
    const yml = fs.readFileSync(path.join(root, 'project.yml'), 'utf8');
    assert.match(yml, /token: \$\{SHOP_API_TOKEN\}/);
    assert.match(fs.readFileSync(path.join(root, '.env'), 'utf8'), new RegExp(`SHOP_API_TOKEN=${api.token}`));

    const first = await sync('shop_api');
    assert.equal(first.results[0]!.status, 'success', JSON.stringify(first));
    assert.equal(first.results[0]!.rows_synced, 95);
    api.data.get('orders')!.push(...orders(96, 5, 1));
    const second = await sync('shop_api');
    assert.equal(second.results[0]!.rows_synced, 5);
    assert.equal(second.results[0]!.watermark_before, first.results[0]!.watermark_after);
    api.data.get('orders')!.push(...orders(101, 3, 2));
    const third = await sync('shop_api');
    assert.equal(third.results[0]!.rows_synced, 3);
    assert.equal(await count('SELECT count(*) FROM landing.orders'), 103);
    assert.equal(await count('SELECT count(DISTINCT id) FROM landing.orders'), 103);
  });

  it('rest_api: a sync that fails midway leaves the table and the watermark as they were', async () => {
    api.data.get('orders')!.push(...orders(104, 30, 3));
    const before = (await request('GET', '/api/cdc/shop_api')).body;
    api.failWhen = { param: 'page', value: '2' };
    const failed = await sync('shop_api');
    api.failWhen = null;
    assert.equal(failed.results[0]!.status, 'error');
    assert.match(failed.results[0]!.error!, /HTTP 500/);
    assert.equal(await count('SELECT count(*) FROM landing.orders'), 103);
    assert.deepEqual((await request('GET', '/api/cdc/shop_api')).body.tables.map((t: { watermark_value: string }) => t.watermark_value), before.tables.map((t: { watermark_value: string }) => t.watermark_value));
    const retried = await sync('shop_api');
    assert.equal(retried.results[0]!.rows_synced, 30);
    assert.equal(await count('SELECT count(DISTINCT id) FROM landing.orders'), 133);
    assert.equal(await count('SELECT count(*) FROM landing.orders'), 133);
  });

  it('rest_api: reset, then a full re-sync replaces the table', async () => {
    const reset = await request('POST', '/api/cdc/shop_api/reset');
    assert.equal(reset.status, 200, reset.text);
    const full = await sync('shop_api');
    assert.equal(full.results[0]!.rows_synced, 133);
    assert.equal(await count('SELECT count(*) FROM landing.orders'), 133);
  });

  it('cloud_warehouse_a: full then high-watermark syncs over Arrow', async () => {
    const setup = await request('POST', '/api/connectors/setup', {
      connector_type: 'cloud_warehouse_a',
      connection_name: 'snow',
      config: { url: wh.url, token: wh.token, database: 'PROD', schema: 'analytics' },
      tables: [{ name: 'events', cdc_mode: 'high_watermark', cdc_column: 'id' }],
      target_schema: 'wh',
    });
    assert.equal(setup.status, 200, setup.text);
    assert.equal((await sync('snow')).results[0]!.rows_synced, 5000);
    await wh.db.run("INSERT INTO analytics.events SELECT i, 'e' || i, TIMESTAMP '2024-02-01' FROM range(5001, 5011) t(i)");
    assert.equal((await sync('snow')).results[0]!.rows_synced, 10);
    const idle = await sync('snow');
    assert.equal(idle.results[0]!.status, 'success');
    assert.equal(idle.results[0]!.rows_synced, 0);
    assert.equal(await count('SELECT count(DISTINCT id) FROM wh.events'), 5010);
    assert.equal(await count('SELECT count(*) FROM wh.events'), 5010);
    const types = await s.request('POST', '/api/query', { sql: "SELECT data_type FROM information_schema.columns WHERE table_schema = 'wh' AND table_name = 'events' ORDER BY ordinal_position" });
    assert.deepEqual(types.body.rows.flat(), ['BIGINT', 'VARCHAR', 'TIMESTAMP']);
  });

  it('cloud_warehouse_b, cloud_warehouse_c, payments and spreadsheet: full syncs', async () => {
    const cases: Array<[string, string, Record<string, unknown>, string[], string]> = [
      ['cloud_warehouse_b', 'bricks', { url: wh.url, api_key: wh.token, catalog: 'main', schema: 'analytics' }, ['events'], 'SELECT count(*) FROM landing.events'],
      ['cloud_warehouse_c', 'redshift', { host: pg.host, port: pg.port, database: pg.database, user: pg.user, password: pg.password, ssl: false }, ['accounts'], 'SELECT count(*) FROM landing.accounts'],
      ['payments', 'stripe', { url: api.url, api_key: api.token, resources: ['charges'] }, ['charges'], 'SELECT count(*) FROM landing.charges'],
      ['spreadsheet', 'budget', { path: 'data/budget.xlsx' }, ['Budget'], 'SELECT count(*) FROM landing."Budget"'],
    ];
    const expected = [5010, 777, 130, 40];
    for (const [i, [type, name, config, tables, sql]] of cases.entries()) {
      const setup = await request('POST', '/api/connectors/setup', { connector_type: type, connection_name: name, config, tables, target_schema: 'landing' });
      assert.equal(setup.status, 200, `${type}: ${setup.text}`);
      const r = await sync(name);
      assert.equal(r.results[0]!.status, 'success', `${type}: ${JSON.stringify(r)}`);
      assert.equal(await count(sql), expected[i], type);
    }
  });

  it('object_storage: file tracking skips an unchanged folder and reloads a changed one', async () => {
    const setup = await request('POST', '/api/connectors/setup', {
      connector_type: 'object_storage',
      connection_name: 'lake',
      config: { endpoint: s3.endpoint, bucket: 'lake', prefix: 'exports/', access_key_id: s3.accessKeyId, secret_access_key: s3.secretAccessKey },
      tables: [{ name: 'orders', cdc_mode: 'file_tracking' }],
      target_schema: 'lake',
    });
    assert.equal(setup.status, 200, setup.text);
    assert.equal((await sync('lake')).results[0]!.rows_synced, 2);
    assert.equal((await sync('lake')).results[0]!.status, 'skipped');
    // Modified a minute from now: past what the first sync saw, without waiting for S3's next whole second.
    await s3.put('lake', 'exports/orders/2024-02.csv', 'id,amount\n3,30\n', { modifiedAt: new Date(Date.now() + 60_000) });
    const changed = await sync('lake');
    assert.equal(changed.results[0]!.status, 'success');
    assert.equal(await count('SELECT count(*) FROM lake.orders'), 3);
  });

  it('no secret in project.yml, the generated scripts or any response; the scripts delegate to ctx.connectors', async () => {
    const yml = fs.readFileSync(path.join(root, 'project.yml'), 'utf8');
    assert.ok(yml.startsWith('# remote sources\n'));
    const scripts = fs.readdirSync(path.join(root, 'ingest')).map((f) => fs.readFileSync(path.join(root, 'ingest', f), 'utf8'));
    assert.equal(scripts.length, 7);
    for (const script of scripts) assert.match(script, /ctx\.connectors\.sync\(/);
    for (const secret of secrets) {
      assert.ok(!yml.includes(secret), `project.yml holds ${secret}`);
      for (const script of scripts) assert.ok(!script.includes(secret), `a script holds ${secret}`);
      for (const text of responses) assert.ok(!text.includes(secret), `a response holds ${secret}`);
    }
  });

  it('the dp CLI syncs a remote connector and prints no secret', async () => {
    await s.close();
    // Asynchronously: the fake API answers from this process's event loop.
    const r = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [DP_BIN, 'connectors', 'sync', 'stripe', '--project', root], { env: { ...process.env, DP_LOG_SILENT: '0' } });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });
    assert.equal(r.code, 0, r.stderr);
    for (const secret of secrets) assert.ok(!`${r.stdout}${r.stderr}`.includes(secret), `CLI output holds ${secret}`);
    assert.match(r.stdout, /charges/);
    s = await startServer(root);
  });
});
