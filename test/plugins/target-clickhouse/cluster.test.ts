/**
 * The ClickHouse target against a real 2-shard cluster (two clickhouse-server 18.16 and
 * ZooKeeper on loopback ports, test/support/clickhouse.ts). Skipped, saying why, only when the
 * binaries are absent; CI installs them (scripts/setup-system.sh), so there they run.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { App } from '../../../kernel/app.js';
import { MODEL_END, MODEL_START, WAREHOUSE_TARGET_SERVICE, type ModelsService, type WarehouseTargetService } from '../../../sdk/index.js';
import { runCommand } from '../../../sdk/testing.js';
import { bootApp } from '../../helpers.js';
import { clickhouseTestProject } from '../../support/clickhouse-project.js';
import { clickhouseUnavailable, startClickHouseCluster, type RunningClickHouseCluster } from '../../support/clickhouse.js';
import { ClickHouseTarget } from '../../../plugins/target-clickhouse/client.js';
import { acquireRunLock } from '../../../plugins/target-clickhouse/lock.js';

const missing = clickhouseUnavailable();
if (missing) console.log(`# skipped: the ClickHouse cluster tests need the Debian packages: ${missing}`);

function project(ch: RunningClickHouseCluster, extra: Record<string, string> = {}): string {
  return clickhouseTestProject(ch, {
    'transform/marts/revenue.sql':
      '-- @config materialized=table, unique_key=customer_id\nSELECT c.id AS customer_id, c.name, coalesce(sum(o.amount), 0) AS revenue, count(o.id) AS orders\nFROM (SELECT id, name FROM seeds.customers) AS c LEFT JOIN staging.stg_orders AS o ON o.customer_id = c.id\nGROUP BY c.id, c.name\n',
    'transform/marts/orphans.sql': 'SELECT o.id, c.name FROM staging.stg_orders AS o LEFT JOIN seeds.customers AS c ON o.customer_id = c.id\n',
    'transform/marts/events.sql': '-- @config materialized=incremental, incremental_strategy=append, incremental_filter="id > (SELECT coalesce(max(id), 0) FROM {{ this }})"\nSELECT id, amount FROM staging.stg_orders\n',
    'transform/marts/latest.sql': '-- @config materialized=incremental, incremental_strategy=merge, unique_key=id\nSELECT id, amount FROM staging.stg_orders\n',
    'transform/marts/replaced.sql': '-- @config materialized=incremental, incremental_strategy=delete+insert, unique_key=id\nSELECT id, amount FROM staging.stg_orders\n',
    'transform/marts/native.sql': '-- @config materialized=view, dialect=clickhouse\n-- @depends_on marts.revenue\nSELECT customer_id, toString(revenue) AS r FROM marts.revenue\n',
    ...extra,
  });
}

describe('ClickHouse target on a 2-shard cluster', { skip: missing, timeout: 300_000 }, () => {
  let ch: RunningClickHouseCluster;
  let app: App;
  let direct: ClickHouseTarget;
  const apps: App[] = [];
  before(async () => {
    ch = await startClickHouseCluster();
    direct = await ClickHouseTarget.open({ type: 'clickhouse', url: ch.nodes[0]!.url, user: 'default', password: ch.password, database: 'shop', cluster: ch.cluster });
    app = await bootApp(project(ch), { env: 'prod' });
    apps.push(app);
  });
  after(async () => {
    for (const a of apps) await a.close();
    await direct?.close();
    await ch?.stop();
  });
  const rows = async (sql: string) => (await direct.query(sql)).rows;

  it('@clickhouse/client talks to the 18.16 server; capabilities come from its version', async () => {
    const caps = await direct.capabilities();
    assert.match(caps.version, /^18\.16/);
    assert.equal(caps.windowFunctions, false);
    assert.equal(caps.exchangeTables, false);
  });

  it('dp seed loads every seed in batches into Distributed tables spread over both shards', async () => {
    const r = await runCommand(app, ['seed', '--json']);
    assert.equal(r.code, 0, r.stderr + r.stdout);
    assert.deepEqual(await rows('SELECT count() FROM seeds.orders'), [['5']]);
    const engines = await rows("SELECT name, engine FROM system.tables WHERE database = 'seeds' ORDER BY name");
    assert.deepEqual(engines, [['customers', 'Distributed'], ['customers__dp_local', 'MergeTree'], ['orders', 'Distributed'], ['orders__dp_local', 'MergeTree']]);
    // Each shard holds part of the rows (rand() sharding over 5 rows may leave one shard empty: count both).
    const perShard = await Promise.all(ch.nodes.map(async (n) => {
      const t = await ClickHouseTarget.open({ type: 'clickhouse', url: n.url, password: ch.password });
      try {
        return Number((await t.query('SELECT count() FROM seeds.orders__dp_local')).rows[0]![0]);
      } finally {
        await t.close();
      }
    }));
    assert.equal(perShard[0]! + perShard[1]!, 5);
  });

  it('dp transform builds views, swapped tables and incremental models on the cluster, with DuckDB NULL semantics', async () => {
    const seen: string[] = [];
    const stops = [app.events.on(MODEL_START, (e) => seen.push(`start ${e.payload.model}`)), app.events.on(MODEL_END, (e) => seen.push(`end ${e.payload.model}`))];
    const r = await runCommand(app, ['transform', '--json']);
    stops.forEach((stop) => stop());
    assert.equal(r.code, 0, r.stderr + r.stdout);
    // Each model starts once the models it reads have ended, and the five that read only
    // staging.stg_orders and the seeds are built side by side (four at a time), not one by one.
    const at = (event: string) => seen.indexOf(event);
    const fanOut = ['marts.revenue', 'marts.orphans', 'marts.events', 'marts.latest', 'marts.replaced'];
    for (const m of fanOut) assert.ok(at(`start ${m}`) > at('end staging.stg_orders'), `${m} after its upstream: ${seen.join(', ')}`);
    assert.ok(at('start marts.native') > at('end marts.revenue'), seen.join(', '));
    const firstEnd = Math.min(...fanOut.map((m) => at(`end ${m}`)));
    assert.equal(fanOut.filter((m) => at(`start ${m}`) < firstEnd).length, 4, seen.join(', '));
    // The summary lists them in dependency order, whatever order they finished in.
    const order = (JSON.parse(r.stdout) as { results: Array<{ model: string }> }).results.map((x) => x.model);
    assert.ok(order.indexOf('staging.stg_orders') < order.indexOf('marts.revenue') && order.indexOf('marts.revenue') < order.indexOf('marts.native'), order.join(', '));
    assert.deepEqual(await rows('SELECT customer_id, name, revenue, orders FROM marts.revenue ORDER BY customer_id'), [
      // Int64 comes as text over JSON (ClickHouse quotes 64-bit integers).
      ['1', 'Ann', 30.5, '2'],
      ['2', 'Bob', 0, '0'],
      ['3', 'Cid', 1, '1'],
      ['4', 'Dee', 0, '0'],
    ]);
    // join_use_nulls: an order whose customer is missing has NULL, not '' (ClickHouse's default).
    assert.deepEqual(await rows('SELECT id, name FROM marts.orphans ORDER BY id'), [['1', 'Ann'], ['2', 'Ann'], ['4', 'Cid'], ['5', null]]);
    assert.deepEqual(await rows("SELECT engine FROM system.tables WHERE database = 'marts' AND name = 'revenue'"), [['Distributed']]);
    assert.deepEqual(await rows('SELECT count() FROM marts.native'), [['4']]);
  });

  it('a second transform swaps the table and applies each incremental strategy', async () => {
    await direct.command("INSERT INTO seeds.orders (id, customer_id, amount, status) VALUES (6, 2, 5, 'paid'), (1, 1, 99, 'paid')");
    // --force: rows written into a seed's table by something other than dp are not seen (as on DuckDB), so marts.revenue would be skipped.
    const r = await runCommand(app, ['transform', '--force', '--json']);
    assert.equal(r.code, 0, r.stderr + r.stdout);
    assert.deepEqual(await rows('SELECT revenue FROM marts.revenue WHERE customer_id = 2'), [[5]]);
    // append: only ids above the previous max (5): id 6 is appended, the second id 1 is not.
    assert.deepEqual(await rows('SELECT count(), max(id) FROM marts.events'), [['5', '6']]);
    // merge: one row per id (FINAL): ids 1, 2, 4, 5, 6.
    assert.deepEqual(await rows('SELECT count() FROM marts.latest'), [['5']]);
    // delete+insert: the two source rows of id 1 replace the old one.
    assert.deepEqual(await rows('SELECT count() FROM marts.replaced WHERE id = 1'), [['2']]);
    assert.deepEqual(await rows("SELECT count() FROM system.tables WHERE database = 'marts' AND name LIKE '%__dp_new%'"), [['0']]);
  });

  it('scd2, a window function and a function the server lacks are refused, naming model and construct; nothing downstream is built', async () => {
    const root = project(ch, {
      'transform/marts/hist.sql': '-- @config materialized=scd2, unique_key=id, strategy=check\nSELECT id, amount FROM staging.stg_orders\n',
      'transform/marts/ranked.sql': 'SELECT id, row_number() OVER (ORDER BY amount) AS rk FROM staging.stg_orders\n',
      'transform/marts/odd.sql': 'SELECT id, levenshtein(CAST(id AS VARCHAR), \'x\') AS d FROM staging.stg_orders\n',
      'transform/marts/after_odd.sql': 'SELECT id FROM marts.odd\n',
      'transform/marts/after_after_odd.sql': 'SELECT id FROM marts.after_odd\n',
    });
    const other = await bootApp(root, { env: 'prod' });
    apps.push(other);
    const summary = await other.services.get<ModelsService>('models').transform({ targets: ['marts.hist', 'marts.ranked', 'marts.odd', 'marts.after_odd', 'marts.after_after_odd'] });
    assert.equal(summary.status, 'error');
    // What is downstream of a failed model is not built, however far down (as on the DuckDB file).
    const status = Object.fromEntries(summary.results.map((r) => [r.model, r.status]));
    assert.deepEqual([status['marts.after_odd'], status['marts.after_after_odd']], ['upstream_failed', 'upstream_failed']);
    const out = summary.results.map((r) => r.error).join('\n');
    assert.match(out, /marts\.hist: materialized=scd2 is not supported on a ClickHouse target/);
    assert.match(out, /marts\.ranked: ClickHouse 18\.16\.1 cannot run window function row_number\(\) OVER/);
    assert.match(out, /marts\.odd: ClickHouse 18\.16\.1 cannot run the model's SELECT: Unknown function editDistance/);
  });

  it('the catalog comes from system.tables and system.columns, without dp internals', async () => {
    const rels = await direct.relations({ schema: 'marts' });
    assert.deepEqual(rels.map((r) => `${r.name}:${r.kind}`), ['events:table', 'latest:view', 'native:view', 'orphans:table', 'replaced:table', 'revenue:table']);
    const cols = await direct.columns({ schema: 'marts', table: 'revenue' });
    assert.deepEqual(cols.map((c) => [c.name, c.ordinal]), [['customer_id', 1], ['name', 2], ['revenue', 3], ['orders', 4]]);
  });

  it('a run lock held by one process refuses another until released', async () => {
    const held = await acquireRunLock(direct, 'transform');
    const other = await ClickHouseTarget.open({ type: 'clickhouse', url: ch.nodes[1]!.url, password: ch.password, database: 'shop', cluster: ch.cluster });
    try {
      await assert.rejects(acquireRunLock(other, 'transform', { holder: 'second' }), (e: any) => e.code === 'run_locked');
      const r = await runCommand(app, ['transform', '--json']);
      assert.equal(r.code, 1);
      assert.match(r.stdout + r.stderr, /Another dp process is running 'transform'/);
      await held.release();
      const again = await acquireRunLock(other, 'transform');
      await again.release();
    } finally {
      await other.close();
    }
  });

  it('interrupt by query id stops a running query on the server (KILL QUERY)', async () => {
    const running = direct.query('SELECT count() FROM system.numbers WHERE NOT ignore(sipHash64(number))', { queryId: 'dp_test_kill' });
    for (;;) {
      const seen = await rows("SELECT count() FROM system.processes WHERE query_id = 'dp_test_kill'");
      if (seen[0]![0] === '1') break;
    }
    await direct.interrupt('dp_test_kill');
    await assert.rejects(running, /cancel|Query was cancelled|killed/i);
  });

  it('a target without a cluster builds plain MergeTree tables', async () => {
    const single = await bootApp(project(ch), { env: 'single' });
    apps.push(single);
    assert.equal((await runCommand(single, ['seed'])).code, 0);
    const r = await runCommand(single, ['transform', '--select', 'staging.stg_orders', 'marts.revenue']);
    assert.equal(r.code, 0, r.stderr + r.stdout);
    const solo = await ClickHouseTarget.open({ type: 'clickhouse', url: ch.nodes[1]!.url, password: ch.password });
    try {
      assert.deepEqual((await solo.query("SELECT engine FROM system.tables WHERE database = 'marts' AND name = 'revenue'")).rows, [['MergeTree']]);
    } finally {
      await solo.close();
    }
    const service = single.services.get<WarehouseTargetService>(WAREHOUSE_TARGET_SERVICE.id);
    assert.equal(service.config()?.type, 'clickhouse');
    assert.throws(() => service.assertLocalOnly('Backups'), /Backups works on the local DuckDB file only/);
  });
});
