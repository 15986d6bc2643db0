/**
 * The postgres connector against a real PostgreSQL 15 server (test/support/databases.ts): setup
 * over HTTP (script, project.yml edited in place, the password only in .env), full and
 * high-watermark syncs (three runs with new rows in between: none lost, none duplicated), a sync
 * that fails midway (target and state unchanged), a reset followed by a full re-sync, the onSync
 * hook per table, and the cause of a failed connection in words.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { TABLE_SYNCED, type SyncContext } from '../../../sdk/index.js';
import { makeProject, startServer, type TestServer } from '../../helpers.js';
import { startPostgres, type RunningDatabase } from '../../support/databases.js';

const PROJECT_YML = `# The shop warehouse: comments and key order must survive a setup.
name: pgtest
database:
  path: warehouse.duckdb   # next to project.yml

# Streams run in order.
streams:
  nightly:
    steps:
      - transform: [all]
`;

describe('postgres connector', () => {
  let source: RunningDatabase;
  let client: pg.Client;
  let root: string;
  let s: TestServer;
  const syncs: SyncContext[] = [];

  before(async () => {
    source = await startPostgres();
    client = new pg.Client({ host: source.host, port: source.port, user: source.user, password: source.password, database: source.database });
    await client.connect();
    await client.query(`
      CREATE TABLE public.orders (id BIGINT PRIMARY KEY, customer TEXT, amount NUMERIC(12,2), updated_at TIMESTAMP(6), paid BOOLEAN, meta JSONB, ref UUID, placed DATE, at_tz TIMESTAMPTZ);
      INSERT INTO public.orders
        SELECT i, 'customer ' || i, (i * 1.25)::NUMERIC(12,2), TIMESTAMP '2024-01-01 00:00:00.000001' + i * INTERVAL '1 second', i % 2 = 0,
               jsonb_build_object('n', i), md5(i::text)::uuid, DATE '2024-01-01' + (i % 30), TIMESTAMPTZ '2024-01-01 00:00:00+00' + i * INTERVAL '1 minute'
        FROM generate_series(1, 1000) i;
      CREATE SCHEMA sales;
      CREATE TABLE sales.customers (id INTEGER, name VARCHAR(40), big BIGINT, score DOUBLE PRECISION);
      INSERT INTO sales.customers VALUES (1, 'Ada', 9007199254740993, 1.5), (2, NULL, NULL, NULL);
      CREATE TABLE public.events (id INTEGER PRIMARY KEY, updated_at TIMESTAMP(6) NOT NULL);
      INSERT INTO public.events SELECT i, TIMESTAMP '2024-06-01' + i * INTERVAL '1 millisecond' FROM generate_series(1, 20000) i;
    `);
    root = makeProject({ 'project.yml': PROJECT_YML });
    s = await startServer(root);
    s.app.hookPoint(TABLE_SYNCED)!.tapPromise('test-probe', async (sync: SyncContext) => {
      syncs.push({ ...sync });
    });
  });

  after(async () => {
    await s?.close();
    await client?.end();
    await source?.stop();
  });

  const config = () => ({ host: source.host, port: source.port, database: source.database, user: source.user, password: source.password });
  const count = async (sql: string) => Number((await s.request('POST', '/api/query', { sql })).body.rows[0][0]);

  it('lists postgres among the available types with its secret parameter', async () => {
    const r = await s.request('GET', '/api/connectors/available');
    assert.equal(r.status, 200);
    const pgType = r.body.find((t: { type: string }) => t.type === 'postgres');
    assert.deepEqual(pgType.secret_params, ['password']);
    assert.ok(pgType.params.properties.host);
    for (const t of ['postgres', 'mysql', 'csv', 'webhook']) assert.ok(r.body.some((x: { type: string }) => x.type === t), t);
  });

  it('tests and discovers: tables of every schema with DuckDB types', async () => {
    const t = await s.request('POST', '/api/connectors/test', { connector_type: 'postgres', config: config() });
    assert.equal(t.status, 200);
    assert.equal(t.body.ok, true, t.text);
    const d = await s.request('POST', '/api/connectors/discover', { connector_type: 'postgres', config: config() });
    assert.equal(d.status, 200);
    const orders = d.body.tables.find((x: { name: string }) => x.name === 'public.orders');
    assert.deepEqual(
      orders.columns.map((c: { name: string; type: string }) => `${c.name} ${c.type}`),
      ['id BIGINT', 'customer VARCHAR', 'amount DECIMAL(12,2)', 'updated_at TIMESTAMP', 'paid BOOLEAN', 'meta JSON', 'ref UUID', 'placed DATE', 'at_tz TIMESTAMPTZ'],
    );
    assert.ok(d.body.tables.some((x: { name: string }) => x.name === 'sales.customers'));
    assert.ok(!JSON.stringify(d.body).includes(source.password));
  });

  it('setup writes the script, edits project.yml in place and keeps the password in .env only', async () => {
    const r = await s.request('POST', '/api/connectors/setup', {
      connector_type: 'postgres',
      connection_name: 'shop_db',
      config: config(),
      tables: ['public.orders', 'sales.customers', { name: 'public.events', cdc_mode: 'high_watermark', cdc_column: 'updated_at' }],
      target_schema: 'landing',
      schedule: '0 * * * *',
    });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.script_path, 'ingest/connector_shop_db.ts');
    assert.deepEqual(r.body.secrets, ['SHOP_DB_PASSWORD']);
    assert.ok(!r.text.includes(source.password), 'response holds the password');

    const yml = fs.readFileSync(path.join(root, 'project.yml'), 'utf8');
    assert.ok(!yml.includes(source.password), 'project.yml holds the password');
    assert.match(yml, /password: \$\{SHOP_DB_PASSWORD\}/);
    assert.ok(yml.startsWith('# The shop warehouse: comments and key order must survive a setup.\nname: pgtest\n'), yml);
    assert.match(yml, /path: warehouse\.duckdb +# next to project\.yml/);
    assert.match(yml, /# Streams run in order\.\nstreams:\n {2}nightly:/);
    assert.match(yml, /sync_shop_db:/);
    assert.match(yml, /- ingest:\n\s+- connector_shop_db/);
    assert.match(yml, /cdc_mode: high_watermark\n\s+cdc_column: updated_at/);
    assert.equal(fs.readFileSync(path.join(root, '.env'), 'utf8').trim(), `SHOP_DB_PASSWORD=${source.password}`);

    const script = fs.readFileSync(path.join(root, 'ingest', 'connector_shop_db.ts'), 'utf8');
    assert.ok(!script.includes(source.password));
    assert.match(script, /ctx\.connectors\.sync\("shop_db"\)/);
    assert.match(script, /INSERT INTO landing\.orders/);

    const again = await s.request('POST', '/api/connectors/setup', { connector_type: 'postgres', connection_name: 'shop_db', config: config(), tables: ['public.orders'] });
    assert.equal(again.status, 409);
    assert.equal(again.body.error.code, 'connector_exists');

    const list = await s.request('GET', '/api/connectors');
    assert.equal(list.status, 200);
    assert.equal(list.body[0].name, 'shop_db');
    assert.equal(list.body[0].params.password, '${SHOP_DB_PASSWORD}');
    assert.equal(list.body[0].script_exists, true);
  });

  it('syncs full refresh and high watermark tables with exact values', async () => {
    syncs.length = 0;
    const r = await s.request('POST', '/api/connectors/sync/shop_db');
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.status, 'success', r.text);
    const byTable = Object.fromEntries(r.body.results.map((x: { table: string }) => [x.table, x]));
    assert.equal(byTable['public.orders'].rows_synced, 1000);
    assert.equal(byTable['public.orders'].cdc_mode, 'full_refresh');
    assert.equal(byTable['sales.customers'].rows_synced, 2);
    assert.equal(byTable['public.events'].rows_synced, 20000);
    assert.equal(byTable['public.events'].watermark_before, null);
    assert.equal(byTable['public.events'].watermark_after, '2024-06-01 00:00:20');

    const row = await s.request('POST', '/api/query', {
      sql: "SELECT id, customer, amount::VARCHAR, updated_at::VARCHAR, paid, meta->>'n', ref::VARCHAR, placed::VARCHAR, at_tz AT TIME ZONE 'UTC' FROM landing.orders WHERE id = 7",
    });
    assert.deepEqual(row.body.rows[0].slice(0, 8), [7, 'customer 7', '8.75', '2024-01-01 00:00:07.000001', false, '7', '8f14e45f-ceea-167a-5a36-dedd4bea2543', '2024-01-08']);
    const types = await s.request('POST', '/api/query', { sql: "SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = 'landing' AND table_name = 'orders' ORDER BY ordinal_position" });
    assert.deepEqual(types.body.rows.map((x: string[]) => x[1]), ['BIGINT', 'VARCHAR', 'DECIMAL(12,2)', 'TIMESTAMP', 'BOOLEAN', 'JSON', 'UUID', 'DATE', 'TIMESTAMP WITH TIME ZONE']);
    const big = await s.request('POST', '/api/query', { sql: 'SELECT big::VARCHAR, name FROM landing.customers ORDER BY id' });
    assert.deepEqual(big.body.rows, [['9007199254740993', 'Ada'], [null, null]]);

    assert.deepEqual(syncs.map((x) => `${x.connector}.${x.table}:${x.status}:${x.rowsSynced}`).sort(), ['shop_db.public.events:success:20000', 'shop_db.public.orders:success:1000', 'shop_db.sales.customers:success:2']);

    const cdc = await s.request('GET', '/api/cdc/shop_db');
    assert.equal(cdc.status, 200);
    const ev = cdc.body.tables.find((x: { table_name: string }) => x.table_name === 'public.events');
    assert.equal(ev.cdc_mode, 'high_watermark');
    assert.equal(ev.watermark_value, '2024-06-01 00:00:20');
    assert.equal(ev.rows_synced, 20000);
  });

  it('high watermark: three runs with new rows in between lose and duplicate nothing', async () => {
    for (let run = 0; run < 3; run++) {
      const from = 20001 + run * 100;
      await client.query(`INSERT INTO public.events SELECT i, TIMESTAMP '2024-06-01' + i * INTERVAL '1 millisecond' FROM generate_series($1::int, $2::int) i`, [from, from + 99]);
      const r = await s.request('POST', '/api/connectors/sync/shop_db');
      const ev = r.body.results.find((x: { table: string }) => x.table === 'public.events');
      assert.equal(ev.status, 'success', r.text);
      assert.equal(ev.rows_synced, 100, `run ${run}`);
    }
    // A run with nothing new appends nothing and keeps the watermark.
    const idle = await s.request('POST', '/api/connectors/sync/shop_db');
    const ev = idle.body.results.find((x: { table: string }) => x.table === 'public.events');
    assert.equal(ev.rows_synced, 0);
    assert.equal(ev.watermark_after, ev.watermark_before);
    assert.equal(await count('SELECT count(*) FROM landing.events'), 20300);
    assert.equal(await count('SELECT count(DISTINCT id) FROM landing.events'), 20300);
    assert.equal(await count('SELECT max(id) FROM landing.events'), 20300);
  });

  it('a sync that fails midway changes neither the target nor the CDC state', async () => {
    const stateBefore = (await s.request('GET', '/api/cdc/shop_db')).body.tables.find((x: { table_name: string }) => x.table_name === 'public.events');
    // 20,000 new rows, and a source query that fails at the 15,000th of them: the first batch
    // (10,000 rows) is already appended inside the transaction when the error comes.
    await client.query(`INSERT INTO public.events SELECT i, TIMESTAMP '2024-06-01' + i * INTERVAL '1 millisecond' FROM generate_series(20301, 40300) i`);
    const yml = fs.readFileSync(path.join(root, 'project.yml'), 'utf8');
    fs.writeFileSync(
      path.join(root, 'project.yml'),
      yml.replace('cdc_column: updated_at', 'cdc_column: updated_at\n        source_query: SELECT id, updated_at, 1 / (CASE WHEN id = 35300 THEN 0 ELSE 1 END) AS one FROM public.events'),
    );
    const r = await s.request('POST', '/api/connectors/sync/shop_db');
    assert.equal(r.status, 200);
    const ev = r.body.results.find((x: { table: string }) => x.table === 'public.events');
    assert.equal(ev.status, 'error');
    assert.match(ev.error, /division by zero/);
    assert.equal(ev.rows_synced, 0);
    assert.equal(r.body.status, 'error');
    assert.equal(await count('SELECT count(*) FROM landing.events'), 20300);
    const stateAfter = (await s.request('GET', '/api/cdc/shop_db')).body.tables.find((x: { table_name: string }) => x.table_name === 'public.events');
    assert.deepEqual(stateAfter, stateBefore);
    const failed = syncs.filter((x) => x.table === 'public.events' && x.status === 'error');
    assert.equal(failed.length, 1);

    // The cause removed, the next sync takes exactly the rows the failed one did not keep.
    await client.query('DELETE FROM public.events WHERE id = 35300');
    const ok = await s.request('POST', '/api/connectors/sync/shop_db');
    const ev2 = ok.body.results.find((x: { table: string }) => x.table === 'public.events');
    assert.equal(ev2.status, 'success', ok.text);
    assert.equal(ev2.rows_synced, 19999);
    assert.equal(await count('SELECT count(*) FROM landing.events'), 40299);
    assert.equal(await count('SELECT count(DISTINCT id) FROM landing.events'), 40299);
    const health = await s.request('GET', '/api/connectors/health');
    assert.equal(health.body[0].status, 'success');
    assert.equal(typeof health.body[0].duration_ms, 'number');
  });

  it('reset forgets the watermark and the next sync is a full re-sync without duplicates', async () => {
    const r = await s.request('POST', '/api/cdc/shop_db/reset', { table: 'public.events' });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.tables_reset, 1);
    const state = (await s.request('GET', '/api/cdc/shop_db')).body.tables;
    assert.ok(!state.some((x: { table_name: string }) => x.table_name === 'public.events'));
    const sync = await s.request('POST', '/api/connectors/sync/shop_db');
    const ev = sync.body.results.find((x: { table: string }) => x.table === 'public.events');
    assert.equal(ev.watermark_before, null);
    assert.equal(ev.rows_synced, 40299);
    assert.equal(await count('SELECT count(*) FROM landing.events'), 40299);
    assert.equal(await count('SELECT count(DISTINCT id) FROM landing.events'), 40299);
    const unknown = await s.request('POST', '/api/cdc/shop_db/reset', { table: 'nope' });
    assert.equal(unknown.status, 400);
    assert.equal((await s.request('POST', '/api/cdc/nope/reset')).status, 404);
  });

  it('answers bad input with 4xx naming the field, and failed connections with their cause', async () => {
    const unknown = await s.request('POST', '/api/connectors/test', { connector_type: 'oracle', config: {} });
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body.error.code, 'unknown_connector_type');
    const missing = await s.request('POST', '/api/connectors/setup', { connector_type: 'postgres', connection_name: 'x', config: { host: 'h', user: 'u' } });
    assert.equal(missing.status, 400);
    assert.equal(missing.body.error.details.field, 'database');
    const wrongType = await s.request('POST', '/api/connectors/discover', { connector_type: 'postgres', config: { ...config(), port: 'five' } });
    assert.equal(wrongType.status, 400);
    assert.equal(wrongType.body.error.details.field, 'port');
    const badName = await s.request('POST', '/api/connectors/setup', { connector_type: 'postgres', connection_name: '1 bad', config: config() });
    assert.equal(badName.status, 400);
    assert.equal(badName.body.error.details.field, 'connection_name');

    const closed = await new Promise<number>((resolve) => {
      const srv = net.createServer();
      srv.listen(0, '127.0.0.1', () => {
        const port = (srv.address() as net.AddressInfo).port;
        srv.close(() => resolve(port));
      });
    });
    const refused = await s.request('POST', '/api/connectors/test', { connector_type: 'postgres', config: { ...config(), port: closed } });
    assert.deepEqual(refused.body, { ok: false, message: 'connection refused' });
    const auth = await s.request('POST', '/api/connectors/test', { connector_type: 'postgres', config: { ...config(), password: 'wrong-password' } });
    assert.deepEqual(auth.body, { ok: false, message: 'authentication failed' });
    const dns = await s.request('POST', '/api/connectors/test', { connector_type: 'postgres', config: { ...config(), host: 'no-such-host.invalid' } });
    assert.equal(dns.body.ok, false);
    assert.equal(dns.body.message, 'host not found');
    const setupRefused = await s.request('POST', '/api/connectors/setup', { connector_type: 'postgres', connection_name: 'down', config: { ...config(), port: closed } });
    assert.equal(setupRefused.status, 400);
    assert.equal(setupRefused.body.error.code, 'connection_failed');
    assert.match(setupRefused.body.error.message, /connection refused/);
    assert.ok(!fs.readFileSync(path.join(root, 'project.yml'), 'utf8').includes('down:'), 'a failed setup wrote project.yml');

    // A server that accepts and never answers: answered as timed out, not a hang.
    const silent = net.createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', () => resolve()));
    try {
      const t0 = Date.now();
      const hung = await s.request('POST', '/api/connectors/test', { connector_type: 'postgres', config: { ...config(), port: (silent.address() as net.AddressInfo).port, connect_timeout_seconds: 1 } });
      assert.equal(hung.body.ok, false);
      assert.equal(hung.body.message, 'timed out');
      assert.ok(Date.now() - t0 < 10_000);
    } finally {
      silent.close();
    }
    const missingTable = await s.request('POST', '/api/connectors/setup', { connector_type: 'postgres', connection_name: 'x2', config: config(), tables: ['public.nope'] });
    assert.equal(missingTable.status, 400);
    assert.equal(missingTable.body.error.code, 'connector_table_not_found');
  });

  it('regenerates and removes a connector: script, project.yml entries and its secret go, tables stay', async () => {
    fs.writeFileSync(path.join(root, 'ingest', 'connector_shop_db.ts'), '// edited by hand\n');
    const regen = await s.request('POST', '/api/connectors/regenerate/shop_db');
    assert.equal(regen.status, 200, regen.text);
    assert.match(fs.readFileSync(path.join(root, 'ingest', 'connector_shop_db.ts'), 'utf8'), /ctx\.connectors\.sync/);
    const del = await s.request('DELETE', '/api/connectors/shop_db');
    assert.equal(del.status, 200, del.text);
    assert.deepEqual(del.body.secrets_removed, ['SHOP_DB_PASSWORD']);
    assert.ok(!fs.existsSync(path.join(root, 'ingest', 'connector_shop_db.ts')));
    const yml = fs.readFileSync(path.join(root, 'project.yml'), 'utf8');
    assert.ok(!/shop_db/.test(yml), yml);
    assert.match(yml, /# Streams run in order\.\nstreams:\n {2}nightly:/);
    assert.ok(!fs.readFileSync(path.join(root, '.env'), 'utf8').includes('SHOP_DB_PASSWORD'));
    assert.equal(await count('SELECT count(*) FROM landing.orders'), 1000);
    assert.equal((await s.request('DELETE', '/api/connectors/shop_db')).status, 404);
    assert.equal((await s.request('POST', '/api/connectors/sync/shop_db')).status, 404);
  });
});
