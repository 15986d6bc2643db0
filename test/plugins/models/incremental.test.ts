import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ModelsService, TransformSummary } from '../../../sdk/index.js';
import type { App } from '../../../kernel/app.js';
import { bootApp, makeProject } from '../../helpers.js';

const statusOf = (s: TransformSummary, model: string) => s.results.find((r) => r.model === model);

describe('incremental models', () => {
  let app: App;
  let models: ModelsService;
  let root: string;
  const write = (rel: string, text: string) => {
    fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    fs.writeFileSync(path.join(root, rel), text);
  };
  const rows = (sql: string) => app.db.all(sql);
  before(async () => {
    root = makeProject({});
    app = await bootApp(root);
    models = app.services.get<ModelsService>('models');
    await app.db.run(`CREATE SCHEMA raw; CREATE TABLE raw.events (id INTEGER, status VARCHAR, updated_at TIMESTAMP);
      INSERT INTO raw.events VALUES (1, 'new', '2024-01-01 00:00:00'), (2, 'new', '2024-01-01 00:00:00')`);
  });
  after(async () => app.close());

  it('merges new and changed rows on three runs, exact table each time', async () => {
    write(
      'transform/marts/events_merge.sql',
      `-- @config materialized=incremental, schema=marts, unique_key=id, incremental_strategy=merge
-- @config incremental_filter="updated_at > (SELECT coalesce(max(updated_at), TIMESTAMP '1970-01-01') FROM {{ this }})"
SELECT id, status, updated_at FROM raw.events
`,
    );
    const run = async () => {
      const s = await models.transform({ targets: ['events_merge'] });
      assert.equal(s.status, 'success', JSON.stringify(s));
      return rows('SELECT id, status, updated_at::VARCHAR AS updated_at FROM marts.events_merge ORDER BY id');
    };
    assert.deepEqual(await run(), [
      { id: 1, status: 'new', updated_at: '2024-01-01 00:00:00' },
      { id: 2, status: 'new', updated_at: '2024-01-01 00:00:00' },
    ]);
    // Run 2: row 2 changes, row 3 arrives; row 1 is older than the table's max, so the filter skips it.
    await app.db.run(`UPDATE raw.events SET status = 'paid', updated_at = '2024-01-02 00:00:00' WHERE id = 2;
      INSERT INTO raw.events VALUES (3, 'new', '2024-01-02 00:00:00')`);
    assert.deepEqual(await run(), [
      { id: 1, status: 'new', updated_at: '2024-01-01 00:00:00' },
      { id: 2, status: 'paid', updated_at: '2024-01-02 00:00:00' },
      { id: 3, status: 'new', updated_at: '2024-01-02 00:00:00' },
    ]);
    // Run 3: a row older than the watermark changes in the source: the filter leaves it alone (that is what a filter is for).
    await app.db.run(`UPDATE raw.events SET status = 'ignored' WHERE id = 1;
      UPDATE raw.events SET status = 'shipped', updated_at = '2024-01-03 00:00:00' WHERE id = 3;
      INSERT INTO raw.events VALUES (4, 'new', '2024-01-03 00:00:00')`);
    const third = await run();
    assert.deepEqual(third, [
      { id: 1, status: 'new', updated_at: '2024-01-01 00:00:00' },
      { id: 2, status: 'paid', updated_at: '2024-01-02 00:00:00' },
      { id: 3, status: 'shipped', updated_at: '2024-01-03 00:00:00' },
      { id: 4, status: 'new', updated_at: '2024-01-03 00:00:00' },
    ]);
    // --full-refresh rebuilds from the whole source.
    const full = await models.transform({ targets: ['events_merge'], fullRefresh: true });
    assert.equal(full.status, 'success');
    assert.equal(await app.db.value("SELECT status FROM marts.events_merge WHERE id = 1"), 'ignored');
  });

  it('append adds only the filtered rows; delete+insert replaces every row of a key', async () => {
    write(
      'transform/marts/events_append.sql',
      `-- @config materialized=incremental, schema=marts, incremental_strategy=append, incremental_filter="id > (SELECT coalesce(max(id), 0) FROM {{ this }})"
SELECT id, status FROM raw.events
`,
    );
    write(
      'transform/marts/status_counts.sql',
      `-- @config materialized=incremental, schema=marts, unique_key=status, incremental_strategy=delete+insert
SELECT status, count(*) AS n FROM raw.events GROUP BY status
`,
    );
    const s1 = await models.transform({ targets: ['events_append', 'status_counts'] });
    assert.equal(s1.status, 'success', JSON.stringify(s1));
    assert.deepEqual(await rows('SELECT id FROM marts.events_append ORDER BY id'), [{ id: 1 }, { id: 2 }, { id: 3 }, { id: 4 }]);
    await app.db.run(`INSERT INTO raw.events VALUES (5, 'new', '2024-01-04 00:00:00')`);
    const s2 = await models.transform({ targets: ['events_append', 'status_counts'] });
    assert.equal(statusOf(s2, 'marts.events_append')!.extras?.rows_applied, 1);
    assert.deepEqual(await rows('SELECT id, status FROM marts.events_append ORDER BY id'), [
      { id: 1, status: 'ignored' },
      { id: 2, status: 'paid' },
      { id: 3, status: 'shipped' },
      { id: 4, status: 'new' },
      { id: 5, status: 'new' },
    ]);
    assert.deepEqual(await rows('SELECT status, n::INTEGER AS n FROM marts.status_counts ORDER BY status'), [
      { status: 'ignored', n: 1 },
      { status: 'new', n: 2 },
      { status: 'paid', n: 1 },
      { status: 'shipped', n: 1 },
    ]);
  });

  it('a failing run leaves the table as it was (one transaction), and on_schema_change acts on new columns', async () => {
    const before = await rows('SELECT * FROM marts.events_append ORDER BY id');
    // The new row makes the query fail half-way (a cast error), after the filter matched rows.
    write(
      'transform/marts/events_append.sql',
      `-- @config materialized=incremental, schema=marts, incremental_strategy=append, incremental_filter="id > (SELECT coalesce(max(id), 0) FROM {{ this }})"
SELECT id, CASE WHEN id = 6 THEN CAST('boom' AS INTEGER)::VARCHAR ELSE status END AS status FROM raw.events
`,
    );
    await app.db.run(`INSERT INTO raw.events VALUES (6, 'new', '2024-01-05 00:00:00')`);
    const failed = await models.transform({ targets: ['events_append'] });
    assert.equal(failed.status, 'error');
    assert.match(statusOf(failed, 'marts.events_append')!.error!, /transform\/marts\/events_append\.sql: .*boom/i);
    assert.deepEqual(await rows('SELECT * FROM marts.events_append ORDER BY id'), before);

    // A new column under on_schema_change=fail is refused, and nothing changes.
    write(
      'transform/marts/events_append.sql',
      `-- @config materialized=incremental, schema=marts, incremental_strategy=append, incremental_filter="id > (SELECT coalesce(max(id), 0) FROM {{ this }})"
SELECT id, status, updated_at FROM raw.events
`,
    );
    const refused = await models.transform({ targets: ['events_append'] });
    assert.match(statusOf(refused, 'marts.events_append')!.error!, /columns changed \(\+updated_at TIMESTAMP\) and on_schema_change=fail/);
    assert.deepEqual(await rows('SELECT * FROM marts.events_append ORDER BY id'), before);

    write(
      'transform/marts/events_append.sql',
      `-- @config materialized=incremental, schema=marts, incremental_strategy=append, on_schema_change=append_new_columns
-- @config incremental_filter="id > (SELECT coalesce(max(id), 0) FROM {{ this }})"
SELECT id, status, updated_at FROM raw.events
`,
    );
    const added = await models.transform({ targets: ['events_append'] });
    assert.equal(added.status, 'success', JSON.stringify(added));
    assert.deepEqual(await rows('SELECT id, status, updated_at::VARCHAR AS updated_at FROM marts.events_append WHERE id >= 5 ORDER BY id'), [
      { id: 5, status: 'new', updated_at: null },
      { id: 6, status: 'new', updated_at: '2024-01-05 00:00:00' },
    ]);

    // sync_all_columns also drops a column the query no longer returns.
    write(
      'transform/marts/events_append.sql',
      `-- @config materialized=incremental, schema=marts, incremental_strategy=append, on_schema_change=sync_all_columns
-- @config incremental_filter="id > (SELECT coalesce(max(id), 0) FROM {{ this }})"
SELECT id, updated_at FROM raw.events
`,
    );
    await app.db.run(`INSERT INTO raw.events VALUES (7, 'new', '2024-01-06 00:00:00')`);
    const synced = await models.transform({ targets: ['events_append'] });
    assert.equal(synced.status, 'success', JSON.stringify(synced));
    assert.deepEqual(
      (await rows(`SELECT column_name FROM duckdb_columns() WHERE schema_name = 'marts' AND table_name = 'events_append' ORDER BY column_index`)).map((r) => r.column_name),
      ['id', 'updated_at'],
    );
    assert.equal(await app.db.value('SELECT count(*)::INTEGER FROM marts.events_append'), 7);
  });

  it('refuses unknown @config keys and strategies, and merge without unique_key, naming file and line', async () => {
    write('transform/marts/bad_incr.sql', `-- @config materialized=incremental, schema=marts\n-- @config incremental_strategy=merge, unique_kye=id\nSELECT 1 AS id\n`);
    await assert.rejects(models.list(), (e: any) => {
      assert.equal(e.code, 'invalid_config');
      assert.match(e.message, /transform\/marts\/bad_incr\.sql:2: incremental_strategy=merge needs unique_key/);
      assert.match(e.message, /transform\/marts\/bad_incr\.sql:2: unknown @config key 'unique_kye'/);
      return true;
    });
    write('transform/marts/bad_incr.sql', `-- @config materialized=incremental, schema=marts, unique_key=id, incremental_strategy=upsert\nSELECT 1 AS id\n`);
    await assert.rejects(models.list(), /bad_incr\.sql:1: incremental_strategy must be one of 'append', 'merge', 'delete\+insert', got 'upsert'/);
    write('transform/marts/bad_incr.sql', `-- @config materialized=snapshot, schema=marts\nSELECT 1 AS id\n`);
    await assert.rejects(models.list(), (e: any) => e.code === 'invalid_materialization' && /materialized=scd2/.test(e.message));
    write('transform/marts/bad_incr.sql', `-- @config materialized=table, schema=marts, unique_key=id, updated_at=ts\nSELECT 1 AS id\n`);
    await assert.rejects(models.list(), /bad_incr\.sql:1: @config updated_at applies to materialized=scd2 only \(this model is table\)/);
    fs.rmSync(path.join(root, 'transform/marts/bad_incr.sql'));
    assert.ok((await models.list()).length > 0);
  });
});

describe('scd2 models', () => {
  let app: App;
  let models: ModelsService;
  let root: string;
  before(async () => {
    root = makeProject({
      'transform/history/customers_history.sql': `-- @config materialized=scd2, schema=history, unique_key=id, strategy=timestamp, updated_at=updated_at, hard_deletes=invalidate
SELECT id, tier, updated_at FROM raw.customers
`,
      'transform/history/plans_history.sql': `-- @config materialized=scd2, schema=history, unique_key=id, strategy=check, check_cols=price
SELECT id, price, note FROM raw.plans
`,
    });
    app = await bootApp(root);
    models = app.services.get<ModelsService>('models');
    await app.db.run(`CREATE SCHEMA raw;
      CREATE TABLE raw.customers (id INTEGER, tier VARCHAR, updated_at TIMESTAMP);
      INSERT INTO raw.customers VALUES (1, 'free', '2024-01-01'), (2, 'free', '2024-01-01');
      CREATE TABLE raw.plans (id INTEGER, price INTEGER, note VARCHAR);
      INSERT INTO raw.plans VALUES (1, 10, 'a'), (2, 20, 'b')`);
  });
  after(async () => app.close());

  it('keeps the history of two changes (timestamp strategy, hard deletes invalidated)', async () => {
    const history = () =>
      app.db.all(
        `SELECT id, tier, valid_from::VARCHAR AS valid_from, valid_to::VARCHAR AS valid_to, is_current FROM history.customers_history ORDER BY id, valid_from`,
      );
    assert.equal((await models.transform({})).status, 'success');
    assert.deepEqual(await history(), [
      { id: 1, tier: 'free', valid_from: '2024-01-01 00:00:00', valid_to: null, is_current: true },
      { id: 2, tier: 'free', valid_from: '2024-01-01 00:00:00', valid_to: null, is_current: true },
    ]);
    // Change 1: customer 1 upgrades.
    await app.db.run(`UPDATE raw.customers SET tier = 'pro', updated_at = '2024-02-01' WHERE id = 1`);
    assert.equal((await models.transform({})).status, 'success');
    // Change 2: customer 1 upgrades again, customer 2 is deleted, customer 3 arrives.
    await app.db.run(`UPDATE raw.customers SET tier = 'enterprise', updated_at = '2024-03-01' WHERE id = 1;
      DELETE FROM raw.customers WHERE id = 2; INSERT INTO raw.customers VALUES (3, 'free', '2024-03-01')`);
    const s = await models.transform({});
    assert.equal(s.status, 'success', JSON.stringify(s));
    const rows = await history();
    const closedAt = rows.find((r) => r.id === 2)!.valid_to;
    assert.ok(typeof closedAt === 'string' && closedAt.length > 0, 'the deleted customer is closed at the run time');
    assert.deepEqual(rows, [
      { id: 1, tier: 'free', valid_from: '2024-01-01 00:00:00', valid_to: '2024-02-01 00:00:00', is_current: false },
      { id: 1, tier: 'pro', valid_from: '2024-02-01 00:00:00', valid_to: '2024-03-01 00:00:00', is_current: false },
      { id: 1, tier: 'enterprise', valid_from: '2024-03-01 00:00:00', valid_to: null, is_current: true },
      { id: 2, tier: 'free', valid_from: '2024-01-01 00:00:00', valid_to: closedAt, is_current: false },
      { id: 3, tier: 'free', valid_from: '2024-03-01 00:00:00', valid_to: null, is_current: true },
    ]);
  });

  it('check strategy versions only changes of check_cols', async () => {
    const versions = () => app.db.all(`SELECT id, price, note, is_current FROM history.plans_history ORDER BY id, valid_from, is_current`);
    await app.db.run(`UPDATE raw.plans SET note = 'changed note only' WHERE id = 1`);
    assert.equal((await models.transform({ targets: ['plans_history'] })).status, 'success');
    assert.deepEqual(await versions(), [
      { id: 1, price: 10, note: 'a', is_current: true },
      { id: 2, price: 20, note: 'b', is_current: true },
    ]);
    await app.db.run(`UPDATE raw.plans SET price = 25 WHERE id = 2`);
    assert.equal((await models.transform({ targets: ['plans_history'] })).status, 'success');
    assert.deepEqual(await versions(), [
      { id: 1, price: 10, note: 'a', is_current: true },
      { id: 2, price: 20, note: 'b', is_current: false },
      { id: 2, price: 25, note: 'b', is_current: true },
    ]);
  });
});
