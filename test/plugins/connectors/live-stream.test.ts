/**
 * A connector set up on a running server is usable at once, without a restart: the sync stream
 * the setup adds to project.yml is listed, runs through `POST /api/stream/<name>` (the generated
 * script calls the connectors plugin) and, once it has a schedule, sits in the scheduler with its
 * next run; removing the connector takes the stream and its schedule away. An edit of project.yml
 * by hand (another process, an editor) reaches the streams too.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { parseDocument } from 'yaml';
import { makeProject, startServer, type TestServer } from '../../helpers.js';

describe('a connector set up on a live server', () => {
  let root: string;
  let s: TestServer;
  const streamNames = async () => ((await s.request('GET', '/api/streams')).body.streams as Array<{ name: string }>).map((x) => x.name);
  const schedules = async () => (await s.request('GET', '/api/scheduler')).body.schedules as Array<{ name: string; kind: string; cron: string; next_run: string | null }>;

  before(async () => {
    root = makeProject({
      'project.yml': 'name: live\ndatabase:\n  path: w.duckdb\n',
      'data/shop/customers.csv': 'id,name\n1,Ada\n2,Grace\n',
    });
    // The test is about the scheduler picking up a stream a setup added: it runs here.
    s = await startServer(root, { scheduler: true });
  });

  after(async () => s?.close());

  it('runs the sync stream a setup added, and schedules it once it has a schedule, with no restart', async () => {
    assert.deepEqual(await streamNames(), []);
    assert.equal((await s.request('POST', '/api/stream/sync_shop')).status, 404);

    const setup = await s.request('POST', '/api/connectors/setup', { connector_type: 'csv', connection_name: 'shop', config: { path: 'data/shop' } });
    assert.equal(setup.status, 200, setup.text);
    assert.equal(setup.body.stream, 'sync_shop');
    assert.deepEqual(await streamNames(), ['sync_shop']);

    const run = await s.request('POST', '/api/stream/sync_shop');
    assert.equal(run.status, 200, run.text);
    assert.equal(run.body.status, 'success', run.text);
    assert.equal(run.body.steps[0].action, 'ingest');
    assert.deepEqual((await s.request('POST', '/api/query', { sql: 'SELECT name FROM landing.customers ORDER BY id' })).body.rows, [['Ada'], ['Grace']]);
    const history = await s.request('GET', '/api/history?name=sync_shop');
    assert.equal(history.status, 200, history.text);
    assert.ok(history.body.runs.some((r: { status: string }) => r.status === 'success'), history.text);

    // A schedule given to the stream by hand (the file edited underneath the server) is picked up.
    const file = path.join(root, 'project.yml');
    const doc = parseDocument(fs.readFileSync(file, 'utf8'));
    doc.setIn(['streams', 'sync_shop', 'schedule'], '15 3 * * *');
    fs.writeFileSync(file, doc.toString());
    assert.deepEqual(await streamNames(), ['sync_shop']);
    const scheduled = (await schedules()).find((x) => x.name === 'stream:sync_shop');
    assert.ok(scheduled, JSON.stringify(await schedules()));
    assert.equal(scheduled.kind, 'stream');
    assert.equal(scheduled.cron, '15 3 * * *');
    assert.match(scheduled.next_run ?? '', /T03:15:00/);

    const removed = await s.request('DELETE', '/api/connectors/shop');
    assert.equal(removed.status, 200, removed.text);
    assert.deepEqual(await streamNames(), []);
    assert.ok(!(await schedules()).some((x) => x.name === 'stream:sync_shop'));
    assert.equal((await s.request('POST', '/api/stream/sync_shop')).status, 404);
  });

  it('keeps the streams in force when an edit makes the section invalid', async () => {
    const file = path.join(root, 'project.yml');
    const good = fs.readFileSync(file, 'utf8');
    fs.writeFileSync(file, `${good}streams:\n  daily:\n    steps:\n      - transform: [all]\n`);
    assert.deepEqual(await streamNames(), ['daily']);
    fs.writeFileSync(file, `${good}streams:\n  daily:\n    steps:\n      - load: [all]\n`);
    assert.deepEqual(await streamNames(), ['daily']);
    fs.writeFileSync(file, good);
    assert.deepEqual(await streamNames(), []);
  });
});
