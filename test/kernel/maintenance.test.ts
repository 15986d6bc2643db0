/**
 * Maintenance (refuse with 503, drain, stop, close, run, reopen, migrate, start), the write lock
 * behind ctx.db.exclusive, and environment switching through maintenance. Real server, real file.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { makeProject, startServer, waitUntil } from '../helpers.js';

const ENDLESS = 'SELECT sum(i) FROM range(1000000000000) t(i)';

function project(extra: Record<string, string> = {}) {
  return makeProject({
    'project.yml': 'name: m\ndatabase:\n  path: main.duckdb\nenvironments:\n  other:\n    database:\n      path: other.duckdb\n',
    ...extra,
  });
}

describe('maintenance', () => {
  it('answers new requests with 503 maintenance, lets a short query finish, interrupts a running query and a CSV stream at the deadline, and serves again after', async () => {
    const s = await startServer(project());
    try {
      await s.request('POST', '/api/query', { sql: 'SELECT 1' });
      // A query that never ends on its own, and a CSV export whose reader stops reading.
      const running = s.request('POST', '/api/query', { sql: ENDLESS });
      const csv = await fetch(`${s.url}/api/query/export-csv`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ sql: 'SELECT i, repeat(\'x\', 200) AS pad FROM range(100000000) t(i)' }),
      });
      assert.equal(csv.status, 200);
      const reader = csv.body!.getReader();
      assert.ok((await reader.read()).value, 'the export began streaming');
      await waitUntil(() => s.app.lentConnections() >= 2, 'the port to count the running query and the stream as lent');

      let during: { status: number; body: any; headers: Headers } | null = null;
      let fileWasClosed = false;
      const t0 = Date.now();
      const out = await s.app.maintenance(
        'test',
        async ({ path: file }) => {
          during = await s.request('POST', '/api/query', { sql: 'SELECT 1' });
          // The file is closed: another instance can open it (a restore could replace it now).
          const { DuckDBInstance } = await import('@duckdb/node-api');
          const other = await DuckDBInstance.create(file);
          other.closeSync();
          fileWasClosed = true;
          return 'done';
        },
        { drainMs: 400 },
      );
      assert.equal(out, 'done');
      assert.ok(Date.now() - t0 < 10_000);
      assert.ok(fileWasClosed);
      assert.equal(during!.status, 503);
      assert.equal(during!.body.error.code, 'maintenance');
      assert.equal(during!.headers.get('retry-after'), '5');
      assert.match(during!.body.error.message, /maintenance \(test\)/);

      const interrupted = await running;
      assert.notEqual(interrupted.status, 200);
      assert.ok(interrupted.body.error?.code, 'the interrupted query answers in the error shape');
      // The stream ends (cut or errored) instead of hanging.
      const rest = await Promise.race([
        (async () => {
          try {
            while (!(await reader.read()).done);
            return 'ended';
          } catch {
            return 'cut';
          }
        })(),
        new Promise((r) => setTimeout(() => r('hung'), 10_000)),
      ]);
      assert.notEqual(rest, 'hung');

      const after = await s.request('POST', '/api/query', { sql: 'SELECT 42 AS x' });
      assert.equal(after.status, 200);
      assert.deepEqual(after.body.rows, [[42]]);
      assert.equal(s.app.lentConnections(), 0);
    } finally {
      await s.close();
    }
  });

  it('switches environments through maintenance: the other file opens, migrates and serves', async () => {
    const root = project();
    const s = await startServer(root);
    try {
      await s.request('POST', '/api/query', { sql: 'SELECT 1' });
      const r = await s.request('PUT', '/api/environment/other');
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.active, 'other');
      assert.ok(fs.existsSync(path.join(root, 'other.duckdb')));
      const migrated = await s.request('POST', '/api/query', { sql: "SELECT count(*) FROM _service.migrations WHERE owner = 'models'" });
      assert.equal(migrated.status, 200, JSON.stringify(migrated.body));
      assert.ok(migrated.body.rows[0][0] > 0, 'the new file was migrated');
      assert.equal((await s.request('PUT', '/api/environment/nope')).status, 400);
    } finally {
      await s.close();
    }
  });
});

describe('run signal', () => {
  it('maintenance aborts a running transform through its signal: the running model is interrupted, the rest cancelled', async () => {
    const root = project({
      'transform/staging/endless.sql': 'SELECT sum(i * i) AS s FROM range(1000000000000) t(i)\n',
      'transform/marts/after.sql': 'SELECT * FROM staging.endless\n',
    });
    const s = await startServer(root);
    try {
      const building = new Promise((r) => s.app.events.on('model_start', r));
      const transform = s.request('POST', '/api/transform', {});
      await building;
      const t0 = Date.now();
      // A drain deadline far beyond the test: only the signal can end the run this early.
      await s.app.maintenance('test', () => {}, { drainMs: 60_000 });
      assert.ok(Date.now() - t0 < 15_000, `maintenance took ${Date.now() - t0} ms`);
      const r = await transform;
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.status, 'error');
      const byModel = Object.fromEntries(r.body.results.map((x: { model: string; status: string }) => [x.model, x.status]));
      assert.deepEqual(byModel, { 'staging.endless': 'error', 'marts.after': 'upstream_failed' });
      // A new run after maintenance gets a fresh signal.
      fs.writeFileSync(path.join(root, 'transform/staging/endless.sql'), 'SELECT 1 AS s\n');
      const again = await s.request('POST', '/api/transform', {});
      assert.equal(again.body.status, 'success', JSON.stringify(again.body));
    } finally {
      await s.close();
    }
  });
});

describe('write lock', () => {
  it('two transforms through the API run one after the other while reads keep answering', async () => {
    const root = project({
      'transform/staging/heavy.sql': 'SELECT sum(i * i) AS s FROM range(100000000) t(i)\n',
    });
    const s = await startServer(root);
    try {
      const events: string[] = [];
      s.app.events.on('transform_start', () => events.push('start'));
      s.app.events.on('transform_end', () => events.push('end'));
      const first = s.request('POST', '/api/transform', { force: true });
      const second = s.request('POST', '/api/transform', { force: true });
      // A read while the writers run: it does not wait for the lock.
      await waitUntil(() => events.includes('start'), 'the first transform to start');
      const read = await s.request('POST', '/api/query', { sql: 'SELECT 7 AS x' });
      const readDoneWith = [...events];
      assert.equal(read.status, 200);
      const [a, b] = await Promise.all([first, second]);
      assert.equal(a.status, 200, JSON.stringify(a.body));
      assert.equal(b.status, 200, JSON.stringify(b.body));
      assert.equal(a.body.status, 'success');
      assert.equal(b.body.status, 'success');
      assert.deepEqual(events, ['start', 'end', 'start', 'end'], 'the second transform started after the first ended');
      assert.ok(readDoneWith.filter((e) => e === 'end').length < 2, 'the read answered before both transforms finished');
    } finally {
      await s.close();
    }
  });
});
