/**
 * Issue 11 point 1: more long queries at once than the server has DuckDB workers. Each one
 * must end with 408 near its role's deadline (time spent waiting counts), short requests
 * (health, login) must still be answered meanwhile, and SIGTERM must still stop the server.
 * Runs the real `dp serve` binary, so the thread pool it sizes is the one under test.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { makeProject, spawnServe, startServer, waitUntil, type TestServer } from '../helpers.js';
import { FakeClock } from '../kernel/fake-clock.js';

/** A query that keeps its DuckDB worker busy computing until it is interrupted. */
const LONG_SQL = 'SELECT sum(i) FROM range(10000000000000) t(i)';
/**
 * A query that holds its worker just as long without computing: DuckDB's sleep_ms stops at an
 * interrupt like a scan does. The real-time tests below hold a dozen workers for seconds; with
 * LONG_SQL that cost a full machine's CPU for the whole deadline and slowed everything beside.
 */
const SLEEPING_SQL = 'SELECT sleep_ms(600000)';

interface Served {
  child: ChildProcess;
  url: string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

async function serve(root: string, env: Record<string, string> = {}): Promise<Served> {
  // A short grace on SIGTERM: the drain interrupts the long queries instead of waiting out their deadline.
  const served = await spawnServe(root, { auth: true, env, args: ['--shutdown-grace', '1'] });
  return { child: served.child, url: served.url, exited: served.exited };
}

async function call(url: string, method: string, path: string, body?: unknown, token?: string, timeoutMs = 20_000) {
  const res = await fetch(url + path, {
    method,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const text = await res.text();
  let parsed: any = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    /* not JSON */
  }
  return { status: res.status, body: parsed };
}

describe('long queries beyond the worker pool (dp serve)', () => {
  let root: string;
  let server: Served;
  let viewer: string;
  // Long enough that health and login are answered inside it on a loaded machine too (at load
  // 30 they took more than 2 s).
  const TIMEOUT_S = 8;

  before(async () => {
    root = makeProject({ 'project.yml': `name: deadlines\ndatabase:\n  path: d.duckdb\nquery:\n  timeout_seconds:\n    viewer: ${TIMEOUT_S}\n` });
    // The pool as a default dp serve has it unless the environment says otherwise.
    const env = { ...process.env };
    delete env.UV_THREADPOOL_SIZE;
    server = await serve(root, env as Record<string, string>);
    const admin = (await call(server.url, 'POST', '/api/auth/setup', { username: 'root', password: 'secret1' })).body.token as string;
    assert.ok(admin);
    assert.equal((await call(server.url, 'POST', '/api/users', { username: 'vera', password: 'secret1', role: 'viewer' }, admin)).status, 201);
    viewer = (await call(server.url, 'POST', '/api/auth/login', { username: 'vera', password: 'secret1' })).body.token;
    assert.ok(viewer);
  });

  after(async () => {
    server.child.kill('SIGKILL');
    fs.rmSync(root, { recursive: true, force: true });
  });

  it('ends every long query with 408 near its deadline while health and login are still answered', async () => {
    // More than the 16 workers dp serve starts with, so some wait for a worker before running.
    const COUNT = 24;
    const started = Date.now();
    const long = Array.from({ length: COUNT }, () =>
      call(server.url, 'POST', '/api/query', { sql: SLEEPING_SQL }, viewer, 60_000).then(
        (r) => ({ ...r, seconds: (Date.now() - started) / 1000 }),
        (e: Error) => ({ status: 0, body: e.name, seconds: (Date.now() - started) / 1000 }),
      ),
    );
    let pending = COUNT;
    for (const p of long) void p.then(() => pending--);
    // A head start for the queries: the separate process shows no state a test could wait on,
    // and a read that arrived first would still pass (the pool is proved by the 408s below).
    await new Promise((r) => setTimeout(r, 300));
    // Short work is answered while the long queries still run (a wedged pool would hang these).
    const health = await call(server.url, 'GET', '/api/health', undefined, undefined, 15_000);
    assert.equal(health.status, 200);
    const login = await call(server.url, 'POST', '/api/auth/login', { username: 'vera', password: 'secret1' }, undefined, 15_000);
    assert.equal(login.status, 200);
    assert.ok(pending > 0, 'health and login were answered before the long queries ended');
    const results = await Promise.all(long);
    for (const r of results) {
      assert.equal(r.status, 408, JSON.stringify(r.body));
      assert.equal(r.body.error.code, 'query_timeout');
      assert.equal(r.body.error.details.timeout_seconds, TIMEOUT_S);
      // Queued time counts: nobody waits for the queries ahead of it and then a full timeout of its own.
      assert.ok(r.seconds >= TIMEOUT_S - 0.1, `ended after ${r.seconds} s, before its deadline`);
      assert.ok(r.seconds < TIMEOUT_S + 10, `ended after ${r.seconds} s`);
    }
    // Nothing is left running: a short query gets a worker at once.
    const short = await call(server.url, 'POST', '/api/query', { sql: 'SELECT 42 AS answer' }, viewer, 15_000);
    assert.equal(short.status, 200);
    assert.deepEqual(short.body.rows, [[42]]);
  });

  it('stops on SIGTERM while long queries run', async () => {
    const long = Array.from({ length: 20 }, () => call(server.url, 'POST', '/api/query', { sql: SLEEPING_SQL }, viewer, 60_000).catch(() => null));
    await new Promise((r) => setTimeout(r, 300));
    server.child.kill('SIGTERM');
    const exit = await Promise.race([server.exited, new Promise<null>((r) => setTimeout(() => r(null), 30_000))]);
    assert.ok(exit, 'the server was still running 30 s after SIGTERM');
    await Promise.all(long);
  });
});

describe('query slots (in process)', () => {
  let s: TestServer;
  // Deadlines count on this clock: the test moves it once every query is running or queued.
  const clock = new FakeClock(Date.now());
  // Room for the three queued queries of the deadline test, and no more.
  const MAX_QUEUED = 3;
  before(async () => {
    s = await startServer(
      makeProject({ 'project.yml': `name: slots\ndatabase:\n  path: s.duckdb\nquery:\n  timeout_seconds:\n    admin: 5\n  max_concurrent:\n    admin: 1\n  max_queued: ${MAX_QUEUED}\n` }),
      { clock },
    );
  });
  after(async () => s.close());

  it('runs one query of the role at a time, and a query queued past its deadline answers 408 without ever running', async () => {
    let maxRunning = 0;
    const sample = () => {
      const st = s.app.queries.stats();
      maxRunning = Math.max(maxRunning, st.running.admin);
      return st;
    };
    const results = Promise.all(Array.from({ length: 4 }, () => s.request('POST', '/api/query', { sql: LONG_SQL })));
    await waitUntil(() => {
      const st = sample();
      return st.running.admin === 1 && st.queued.admin === 3;
    }, 'one query running and three queued');
    // Short of the 5 s deadline nothing ends; at 5 s all four do: time spent queued counts (a
    // queued query that started its deadline at its slot would still be waiting).
    await clock.advance(4_999);
    assert.deepEqual(sample(), { running: { admin: 1, editor: 0, viewer: 0 }, queued: { admin: 3, editor: 0, viewer: 0 } });
    await clock.advance(1);
    for (const r of await results) {
      assert.equal(r.status, 408, r.text);
      assert.equal(r.body.error.code, 'query_timeout');
    }
    assert.equal(maxRunning, 1);
    // The slot comes back once DuckDB let go of the interrupted query.
    await waitUntil(() => sample().running.admin === 0, 'the slot to come back');
    assert.equal(maxRunning, 1);
    assert.deepEqual(s.app.queries.stats(), { running: { admin: 0, editor: 0, viewer: 0 }, queued: { admin: 0, editor: 0, viewer: 0 } });
    const next = await s.request('POST', '/api/query', { sql: 'SELECT 7' });
    assert.deepEqual(next.body.rows, [[7]]);
  });

  it('refuses a query when too many of its role wait (503 query_queue_full)', async () => {
    // No deadline passes here (the clock stands still): the held queries end when their clients leave.
    const clients = Array.from({ length: 1 + MAX_QUEUED }, () => new AbortController());
    const held = clients.map((c) =>
      fetch(`${s.url}/api/query`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ sql: LONG_SQL }), signal: c.signal }).catch((e: Error) => e.name),
    );
    // The next is sent only once the slot is taken and the queue full.
    await waitUntil(() => {
      const st = s.app.queries.stats();
      return st.running.admin === 1 && st.queued.admin === MAX_QUEUED;
    }, 'one query running and a full queue', 120_000);
    const full = await s.request('POST', '/api/query', { sql: LONG_SQL });
    assert.equal(full.status, 503, full.text);
    assert.equal(full.body.error.code, 'query_queue_full');
    assert.equal(full.headers.get('retry-after'), '1');
    for (const c of clients) c.abort();
    assert.deepEqual(await Promise.all(held), clients.map(() => 'AbortError'));
    await waitUntil(() => s.app.queries.stats().running.admin + s.app.queries.stats().queued.admin === 0, 'the held queries to stop');
  });
});
