import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { bootApp, closeInProcessClis, makeProject, runInProcess, startServer } from '../../helpers.js';
import { fireBuild, fireTransformEnd, startReceiver } from './util.js';

function projectYml(extra = ''): string {
  return `name: fresh
database:
  path: test.duckdb
sources:
  - name: raw
    schema: landing
    freshness_hours: 24
    tables:
      - name: events
        loaded_at_column: received_at
      - name: old_events
        loaded_at_column: received_at
      - name: empty_events
        loaded_at_column: received_at
      - name: tz_events
        loaded_at_column: received_at
      - name: not_loaded_yet
        loaded_at_column: received_at
      - name: undated
${extra}`;
}

const SOURCES_SQL = `CREATE SCHEMA landing;
  CREATE TABLE landing.events AS SELECT (now() AT TIME ZONE 'UTC') - INTERVAL 2 HOUR AS received_at;
  CREATE TABLE landing.old_events AS SELECT CAST((now() AT TIME ZONE 'UTC') - INTERVAL 3 DAY AS DATE) AS received_at;
  CREATE TABLE landing.empty_events (received_at TIMESTAMP);
  CREATE TABLE landing.tz_events AS SELECT now() - INTERVAL 30 MINUTE AS received_at;
  CREATE TABLE landing.undated AS SELECT 1 AS x;`;

describe('quality: freshness', () => {
  after(closeInProcessClis);
  it('reports model freshness from recorded builds against max_hours', async () => {
    const root = makeProject({ 'project.yml': projectYml() });
    const s = await startServer(root);
    try {
      await s.app.db.run('CREATE SCHEMA m; CREATE TABLE m.recent AS SELECT 1 AS a; CREATE TABLE m.old AS SELECT 1 AS a');
      await fireBuild(s.app, 'm.recent', 'r1');
      await fireBuild(s.app, 'm.old', 'r1');
      // The build records are stored by the time the run ends.
      await fireTransformEnd(s.app, 'r1', [
        { model: 'm.recent', status: 'built' },
        { model: 'm.old', status: 'built' },
      ]);
      await s.app.db.run("UPDATE _service.model_freshness SET last_built_at = last_built_at - INTERVAL 48 HOUR WHERE model = 'm.old'");
      const r = await s.request('GET', '/api/freshness?max_hours=24');
      assert.equal(r.status, 200, r.text);
      assert.equal(r.body.max_hours, 24);
      const byModel = Object.fromEntries(r.body.models.map((m: { model: string }) => [m.model, m]));
      assert.equal(byModel['m.recent'].status, 'fresh');
      assert.ok(byModel['m.recent'].hours_since_build < 1);
      assert.equal(byModel['m.recent'].last_status, 'built');
      assert.equal(byModel['m.old'].status, 'stale');
      assert.ok(byModel['m.old'].hours_since_build >= 48);
      assert.equal(r.body.stale_count, 1);
      const lenient = await s.request('GET', '/api/freshness?max_hours=100');
      assert.equal(lenient.body.stale_count, 0);
      const bad = await s.request('GET', '/api/freshness?max_hours=-1');
      assert.equal(bad.status, 400);
    } finally {
      await s.close();
    }
    const cli = await runInProcess(['freshness', '--hours', '24', '--project', root]);
    assert.equal(cli.code, 1, 'a stale model fails the command');
    assert.match(cli.stdout, /m\.old\s+\S+\s+4[89]\.?\d*\s+stale/);
    const ok = await runInProcess(['freshness', '--hours', '100', '--project', root, '--json']);
    assert.equal(ok.code, 0, ok.stderr);
    assert.equal(JSON.parse(ok.stdout).stale_count, 0);
  });

  it('checks each source table by loaded_at_column against freshness_hours', async () => {
    const root = makeProject({ 'project.yml': projectYml() });
    const s = await startServer(root);
    try {
      await s.app.db.run(SOURCES_SQL);
      const r = await s.request('GET', '/api/sources/freshness');
      assert.equal(r.status, 200, r.text);
      const by = Object.fromEntries(r.body.sources.map((x: { table: string }) => [x.table, x]));
      assert.equal(by.events.status, 'fresh');
      assert.ok(by.events.hours_since_load > 1.9 && by.events.hours_since_load < 2.5, String(by.events.hours_since_load));
      assert.equal(by.events.freshness_hours, 24);
      assert.equal(by.old_events.status, 'stale');
      assert.ok(by.old_events.hours_since_load > 48);
      assert.equal(by.empty_events.status, 'no_data');
      assert.equal(by.tz_events.status, 'fresh');
      assert.ok(by.tz_events.hours_since_load < 1);
      assert.equal(by.not_loaded_yet.status, 'missing_table');
      assert.equal(by.undated.status, 'unchecked');
      assert.equal(r.body.stale_count, 3, 'stale, empty and missing tables with an SLA');
    } finally {
      await s.close();
    }
  });

  it('dp freshness --sources --alert sends a stale-data alert and exits 1', async () => {
    const receiver = await startReceiver();
    const root = makeProject({ 'project.yml': projectYml(`alerts:\n  channels: [webhook]\n  webhook_url: ${receiver.url}/stale\n`) });
    try {
      const app = await bootApp(root);
      await app.db.run(SOURCES_SQL);
      await app.close();
      const r = await runInProcess(['freshness', '--sources', '--alert', '--project', root]);
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, /alert via webhook: sent/);
      assert.equal(receiver.received.length, 1);
      const body = receiver.received[0].body;
      assert.equal(body.alert_type, 'stale_data');
      assert.equal(body.title, '3 stale source tables');
      assert.deepEqual(body.details.stale.sort(), ['landing.empty_events', 'landing.not_loaded_yet', 'landing.old_events']);
      const quiet = await runInProcess(['freshness', '--sources', '--project', root]);
      assert.equal(quiet.code, 1);
      assert.equal(receiver.received.length, 1, 'no alert without --alert');
    } finally {
      await receiver.close();
    }
  });
});
