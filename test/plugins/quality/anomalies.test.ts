import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { AnomalyReport } from '../../../plugins/quality/anomalies.js';
import { makeProject, startServer, type TestServer } from '../../helpers.js';
import { fireBuild, fireTransformEnd, quality } from './util.js';

const PROJECT = `name: anomalies
database:
  path: test.duckdb
alerts:
  channels: [log]
quality:
  anomaly_detection:
    enabled: true
    lookback: 30
    threshold: 2.0
    notify: [log]
`;

describe('quality: anomaly detection', () => {
  let s: TestServer;
  let run = 0;

  /** Rebuilds `model` with `rows` rows (the first `nulls` of them with a NULL `note`), ends a transform, returns its report. */
  async function build(model: string, rows: number, nulls = 0): Promise<AnomalyReport> {
    const runId = `run-${++run}`;
    await s.app.db.run(`CREATE OR REPLACE TABLE ${model} AS SELECT i AS id, i % 7 AS bucket, CASE WHEN i < ${nulls} THEN NULL ELSE 'n' END AS note FROM range(0, ${rows}) t(i)`);
    await fireBuild(s.app, model, runId);
    await fireTransformEnd(s.app, runId, [{ model, status: 'built' }]);
    const reports = quality(s.app).anomalyReports(runId) ?? [];
    assert.equal(reports.length, 1);
    return reports[0];
  }

  before(async () => {
    s = await startServer(makeProject({ 'project.yml': PROJECT }));
    await s.app.db.run('CREATE SCHEMA m');
  });
  after(async () => s.close());

  it('skips the first run and runs with fewer than 3 historical profiles', async () => {
    const first = await build('m.growing', 100);
    assert.equal(first.status, 'skipped');
    assert.equal(first.skipped_reason, 'first_run');
    const second = await build('m.growing', 110);
    assert.equal(second.skipped_reason, 'insufficient_history');
    assert.equal(second.history_count, 1);
    const third = await build('m.growing', 90);
    assert.equal(third.skipped_reason, 'insufficient_history');
    assert.equal(third.history_count, 2);
    const fourth = await build('m.growing', 105);
    assert.equal(fourth.status, 'checked');
    assert.equal(fourth.history_count, 3);
  });

  it('finds nothing in a series without an outlier', async () => {
    for (const n of [95, 102, 98, 107, 93]) {
      const r = await build('m.growing', n);
      assert.equal(r.status, 'checked');
      assert.deepEqual(r.anomalies, [], `no anomaly at ${n}`);
    }
  });

  it('flags the outlier of a series by Z-score and records it', async () => {
    const r = await build('m.growing', 1000);
    assert.equal(r.status, 'checked');
    const rowCount = r.anomalies.find((a) => a.metric === 'row_count');
    assert.ok(rowCount, JSON.stringify(r));
    assert.equal(rowCount.value, 1000);
    assert.ok(rowCount.z_score > 2, `z=${rowCount.z_score}`);
    assert.equal(rowCount.history_count, 9);
    const distinct = r.anomalies.find((a) => a.metric === 'distinct_count' && a.column === 'id');
    assert.ok(distinct, 'the distinct count of id jumps too');
    assert.ok(!r.anomalies.some((a) => a.metric === 'distinct_count' && a.column === 'bucket'), 'bucket keeps 7 distinct values');

    const list = await s.request('GET', '/api/anomalies');
    assert.equal(list.status, 200);
    assert.ok(list.body.anomalies.some((a: { model: string; metric: string }) => a.model === 'm.growing' && a.metric === 'row_count'));
    const one = await s.request('GET', '/api/anomalies/m.growing');
    assert.equal(one.body.model, 'm.growing');
    assert.equal(one.body.anomalies.length, r.anomalies.length);
    const byBareName = await s.request('GET', '/api/anomalies/growing');
    assert.equal(byBareName.body.model, 'm.growing');

    await quality(s.app).drainAlerts();
    const alerts = await s.request('GET', '/api/alerts');
    const anomalyAlert = alerts.body.alerts.find((a: { alert_type: string }) => a.alert_type === 'anomaly');
    assert.ok(anomalyAlert, 'the notify channels hear about it');
    assert.equal(anomalyAlert.channel, 'log');
    assert.equal(anomalyAlert.status, 'logged');
    assert.match(anomalyAlert.message, /m\.growing row_count = 1000/);
  });

  it('flags a jump in the null percentage of a column', async () => {
    for (const nulls of [10, 12, 8, 11]) assert.deepEqual((await build('m.nulls', 100, nulls)).anomalies, []);
    const r = await build('m.nulls', 100, 60);
    assert.deepEqual(
      r.anomalies.map((a) => [a.metric, a.column, a.value]),
      [['null_pct', 'note', 60]],
    );
  });

  it('skips a metric whose history has zero standard deviation', async () => {
    for (let i = 0; i < 3; i++) await build('m.flat', 50);
    const r = await build('m.flat', 80);
    assert.equal(r.status, 'checked');
    assert.deepEqual(r.anomalies.filter((a) => a.metric === 'row_count'), [], 'a constant history is not judged');
    assert.ok(r.skipped_metrics.some((m) => m.metric === 'row_count' && m.reason === 'zero_stddev'));
    assert.ok(r.skipped_metrics.some((m) => m.metric === 'distinct_count' && m.column === 'bucket' && m.reason === 'zero_stddev'));
  });

  it('models that failed to build are not compared', async () => {
    await fireTransformEnd(s.app, 'run-failed', [{ model: 'm.growing', status: 'error', error: 'boom' }]);
    assert.deepEqual(quality(s.app).anomalyReports('run-failed'), []);
  });

  it('compares every model of a run with one query and reports them in the order of the run', async () => {
    await s.app.db.run('CREATE OR REPLACE TABLE m.growing AS SELECT i AS id FROM range(0, 100) t(i); CREATE TABLE m.brand_new AS SELECT 1 AS id');
    await fireBuild(s.app, 'm.brand_new', 'run-many');
    await fireBuild(s.app, 'm.growing', 'run-many');
    await quality(s.app).drainRecords();
    const db = s.app.db as unknown as Record<string, unknown>;
    const calls: string[] = [];
    for (const k of ['all', 'query', 'run', 'value']) {
      const original = (db[k] as (...a: unknown[]) => unknown).bind(db);
      db[k] = (...a: unknown[]) => {
        calls.push(`${k}: ${String(a[0]).trim().slice(0, 60)}`);
        return original(...a);
      };
    }
    try {
      await fireTransformEnd(s.app, 'run-many', [
        { model: 'm.growing', status: 'built' },
        { model: 'm.never_profiled', status: 'assertion_failed' },
        { model: 'm.broken', status: 'error', error: 'boom' },
        { model: 'm.brand_new', status: 'built' },
      ]);
    } finally {
      for (const k of ['all', 'query', 'run', 'value']) delete db[k];
    }
    const detection = calls.filter((c) => !c.includes('alert_history'));
    assert.equal(detection.length, 1, `one query for the run, not one per model:\n${calls.join('\n')}`);
    const reports = quality(s.app).anomalyReports('run-many') ?? [];
    assert.deepEqual(
      reports.map((r) => [r.model, r.status, r.skipped_reason ?? null]),
      [
        ['m.growing', 'checked', null],
        ['m.never_profiled', 'skipped', 'no_profile'],
        ['m.brand_new', 'skipped', 'first_run'],
      ],
    );
  });
});
