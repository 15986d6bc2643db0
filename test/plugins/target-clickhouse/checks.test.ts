/**
 * `dp check`, `dp contracts`, inline assertions, the build status, the DAG and skipping unchanged
 * models on a ClickHouse target (a real 2-shard cluster and a single server, test/support/clickhouse.ts):
 * the checks read the target (the local DuckDB file holds no model), and what they find is
 * recorded in the local file. Skipped, saying why, only when the Debian packages are absent.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { WAREHOUSE_TARGET_SERVICE, type WarehouseTargetService } from '../../../sdk/index.js';
import { runCommand } from '../../../sdk/testing.js';
import { closeInProcessClis, runInProcess, startServer, type TestServer } from '../../helpers.js';
import { clickhouseTestProject } from '../../support/clickhouse-project.js';
import { clickhouseUnavailable, startClickHouseCluster, type RunningClickHouseCluster } from '../../support/clickhouse.js';

const missing = clickhouseUnavailable();
if (missing) console.log(`# skipped: the ClickHouse tests need the Debian packages: ${missing}`);

function project(ch: RunningClickHouseCluster): string {
  return clickhouseTestProject(ch, {
    'transform/marts/revenue.sql':
      '-- @config materialized=table, unique_key=customer_id\n-- @assert unique(customer_id)\n-- @assert row_count >= 4\n-- @assert "sum(revenue) > 0"\n' +
      'SELECT c.id AS customer_id, c.name, coalesce(sum(o.amount), 0) AS revenue, count(o.id) AS orders\nFROM (SELECT id, name FROM seeds.customers) AS c LEFT JOIN staging.stg_orders AS o ON o.customer_id = c.id\nGROUP BY c.id, c.name\n',
    // Order 5's customer does not exist: its name is NULL (join_use_nulls), so no_nulls fails.
    'transform/marts/orphans.sql': '-- @assert no_nulls(name)\nSELECT o.id, c.name FROM staging.stg_orders AS o LEFT JOIN seeds.customers AS c ON o.customer_id = c.id\n',
    'transform/marts/events.sql': '-- @config materialized=incremental, incremental_strategy=append, incremental_filter="id > (SELECT coalesce(max(id), 0) FROM {{ this }})"\nSELECT id, amount FROM staging.stg_orders\n',
    'contracts/revenue.yml': `contracts:
  - name: revenue_sane
    model: marts.revenue
    assertions: ["revenue >= 0", "orders >= 0", "unique(customer_id)"]
  - name: known_names
    model: marts.revenue
    severity: warn
    assertions: ["accepted_values(name, ['Ann', 'Bob', 'Cid'])"]
`,
  });
}

const statuses = (json: string) => Object.fromEntries((JSON.parse(json).results as Array<{ model: string; status: string }>).map((r) => [r.model, r.status]));

describe('checks, contracts, assertions, status and DAG on a ClickHouse target', { skip: missing, timeout: 300_000 }, () => {
  let ch: RunningClickHouseCluster;
  let root: string;
  let server: TestServer;
  before(async () => {
    ch = await startClickHouseCluster();
    root = project(ch);
    server = await startServer(root, { env: 'prod' });
  });
  after(async () => {
    await closeInProcessClis();
    await server?.close();
    await ch?.stop();
  });
  const dp = (argv: string[]) => runCommand(server.app, argv);

  it('a second transform skips the unchanged tables and views; a changed model rebuilds with its downstream; --force rebuilds all', async () => {
    assert.equal((await dp(['seed'])).code, 0);
    const first = await dp(['transform', '--json']);
    assert.equal(first.code, 0, first.stderr + first.stdout);
    // marts.orphans's no_nulls(name) fails after its build, as on DuckDB (hooks.test.ts).
    assert.deepEqual(statuses(first.stdout), { 'staging.stg_orders': 'built', 'marts.revenue': 'built', 'marts.orphans': 'assertion_failed', 'marts.events': 'built' });
    const second = await dp(['transform', '--json']);
    // An incremental model always runs (finding new rows is its job), as on DuckDB.
    assert.deepEqual(statuses(second.stdout), { 'staging.stg_orders': 'skipped', 'marts.revenue': 'skipped', 'marts.orphans': 'skipped', 'marts.events': 'built' });
    const status = await server.request('GET', '/api/models/status');
    assert.deepEqual(status.body.models.map((m: { model: string; status: string }) => `${m.model}:${m.status}`).sort(), ['marts.events:up_to_date', 'marts.orphans:up_to_date', 'marts.revenue:up_to_date', 'staging.stg_orders:up_to_date']);

    const file = path.join(root, 'transform/staging/stg_orders.sql');
    fs.writeFileSync(file, fs.readFileSync(file, 'utf8').replace("WHERE status = 'paid'", "WHERE status IN ('paid')"));
    const changed = (await server.request('GET', '/api/models/status')).body.models.find((m: { model: string }) => m.model === 'staging.stg_orders');
    assert.equal(changed.status, 'changed');
    const third = await dp(['transform', '--json']);
    assert.deepEqual(statuses(third.stdout), { 'staging.stg_orders': 'built', 'marts.revenue': 'built', 'marts.orphans': 'assertion_failed', 'marts.events': 'built' });
    const forced = await dp(['transform', '--force', '--select', 'marts.revenue', '--json']);
    assert.deepEqual(statuses(forced.stdout), { 'marts.revenue': 'built' });
  });

  it('/api/dag shows what the target holds: built or not, and each table\'s rows summed over both shards', async () => {
    const dag = await server.request('GET', '/api/dag');
    assert.equal(dag.status, 200);
    const nodes = Object.fromEntries(dag.body.nodes.map((n: { id: string; built: boolean; rows: number | null }) => [n.id, [n.built, n.rows]]));
    assert.deepEqual(nodes, { 'staging.stg_orders': [true, null], 'marts.revenue': [true, 4], 'marts.orphans': [true, 4], 'marts.events': [true, 4] });
  });

  it('dp check binds every model on the target and evaluates the inline assertions there', async () => {
    const r = await dp(['check', '--json']);
    const report = JSON.parse(r.stdout);
    assert.equal(r.code, 1, 'no_nulls(name) on marts.orphans fails');
    assert.deepEqual(report.validation.models.map((m: { model: string; bound: boolean }) => [m.model, m.bound]).sort(), [['marts.events', true], ['marts.orphans', true], ['marts.revenue', true], ['staging.stg_orders', true]]);
    const byExpr = Object.fromEntries(report.assertions.results.map((a: { model: string; expression: string; passed: boolean; detail: any }) => [`${a.model} ${a.expression}`, a]));
    assert.equal(byExpr['marts.revenue unique(customer_id)'].passed, true);
    assert.equal(byExpr['marts.revenue row_count >= 4'].detail.actual, 4);
    const sum = report.assertions.results.find((a: { expression: string }) => a.expression.includes('sum(revenue) > 0'));
    assert.equal(sum.passed, true, JSON.stringify(sum));
    const nulls = byExpr['marts.orphans no_nulls(name)'];
    assert.equal(nulls.passed, false);
    assert.deepEqual([nulls.detail.null_count, nulls.detail.total_rows], [1, 4]);
    assert.equal(String(nulls.detail.sample_rows[0].id), '5');
    // The contracts ran on the target too: the warn one fails on 'Dee', the error one passes.
    assert.equal(report.contracts.evaluated, true);
    assert.deepEqual([report.contracts.errors_failed, report.contracts.warnings_failed], [0, 1]);
  });

  it('dp contracts reads the target and records the results in the local file; POST /api/check answers the same', async () => {
    const r = await dp(['contracts', '--json']);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    const run = JSON.parse(r.stdout);
    const known = run.results.find((c: { contract_name: string }) => c.contract_name === 'known_names');
    assert.equal(known.passed, false);
    assert.deepEqual(known.assertions[0].detail.unexpected_values, [{ value: 'Dee', count: 1 }]);
    assert.equal(run.results.find((c: { contract_name: string }) => c.contract_name === 'revenue_sane').passed, true);
    const history = await dp(['contracts', '--history', '--json']);
    assert.ok(JSON.parse(history.stdout).length >= 4, 'each run is recorded in _service.contract_results');
    // The local file holds no model: the checks cannot have read it.
    assert.equal(await server.app.db.catalog.exists('marts', 'revenue'), false);
    const http = await server.request('POST', '/api/check', {});
    assert.equal(http.status, 200);
    assert.equal(http.body.assertions.failed, 1);
  });

  it('assertion-debug re-runs on the target with the SQL of the offending rows; a check the server cannot run fails naming it', async () => {
    const debug = await server.request('GET', '/api/quality/assertion-debug/marts.orphans');
    assert.equal(debug.status, 200, debug.text);
    assert.equal(debug.body.failed, 1);
    assert.match(debug.body.assertions[0].detail.sql, /WHERE "name" IS NULL/);
    fs.writeFileSync(path.join(root, 'contracts/odd.yml'), 'contracts:\n  - name: odd\n    model: marts.revenue\n    assertions: ["levenshtein(name, \'x\') >= 0"]\n');
    try {
      const r = await dp(['contracts', 'odd', '--json']);
      assert.equal(r.code, 1);
      const outcome = JSON.parse(r.stdout).results[0].assertions[0];
      assert.match(outcome.detail.error, /assertions on marts\.revenue: ClickHouse 18\.16\.1 cannot run the check: Unknown function editDistance/);
    } finally {
      fs.rmSync(path.join(root, 'contracts/odd.yml'));
    }
  });

  it('a check read cannot write on the target: a statement other than a SELECT is refused and changes nothing', async () => {
    const service = server.app.services.get<WarehouseTargetService>(WAREHOUSE_TARGET_SERVICE.id);
    await assert.rejects(service.readDuckdbSql('CREATE TABLE marts.probe AS SELECT 1 AS x', 'probe'), (e: any) => ['unsupported_on_target', 'untranslatable_sql'].includes(e.code));
    await assert.rejects(service.readDuckdbSql('INSERT INTO marts.revenue (customer_id) VALUES (99)', 'probe'), (e: any) => ['unsupported_on_target', 'untranslatable_sql'].includes(e.code));
    const target = await service.target();
    assert.equal((await target.relations({ schema: 'marts' })).some((r) => r.name === 'probe'), false);
    assert.deepEqual((await target.query('SELECT count() FROM marts.revenue WHERE customer_id = 99')).rows, [['0']]);
  });

  // Node 2 is also the cluster's second shard: its marts.orphans is the cluster's Distributed table.
  it('on a single server (no cluster) `dp check --env single` reads the plain MergeTree tables', async () => {
    const cli = (argv: string[]) => runInProcess([...argv, '--project', root, '--env', 'single']);
    assert.equal((await cli(['seed'])).code, 0);
    const built = await cli(['transform', '--select', 'staging.stg_orders', 'marts.revenue', '--json']);
    assert.equal(built.code, 0, built.stderr + built.stdout);
    const r = await cli(['check', '--json']);
    const report = JSON.parse(r.stdout);
    const revenue = report.assertions.results.filter((a: { model: string }) => a.model === 'marts.revenue');
    assert.deepEqual(revenue.map((a: { passed: boolean }) => a.passed), [true, true, true]);
    const again = await cli(['transform', '--select', 'staging.stg_orders', 'marts.revenue', '--json']);
    assert.deepEqual(statuses(again.stdout), { 'staging.stg_orders': 'skipped', 'marts.revenue': 'skipped' });
  });
});
