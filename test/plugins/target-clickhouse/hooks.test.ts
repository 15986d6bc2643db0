/**
 * After-build work of `dp transform` on a ClickHouse target (a real 2-shard cluster,
 * test/support/clickhouse.ts), as on the DuckDB file: inline assertions after each build (a
 * failing one flags the model `assertion_failed`, its downstream still builds), the run history
 * and the transform events, build records (freshness), metrics profiles computed on the target by
 * its port and stored in the local control-plane file, and anomaly detection over them.
 * Skipped, saying why, only when the Debian packages are absent.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runCommand } from '../../../sdk/testing.js';
import { startServer, type TestServer } from '../../helpers.js';
import { clickhouseTestProject } from '../../support/clickhouse-project.js';
import { clickhouseUnavailable, startClickHouseCluster, type RunningClickHouseCluster } from '../../support/clickhouse.js';

const missing = clickhouseUnavailable();
if (missing) console.log(`# skipped: the ClickHouse tests need the Debian packages: ${missing}`);

/** The customers a run's marts.sized keeps: the row count anomaly detection follows. */
const sized = (where: string) => `-- @config materialized=table\n-- @assert row_count >= 1\nSELECT c.id, c.name, c.country FROM seeds.customers AS c ${where}\n`;

describe('after-build hooks of a transform on a ClickHouse target', { skip: missing, timeout: 300_000 }, () => {
  let ch: RunningClickHouseCluster;
  let root: string;
  let server: TestServer;
  before(async () => {
    ch = await startClickHouseCluster();
    root = clickhouseTestProject(ch, {
      // Order 5's customer does not exist: its name is NULL (join_use_nulls), so no_nulls fails.
      'transform/marts/orphans.sql': '-- @config materialized=table\n-- @assert no_nulls(name)\n-- @assert row_count >= 1\nSELECT o.id, c.name FROM staging.stg_orders AS o LEFT JOIN seeds.customers AS c ON o.customer_id = c.id\n',
      'transform/marts/after_orphans.sql': '-- @config materialized=table\nSELECT count(*) AS n FROM marts.orphans\n',
      'transform/marts/sized.sql': sized('WHERE c.id <= 2'),
    });
    server = await startServer(root, { env: 'prod' });
    assert.equal((await runCommand(server.app, ['seed'])).code, 0);
  });
  after(async () => {
    await server?.close();
    await ch?.stop();
  });
  const transform = async () => {
    const r = await runCommand(server.app, ['transform', '--json']);
    return { code: r.code, summary: JSON.parse(r.stdout) as { run_id: string; status: string; results: Array<{ model: string; status: string; extras?: any }> }, text: r.stdout + r.stderr };
  };
  const byModel = (results: Array<{ model: string }>) => Object.fromEntries(results.map((r) => [r.model, r])) as Record<string, any>;

  it('inline assertions run after each build: a failing one flags its model, the run succeeds, its downstream builds', async () => {
    const events: string[] = [];
    const off = server.app.events.on('*', (e) => {
      if (['transform_start', 'model_start', 'model_end', 'transform_end'].includes(e.type)) events.push(`${e.type}:${String(e.payload.model ?? '')}`);
    });
    const { code, summary, text } = await transform();
    off();
    assert.equal(code, 0, text);
    assert.equal(summary.status, 'success');
    const results = byModel(summary.results);
    assert.equal(results['marts.orphans'].status, 'assertion_failed');
    const failed = results['marts.orphans'].extras.assertions.find((a: { expression: string }) => a.expression === 'no_nulls(name)');
    assert.deepEqual([failed.passed, failed.detail.null_count, failed.detail.total_rows], [false, 1, 4]);
    assert.equal(results['marts.after_orphans'].status, 'built', 'a flagged model is not a failure for its downstream');
    assert.equal(results['marts.sized'].status, 'built');
    assert.deepEqual(results['marts.sized'].extras.assertions.map((a: { passed: boolean }) => a.passed), [true]);
    // The local file holds no model: the assertions read the target.
    assert.equal(await server.app.db.catalog.exists('marts', 'orphans'), false);
    const stored = await server.app.db.all<{ expression: string; passed: boolean }>('SELECT expression, passed FROM _service.assertion_results WHERE run_id = $1 AND model = $2 ORDER BY expression', [summary.run_id, 'marts.orphans']);
    assert.deepEqual(stored.map((s) => [s.expression, s.passed]), [['no_nulls(name)', false], ['row_count >= 1', true]]);
    // The events of a run on the file: a start, each built model's start and end, the end.
    assert.equal(events[0], 'transform_start:');
    assert.equal(events.at(-1), 'transform_end:');
    for (const model of ['staging.stg_orders', 'marts.orphans', 'marts.after_orphans', 'marts.sized']) {
      assert.ok(events.includes(`model_start:${model}`) && events.includes(`model_end:${model}`), `${model}: ${events.join(' ')}`);
    }
  });

  it('the run history, the build records and the profiles are in the local file; the profiles were computed on the target', async () => {
    const runs = await server.request('GET', '/api/transform/runs');
    assert.equal(runs.status, 200, runs.text);
    const last = runs.body[0];
    const detail = await server.request('GET', `/api/transform/runs/${last.run_id}`);
    assert.equal(detail.status, 200, detail.text);
    assert.equal(detail.body.status, 'success');
    assert.deepEqual(detail.body.models.map((m: { model: string; status: string }) => `${m.model}:${m.status}`).sort(), ['marts.after_orphans:built', 'marts.orphans:assertion_failed', 'marts.sized:built', 'staging.stg_orders:built']);
    const freshness = await server.request('GET', '/api/freshness');
    assert.equal(freshness.status, 200, freshness.text);
    const orphans = freshness.body.models.find((m: { model: string }) => m.model === 'marts.orphans');
    assert.deepEqual([orphans.status, orphans.last_status], ['fresh', 'assertion_failed']);
    const profile = (await server.app.db.all<{ row_count: number; columns: string }>('SELECT row_count, CAST(columns AS VARCHAR) AS columns FROM _service.model_profiles WHERE model = $1 AND run_id = $2', ['marts.orphans', last.run_id]))[0];
    assert.ok(profile, 'a profile of marts.orphans was recorded');
    assert.equal(Number(profile.row_count), 4, 'rows of both shards');
    const name = JSON.parse(profile.columns).find((c: { name: string }) => c.name === 'name');
    assert.deepEqual([name.null_count, name.null_pct, name.distinct_count, name.type], [1, 25, 2, 'Nullable(String)'], "ClickHouse's type: the target profiled it");
  });

  it('a row count far from its history is an anomaly', async () => {
    const file = path.join(root, 'transform/marts/sized.sql');
    // History of marts.sized: 2 (first test), 3, 2, 3 rows; then 20 (every customer with every order).
    for (const where of ['WHERE c.id <= 3', 'WHERE c.id <= 2', 'WHERE c.id <= 3']) {
      fs.writeFileSync(file, sized(where));
      assert.equal((await transform()).summary.status, 'success');
    }
    fs.writeFileSync(file, sized('CROSS JOIN seeds.orders AS o'));
    const { summary } = await transform();
    assert.equal(byModel(summary.results)['marts.sized'].status, 'built');
    const anomalies = await server.request('GET', '/api/anomalies/marts.sized');
    assert.equal(anomalies.status, 200, anomalies.text);
    const rows = anomalies.body.anomalies.find((a: { metric: string; run_id: string }) => a.metric === 'row_count' && a.run_id === summary.run_id);
    assert.ok(rows, anomalies.text);
    assert.equal(rows.value, 20);
  });
});
