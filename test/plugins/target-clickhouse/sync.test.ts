/**
 * Connector syncs on a ClickHouse environment (a real server, test/support/clickhouse.ts): the
 * csv type's rows land in the target's tables (schema = ClickHouse database), a full refresh
 * replaces the table, a high-watermark sync appends the rows past the greatest cursor value the
 * target holds, the local file gets the sync's history and state but no landing table, and a
 * mode the target lacks is refused naming it. The postgres type (a real PostgreSQL 15) covers a
 * reader's own batches: NUMERIC as an exact Decimal, a TIMESTAMP cursor. Skipped, saying why, only when the Debian packages
 * are absent.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { WAREHOUSE_TARGET_SERVICE, type WarehouseTargetService } from '../../../sdk/index.js';
import pg from 'pg';
import { startServer, type TestServer } from '../../helpers.js';
import { clickhouseTestProject } from '../../support/clickhouse-project.js';
import { startPostgres } from '../../support/databases.js';
import { clickhouseUnavailable, startClickHouseCluster, type RunningClickHouseCluster } from '../../support/clickhouse.js';

const missing = clickhouseUnavailable();
if (missing) console.log(`# skipped: the ClickHouse tests need the Debian packages: ${missing}`);

const outcome = (body: { results: Array<{ table: string; status: string; rows_synced: number; error: string | null }> }) =>
  Object.fromEntries(body.results.map((r) => [r.table, r.error ?? `${r.status}:${r.rows_synced}`]));

describe('connector syncs to a ClickHouse target', { skip: missing, timeout: 300_000 }, () => {
  let ch: RunningClickHouseCluster;
  let root: string;
  let server: TestServer;
  before(async () => {
    ch = await startClickHouseCluster();
    root = clickhouseTestProject(ch, {
      'data/exports/products.csv': 'id,name\n1,Pen\n2,Book\n',
      'data/exports/events.csv': 'id,kind,updated\n1,view,2024-01-01 10:00:00\n2,buy,2024-01-02 11:00:00\n3,view,2024-01-02 12:30:00\n',
    });
    server = await startServer(root, { env: 'single' });
  });
  after(async () => {
    await server?.close();
    await ch?.stop();
  });
  const onTarget = async (sql: string) => (await server.app.services.get<WarehouseTargetService>(WAREHOUSE_TARGET_SERVICE.id).target()).query(sql);
  const count = async (table: string) => Number((await onTarget(`SELECT count() FROM ${table}`)).rows[0]![0]);

  it('a full refresh replaces the table on the target, a high-watermark sync appends the newer rows; the local file holds no landing table', async () => {
    const setup = await server.request('POST', '/api/connectors/setup', {
      connector_type: 'csv',
      connection_name: 'exports',
      config: { path: 'data/exports' },
      tables: [{ name: 'products', cdc_mode: 'full_refresh' }, { name: 'events', cdc_mode: 'high_watermark', cdc_column: 'updated' }],
      target_schema: 'raw',
    });
    assert.equal(setup.status, 200, setup.text);
    const first = await server.request('POST', '/api/connectors/sync/exports');
    assert.equal(first.status, 200, first.text);
    assert.deepEqual(outcome(first.body), { products: 'success:2', events: 'success:3' });
    assert.deepEqual([await count('raw.products'), await count('raw.events')], [2, 3]);
    assert.equal(first.body.results[1].watermark_after, '2024-01-02 12:30:00');

    fs.writeFileSync(path.join(root, 'data/exports/products.csv'), 'id,name\n1,Pen\n2,Book\n3,Ink\n');
    fs.appendFileSync(path.join(root, 'data/exports/events.csv'), '4,buy,2024-01-03 09:00:00\n5,view,2024-01-03 09:30:00\n');
    const second = await server.request('POST', '/api/connectors/sync/exports');
    assert.deepEqual(outcome(second.body), { products: 'success:3', events: 'success:2' });
    assert.deepEqual([second.body.results[1].watermark_before, second.body.results[1].watermark_after], ['2024-01-02 12:30:00', '2024-01-03 09:30:00']);
    // Replaced, not appended; appended once, not duplicated.
    assert.deepEqual((await onTarget('SELECT name FROM raw.products ORDER BY id')).rows, [['Pen'], ['Book'], ['Ink']]);
    assert.deepEqual((await onTarget('SELECT id FROM raw.events ORDER BY id')).rows.map((r) => String(r[0])), ['1', '2', '3', '4', '5']);
    const again = await server.request('POST', '/api/connectors/sync/exports');
    assert.deepEqual(outcome(again.body), { products: 'success:3', events: 'success:0' });
    assert.equal(await count('raw.events'), 5);

    // The rows are on the target only; the sync's history and CDC state are in the local file.
    assert.equal(await server.app.db.catalog.exists('raw', 'products'), false);
    assert.equal(await server.app.db.catalog.exists('raw', 'events'), false);
    const state = (await server.request('GET', '/api/cdc/exports')).body.tables;
    assert.equal(state.find((t: { table_name: string }) => t.table_name === 'events').watermark_value, '2024-01-03 09:30:00');
    const history = await server.app.db.value<bigint>("SELECT count(*) FROM _service.connector_syncs WHERE connector_name = 'exports'");
    assert.equal(Number(history), 3);
  });

  it('a target table lost since the last sync (dropped, restored from an older copy) is read again from what it holds, never left with a gap', async () => {
    const target = await server.app.services.get<WarehouseTargetService>(WAREHOUSE_TARGET_SERVICE.id).target();
    // An older copy of the table put back: the rows up to the first sync's watermark.
    await target.command('RENAME TABLE raw.events TO raw.events_full');
    await target.command('CREATE TABLE raw.events AS raw.events_full');
    await target.command('INSERT INTO raw.events SELECT * FROM raw.events_full WHERE id <= 3');
    await target.command('DROP TABLE raw.events_full');
    const afterRestore = await server.request('POST', '/api/connectors/sync/exports');
    assert.deepEqual(outcome(afterRestore.body), { products: 'success:3', events: 'success:2' });
    assert.equal(afterRestore.body.results[1].watermark_before, '2024-01-02 12:30:00');
    await target.command('DROP TABLE raw.events');
    const afterDrop = await server.request('POST', '/api/connectors/sync/exports');
    assert.deepEqual(outcome(afterDrop.body), { products: 'success:3', events: 'success:5' });
    assert.equal(afterDrop.body.results[1].watermark_before, null);
    assert.equal(await count('raw.events'), 5);
    // A reset of the table's CDC state is a full re-sync, as on the file: replaced, not appended.
    const reset = await server.request('POST', '/api/cdc/exports/reset', { table: 'events' });
    assert.equal(reset.status, 200, reset.text);
    const afterReset = await server.request('POST', '/api/connectors/sync/exports');
    assert.deepEqual(outcome(afterReset.body), { products: 'success:3', events: 'success:5' });
    assert.equal(await count('raw.events'), 5);
  });

  it('on the 2-shard cluster the rows land in a Distributed table over both shards, appended once', async () => {
    // Node 2 is also the cluster's second shard, where the tests above made raw.events: another database.
    const clustered = clickhouseTestProject(ch, { 'data/exports/events.csv': 'id,kind\n1,view\n2,buy\n3,view\n' });
    const prod = await startServer(clustered, { env: 'prod' });
    try {
      const setup = await prod.request('POST', '/api/connectors/setup', { connector_type: 'csv', connection_name: 'exports', config: { path: 'data/exports' }, tables: [{ name: 'events', cdc_mode: 'high_watermark', cdc_column: 'id' }], target_schema: 'lake' });
      assert.equal(setup.status, 200, setup.text);
      assert.deepEqual(outcome((await prod.request('POST', '/api/connectors/sync/exports')).body), { events: 'success:3' });
      fs.appendFileSync(path.join(clustered, 'data/exports/events.csv'), '4,buy\n5,view\n');
      assert.deepEqual(outcome((await prod.request('POST', '/api/connectors/sync/exports')).body), { events: 'success:2' });
      const target = await prod.app.services.get<WarehouseTargetService>(WAREHOUSE_TARGET_SERVICE.id).target();
      assert.deepEqual((await target.query("SELECT engine FROM system.tables WHERE database = 'lake' AND name = 'events'")).rows, [['Distributed']]);
      assert.deepEqual((await target.query('SELECT count(), uniqExact(id) FROM lake.events')).rows.map((r) => r.map(String)), [['5', '5']]);
      assert.equal(await prod.app.db.catalog.exists('lake', 'events'), false);
    } finally {
      await prod.close();
    }
  });

  it('a type that streams its own batches (postgres) lands them the same way, its timestamps as the watermark', async () => {
    const source = await startPostgres();
    const client = new pg.Client({ host: source.host, port: source.port, user: source.user, password: source.password, database: source.database });
    await client.connect();
    try {
      await client.query(`CREATE TABLE public.prices (id INTEGER, amount NUMERIC(10,2), updated_at TIMESTAMP);
        INSERT INTO public.prices SELECT i, i * 1.5, TIMESTAMP '2024-01-01' + i * INTERVAL '1 minute' FROM generate_series(1, 3000) i;`);
      const pgRoot = clickhouseTestProject(ch, {});
      fs.appendFileSync(
        path.join(pgRoot, 'project.yml'),
        `connections:\n  src:\n    type: postgres\n    host: ${source.host}\n    port: ${source.port}\n    database: ${source.database}\n    user: ${source.user}\n    password: \${SRC_PASSWORD}\n` +
          'connectors:\n  src:\n    type: postgres\n    target_schema: pg\n    tables:\n      - name: public.prices\n        cdc_mode: high_watermark\n        cdc_column: updated_at\n',
      );
      fs.appendFileSync(path.join(pgRoot, '.env'), `SRC_PASSWORD=${source.password}\n`);
      const pgServer = await startServer(pgRoot, { env: 'single' });
      try {
        const first = await pgServer.request('POST', '/api/connectors/sync/src');
        assert.deepEqual(outcome(first.body), { 'public.prices': 'success:3000' });
        await client.query(`INSERT INTO public.prices SELECT i, i * 1.5, TIMESTAMP '2024-01-01' + i * INTERVAL '1 minute' FROM generate_series(3001, 3010) i`);
        const second = await pgServer.request('POST', '/api/connectors/sync/src');
        assert.deepEqual(outcome(second.body), { 'public.prices': 'success:10' });
        assert.equal(second.body.results[0].watermark_before, '2024-01-03 02:00:00');
        const target = await pgServer.app.services.get<WarehouseTargetService>(WAREHOUSE_TARGET_SERVICE.id).target();
        assert.deepEqual((await target.query('SELECT count(), uniqExact(id), toString(sum(amount)) FROM pg.prices')).rows.map((r) => r.map(String)), [['3010', '3010', '6797332.50']]);
        // NUMERIC stays a Decimal on the target, its values exact.
        assert.deepEqual((await target.query("SELECT type FROM system.columns WHERE database = 'pg' AND table = 'prices' AND name = 'amount'")).rows, [['Nullable(Decimal(10, 2))']]);
      } finally {
        await pgServer.close();
      }
    } finally {
      await client.end();
      await source.stop();
    }
  });

  it('a cdc_mode the target lacks is refused with not_on_target naming it, and nothing lands', async () => {
    fs.mkdirSync(path.join(root, 'data/tracked'), { recursive: true });
    fs.writeFileSync(path.join(root, 'data/tracked/stock.csv'), 'sku,qty\nA,1\n');
    const setup = await server.request('POST', '/api/connectors/setup', { connector_type: 'csv', connection_name: 'tracked', config: { path: 'data/tracked' }, tables: [{ name: 'stock', cdc_mode: 'file_tracking' }], target_schema: 'raw' });
    assert.equal(setup.status, 200, setup.text);
    const sync = await server.request('POST', '/api/connectors/sync/tracked');
    assert.equal(sync.status, 400, sync.text);
    assert.equal(sync.body.error.code, 'not_on_target');
    assert.match(sync.body.error.message, /A connector sync with cdc_mode 'file_tracking' \(table 'stock'\) works on the local DuckDB file only; the environment 'single' builds into ClickHouse/);
    assert.equal((await onTarget("SELECT count() FROM system.tables WHERE database = 'raw' AND name = 'stock'")).rows[0]![0], '0');
    assert.equal(await server.app.db.catalog.exists('raw', 'stock'), false);
  });
});
