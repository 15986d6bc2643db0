/**
 * Issue 15: the cloud warehouses. `a` and `b` against a local fake of their HTTP SQL APIs that
 * answers Arrow IPC streams (a private DuckDB plays the warehouse); `c` against a real
 * PostgreSQL the test starts on 127.0.0.1 (Postgres wire through pg and a server-side cursor).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { warehouseAType, warehouseBType } from '../../../plugins/connectors-cloud/warehouse-arrow.js';
import { warehouseCType } from '../../../plugins/connectors-cloud/warehouse-pg.js';
import { startFakeWarehouse, type FakeWarehouse } from './fakes/arrow-warehouse.js';
import { startPostgres, type RunningPostgres } from './support/postgres.js';
import { freePort, readAll } from './support/read.js';
import { waitUntil } from '../../helpers.js';

describe('cloud_warehouse_a and cloud_warehouse_b (Arrow over HTTP)', () => {
  let wh: FakeWarehouse;
  let a: Record<string, unknown>;
  let b: Record<string, unknown>;
  before(async () => {
    wh = await startFakeWarehouse();
    await wh.db.run('CREATE SCHEMA analytics');
    await wh.db.run(`CREATE TABLE analytics.events AS
      SELECT i::BIGINT AS id, 'user_' || (i % 13) AS user_name, (i * 1.25)::DECIMAL(18,2) AS amount, i % 2 = 0 AS even,
             TIMESTAMP '2024-01-01 00:00:00' + to_seconds(i) AS created_at, DATE '2024-01-01' + (i % 30)::INTEGER AS day,
             CASE WHEN i % 10 = 0 THEN NULL ELSE i * 0.5 END::DOUBLE AS score
      FROM range(1, 5001) t(i)`);
    await wh.db.run('CREATE TABLE analytics.empty_one (x INTEGER)');
    a = { url: wh.url, token: wh.token, database: 'PROD', schema: 'analytics', warehouse: 'COMPUTE_WH' };
    b = { url: wh.url, api_key: wh.token, catalog: 'main', schema: 'analytics' };
  });
  after(async () => wh.close());

  it('tests the connection of both', async () => {
    assert.deepEqual(await warehouseAType.testConnection(a, AbortSignal.timeout(10_000)), { ok: true, message: `connected to ${new URL(wh.url).host}` });
    assert.equal((await warehouseBType.testConnection(b, AbortSignal.timeout(10_000))).ok, true);
  });

  it('discovers tables with types mapped to DuckDB', async () => {
    const tables = await warehouseAType.discover(a, AbortSignal.timeout(10_000));
    assert.deepEqual(tables.map((t) => t.name), ['empty_one', 'events']);
    assert.deepEqual(tables[1]!.columns, [
      { name: 'id', type: 'BIGINT' },
      { name: 'user_name', type: 'VARCHAR' },
      { name: 'amount', type: 'DECIMAL(18,2)' },
      { name: 'even', type: 'BOOLEAN' },
      { name: 'created_at', type: 'TIMESTAMP' },
      { name: 'day', type: 'DATE' },
      { name: 'score', type: 'DOUBLE' },
    ]);
    assert.deepEqual((await warehouseBType.discover(b, AbortSignal.timeout(10_000))).map((t) => t.name), ['empty_one', 'events']);
  });

  it('full read: every row, Arrow values converted, batches bounded', async () => {
    for (const [type, config] of [[warehouseAType, a], [warehouseBType, b]] as const) {
      const r = await readAll(type, config, { table: 'events', batchRows: 1000 });
      assert.equal(r.rows.length, 5000);
      assert.ok(r.batches >= 5);
      const first = r.objects[0]!;
      assert.equal(first.id, 1n);
      assert.equal(first.amount, '1.25');
      assert.equal(first.even, false);
      assert.equal((first.created_at as Date).toISOString(), '2024-01-01T00:00:01.000Z');
      assert.equal((first.day as Date).toISOString(), '2024-01-02T00:00:00.000Z');
      assert.equal(r.objects[9]!.score, null);
      assert.deepEqual(r.columns.map((c) => c.type), ['BIGINT', 'VARCHAR', 'DECIMAL(18,2)', 'BOOLEAN', 'TIMESTAMP', 'DATE', 'DOUBLE']);
    }
    assert.equal((await readAll(warehouseAType, a, { table: 'empty_one' })).rows.length, 0);
  });

  it('a: high-watermark reads return rows past the watermark, ordered by the column', async () => {
    const r = await readAll(warehouseAType, a, { table: 'events', cursor: { column: 'created_at', after: '2024-01-01 01:23:00' } });
    assert.equal(r.rows.length, 5000 - 4980);
    assert.equal(r.objects[0]!.id, 4981n);
    assert.match(wh.statements.at(-1)!, /WHERE "created_at" > '2024-01-01 01:23:00' ORDER BY "created_at"$/);
    const byId = await readAll(warehouseAType, a, { table: 'events', columns: ['id'], cursor: { column: 'id', after: 4998 } });
    assert.deepEqual(byId.rows, [[4999n], [5000n]]);
    await assert.rejects(readAll(warehouseBType, b, { table: 'events', cursor: { column: 'id', after: 1 } }), (e: any) => e.code === 'connector_param_invalid');
    assert.deepEqual(warehouseAType.cdcModes, ['full_refresh', 'high_watermark']);
    assert.deepEqual(warehouseBType.cdcModes, ['full_refresh']);
  });

  it('a custom source query (source_query) is read as a subquery, with the cursor applied to it', async () => {
    const r = await readAll(warehouseAType, a, { table: 'recent', sourceQuery: 'SELECT id, amount FROM analytics.events WHERE id > 4990;', cursor: { column: 'id', after: 4995 } });
    assert.deepEqual(r.rows, [[4996n, '6245.00'], [4997n, '6246.25'], [4998n, '6247.50'], [4999n, '6248.75'], [5000n, '6250.00']]);
  });

  it('quotes identifiers and watermarks: an injection attempt stays a value', async () => {
    const r = await readAll(warehouseAType, a, { table: 'events', cursor: { column: 'user_name', after: "user_9' OR 1=1 --" } });
    assert.ok(r.objects.every((o) => String(o.user_name) > "user_9' OR 1=1 --"));
    await assert.rejects(readAll(warehouseAType, a, { table: 'events"; DROP TABLE analytics.events; --' }), (e: any) => e.code === 'source_table_not_found');
    assert.equal(Number((await (await wh.db.runAndReadAll('SELECT count(*) FROM analytics.events')).getRows())[0]![0]), 5000);
  });

  it('answers clear causes: auth failed (401 and 403), refused, DNS', async () => {
    const badA = await warehouseAType.testConnection({ ...a, token: 'nope-token' }, AbortSignal.timeout(10_000));
    assert.equal(badA.ok, false);
    assert.match(badA.message, /authentication failed \(Invalid OAuth access token\.\)/);
    assert.ok(!badA.message.includes('nope-token'));
    const badB = await warehouseBType.testConnection({ ...b, api_key: 'x' }, AbortSignal.timeout(10_000));
    assert.match(badB.message, /authentication failed/);
    const port = await freePort();
    assert.deepEqual(await warehouseAType.testConnection({ ...a, url: `http://127.0.0.1:${port}` }, AbortSignal.timeout(10_000)), { ok: false, message: `127.0.0.1:${port}: connection refused` });
    assert.deepEqual(await warehouseBType.testConnection({ ...b, url: 'https://acct.no-such-host.invalid' }, AbortSignal.timeout(10_000)), { ok: false, message: 'acct.no-such-host.invalid: host not found' });
    await assert.rejects(readAll(warehouseAType, { ...a, token: 'nope' }, { table: 'events' }), (e: any) => e.code === 'remote_auth_failed' && e.status === 502);
  });

  it('a SQL error of the warehouse is answered as remote_request_failed with its message', async () => {
    await wh.db.run('CREATE TABLE analytics.broken (x INTEGER)');
    await assert.rejects(readAll(warehouseAType, a, { table: 'broken', columns: ['nope'] }), (e: any) => e.code === 'remote_request_failed' && /HTTP 422/.test(e.message));
  });
});

describe('cloud_warehouse_c (PostgreSQL wire, real server)', () => {
  let pg: RunningPostgres;
  let c: Record<string, unknown>;
  before(async () => {
    pg = await startPostgres();
    await pg.query('CREATE SCHEMA sales');
    await pg.query(`CREATE TABLE sales.orders (id bigint PRIMARY KEY, customer text, total numeric(12,2), qty integer, ratio double precision, flag boolean,
      placed_at timestamp, placed_tz timestamptz, placed_on date, doc jsonb, tags text[], ref uuid)`);
    await pg.query(`INSERT INTO sales.orders SELECT i, 'cust ' || (i % 17), i * 1.5, i % 5, i / 3.0, i % 2 = 0,
      TIMESTAMP '2024-01-01 00:00:00' + i * INTERVAL '1 minute', TIMESTAMPTZ '2024-01-01 00:00:00+00' + i * INTERVAL '1 minute', DATE '2024-01-01' + (i % 10),
      jsonb_build_object('i', i), ARRAY['x', 'y'], md5(i::text)::uuid FROM generate_series(1, 12345) i`);
    c = { host: pg.host, port: pg.port, database: pg.database, user: pg.user, password: pg.password, schema: 'sales', ssl: false };
  });
  after(async () => pg.stop());

  it('tests the connection and names the server', async () => {
    const r = await warehouseCType.testConnection(c, AbortSignal.timeout(10_000));
    assert.equal(r.ok, true);
    assert.match(r.message, /^connected: PostgreSQL 15/);
  });

  it('discovers tables with PostgreSQL types mapped to DuckDB', async () => {
    const [t] = await warehouseCType.discover(c, AbortSignal.timeout(10_000));
    assert.equal(t!.name, 'orders');
    assert.deepEqual(Object.fromEntries(t!.columns.map((x) => [x.name, x.type])), {
      id: 'BIGINT',
      customer: 'VARCHAR',
      total: 'DECIMAL(12,2)',
      qty: 'INTEGER',
      ratio: 'DOUBLE',
      flag: 'BOOLEAN',
      placed_at: 'TIMESTAMP',
      placed_tz: 'TIMESTAMPTZ',
      placed_on: 'DATE',
      doc: 'JSON',
      tags: 'JSON',
      ref: 'VARCHAR',
    });
  });

  it('reads through a server-side cursor in bounded batches; values in bulk-loadable form', async () => {
    const r = await readAll(warehouseCType, c, { table: 'orders', batchRows: 1000 });
    assert.equal(r.rows.length, 12345);
    assert.equal(r.batches, 13);
    const o = r.objects.find((x) => x.id === '7')!;
    assert.deepEqual(
      { ...o },
      { id: '7', customer: 'cust 7', total: '10.50', qty: 2, ratio: 7 / 3, flag: false, placed_at: '2024-01-01 00:07:00', placed_tz: '2024-01-01 00:07:00+00', placed_on: '2024-01-08', doc: '{"i":7}', tags: '["x","y"]', ref: o.ref },
    );
  });

  it('high-watermark reads: rows past the watermark in order, as a bound parameter', async () => {
    const r = await readAll(warehouseCType, c, { table: 'orders', columns: ['id', 'placed_at'], cursor: { column: 'placed_at', after: '2024-01-09 13:40:00' } });
    assert.deepEqual(r.rows.map((x) => x[0]), ['12341', '12342', '12343', '12344', '12345']);
    const weird = await readAll(warehouseCType, c, { table: 'orders', columns: ['id'], cursor: { column: 'customer', after: "cust 9' OR '1'='1" } });
    assert.ok(weird.rows.length < 12345);
  });

  it('a custom source query: columns typed from the server, the cursor applied to it', async () => {
    const r = await readAll(warehouseCType, c, { table: 'zero_qty', sourceQuery: 'SELECT id, total, placed_on FROM sales.orders WHERE qty = 0', cursor: { column: 'id', after: '12300' } });
    assert.deepEqual(r.columns, [{ name: 'id', type: 'BIGINT' }, { name: 'total', type: 'DECIMAL(12,2)' }, { name: 'placed_on', type: 'DATE' }]);
    assert.deepEqual(r.rows.map((x) => x[0]), ['12305', '12310', '12315', '12320', '12325', '12330', '12335', '12340', '12345']);
  });

  it('answers clear causes: authentication failed, connection refused, host not found, unknown table', async () => {
    const bad = await warehouseCType.testConnection({ ...c, password: 'wrong-pw' }, AbortSignal.timeout(10_000));
    assert.deepEqual(bad, { ok: false, message: `127.0.0.1:${pg.port}: authentication failed` });
    const port = await freePort();
    assert.deepEqual(await warehouseCType.testConnection({ ...c, port }, AbortSignal.timeout(10_000)), { ok: false, message: `127.0.0.1:${port}: connection refused` });
    assert.deepEqual(await warehouseCType.testConnection({ ...c, host: 'db.no-such-host.invalid' }, AbortSignal.timeout(10_000)), { ok: false, message: `db.no-such-host.invalid:${pg.port}: host not found` });
    await assert.rejects(readAll(warehouseCType, c, { table: 'nope' }), (e: any) => e.code === 'source_table_not_found');
    await assert.rejects(readAll(warehouseCType, { ...c, password: 'x' }, { table: 'orders' }), (e: any) => e.code === 'remote_auth_failed');
  });

  it('closes its connection when the read is abandoned midway', async () => {
    for await (const batch of warehouseCType.read(c, { table: 'orders', batchRows: 100, signal: AbortSignal.timeout(10_000) })) {
      assert.equal(batch.rows.length, 100);
      break;
    }
    const open = async () => Number((await pg.query("SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = 'dp-connectors'")).rows[0].n);
    await waitUntil(async () => (await open()) === 0, 'the reader to close its connection');
  });
});
