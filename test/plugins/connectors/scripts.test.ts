/**
 * The generated script through the streams plugin: `ingest/connector_<name>.ts` runs through the
 * scripts service (`POST /api/run`) and the `sync_<name>` stream setup adds, with
 * `ctx.connectors` from SCRIPT_CONTEXT, against a real PostgreSQL; a failed table fails the
 * script; the connectors' schedule job is on the scheduler and starts a due connector once.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { scheduleJob } from '../../../plugins/connectors/scripts.js';
import type { SyncEngine } from '../../../plugins/connectors/sync.js';
import type { ConnectorConfig } from '../../../plugins/connectors/config.js';
import { makeProject, startServer, type TestServer } from '../../helpers.js';
import { startPostgres, type RunningDatabase } from '../../support/databases.js';

describe('generated connector scripts through the streams plugin', () => {
  let source: RunningDatabase;
  let root: string;
  let s: TestServer;

  before(async () => {
    source = await startPostgres();
    const c = new pg.Client({ host: source.host, port: source.port, user: source.user, password: source.password, database: source.database });
    await c.connect();
    await c.query("CREATE TABLE items (id INT, label TEXT); INSERT INTO items SELECT i, 'item ' || i FROM generate_series(1, 250) i");
    await c.end();
    root = makeProject({ 'project.yml': 'name: scripts\ndatabase:\n  path: w.duckdb\n' });
    s = await startServer(root);
    const setup = await s.request('POST', '/api/connectors/setup', {
      connector_type: 'postgres',
      connection_name: 'src',
      config: { host: source.host, port: source.port, database: source.database, user: source.user, password: source.password },
      tables: ['items'],
      schedule: '*/5 * * * *',
    });
    assert.equal(setup.status, 200, setup.text);
  });

  after(async () => {
    await s?.close();
    await source?.stop();
  });

  it('runs ingest/connector_<name>.ts through the scripts service with ctx.connectors', async () => {
    const r = await s.request('POST', '/api/run', { script_path: 'ingest/connector_src.ts' });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.status, 'success', r.text);
    assert.deepEqual(r.body.output, ['items: success, 250 rows']);
    const rows = await s.request('POST', '/api/query', { sql: 'SELECT count(*), max(label) FROM landing.items' });
    assert.deepEqual(rows.body.rows, [[250, 'item 99']]);
    const health = await s.request('GET', '/api/connectors/health');
    assert.equal(health.body[0].status, 'success');
  });

  it('runs the sync stream setup wrote, and a failed table fails the script', async () => {
    // The streams plugin reads its streams when it starts: a restarted server has the new one.
    await s.close();
    s = await startServer(root);
    const r = await s.request('POST', '/api/stream/sync_src');
    assert.equal(r.status, 200, r.text);
    assert.equal(JSON.stringify(r.body).includes('error'), false, r.text);
    const history = await s.request('GET', '/api/history?limit=5');
    assert.equal(history.status, 200);

    const yml = fs.readFileSync(path.join(root, 'project.yml'), 'utf8');
    fs.writeFileSync(path.join(root, 'project.yml'), yml.replace('- name: items', '- name: items\n        source_query: SELECT * FROM no_such_table'));
    const failed = await s.request('POST', '/api/run', { script_path: 'ingest/connector_src.ts' });
    assert.equal(failed.body.status, 'error', failed.text);
    assert.match(failed.body.error, /items: .*no_such_table/);
    fs.writeFileSync(path.join(root, 'project.yml'), yml);
  });

  it("puts the connectors' schedule job on the scheduler", async () => {
    const r = await s.request('GET', '/api/scheduler');
    assert.equal(r.status, 200);
    assert.ok(JSON.stringify(r.body).includes('connectors:schedules'), r.text);
  });

  it('the schedule job starts each due connector once, reading the connectors each time', async () => {
    const connector = (name: string, schedule: string | null): ConnectorConfig => ({ name, type: 'postgres', connection: name, target_schema: 'landing', schedule, tables: [] });
    const connectors = [connector('every_minute', '* * * * *'), connector('yearly', '0 0 1 1 *'), connector('manual', null)];
    const started: string[] = [];
    let finish: () => void = () => undefined;
    const engine = {
      syncConnector: (name: string, options: { trigger: string }) => {
        started.push(`${name}:${options.trigger}`);
        return new Promise((resolve) => (finish = () => resolve([])));
      },
    } as unknown as SyncEngine;
    const job = scheduleJob(() => connectors, engine, { info() {}, warn() {}, error() {}, debug() {} });
    assert.equal(job.cron, '* * * * *');
    await job.run(new AbortController().signal);
    assert.deepEqual(started, ['every_minute:schedule']);
    await job.run(new AbortController().signal);
    assert.deepEqual(started, ['every_minute:schedule'], 'a connector still syncing is not started twice');
    finish();
    await new Promise((r) => setImmediate(r));
    assert.equal(job.running.size, 0);
    connectors.push(connector('added_later', '* * * * *'));
    await job.run(new AbortController().signal);
    assert.deepEqual(started, ['every_minute:schedule', 'every_minute:schedule', 'added_later:schedule']);
  });
});
