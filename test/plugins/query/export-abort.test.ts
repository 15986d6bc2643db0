/**
 * Issue 11 point 2 / issue 10 point 11: CSV export has the role deadline, and a client that
 * leaves (before or after the first chunk) stops its query, so aborted exports never wedge
 * the server.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { makeProject, startServer, waitUntil, type TestServer } from '../../helpers.js';

const LONG_SQL = 'SELECT sum(i) FROM range(10000000000000) t(i)';
const idle = { running: { admin: 0, editor: 0, viewer: 0 }, queued: { admin: 0, editor: 0, viewer: 0 } };

async function untilIdle(s: TestServer): Promise<void> {
  await waitUntil(() => JSON.stringify(s.app.queries.stats()) === JSON.stringify(idle), 'no query running or queued');
}

/** Queries of the admin role running or waiting for a slot. */
const accepted = (s: TestServer) => s.app.queries.stats().running.admin + s.app.queries.stats().queued.admin;

function exportCsv(s: TestServer, sql: string, signal?: AbortSignal) {
  return fetch(`${s.url}/api/query/export-csv`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ sql }), signal });
}

describe('CSV export: deadline and disconnect', () => {
  let s: TestServer;
  before(async () => {
    s = await startServer(makeProject({ 'project.yml': 'name: exp\ndatabase:\n  path: e.duckdb\nquery:\n  timeout_seconds:\n    admin: 2\n' }));
  });
  after(async () => s.close());

  it('answers 408 query_timeout when the export runs past the role deadline before its first row', async () => {
    const res = await exportCsv(s, LONG_SQL, AbortSignal.timeout(30_000));
    assert.equal(res.status, 408);
    const body = await res.json();
    assert.equal(body.error.code, 'query_timeout');
    assert.equal(body.error.details.timeout_seconds, 2);
    await untilIdle(s);
  });

  it('four exports whose clients leave before the first chunk stop their queries and wedge nothing', async () => {
    const clients = Array.from({ length: 4 }, () => new AbortController());
    const pending = clients.map((c) => exportCsv(s, LONG_SQL, c.signal).catch((e: Error) => e.name));
    await waitUntil(() => accepted(s) === 4, 'the four exports to reach the query slots');
    for (const c of clients) c.abort();
    assert.deepEqual(await Promise.all(pending), ['AbortError', 'AbortError', 'AbortError', 'AbortError']);
    // Well before the 2 s deadline, nothing runs any more.
    await untilIdle(s);
    const short = await s.request('POST', '/api/query', { sql: 'SELECT 42 AS answer' });
    assert.equal(short.status, 200);
    assert.deepEqual(short.body.rows, [[42]]);
  });

  it('an export whose client leaves after the first chunk stops its query', async () => {
    const client = new AbortController();
    // Streams rows for as long as it is read.
    const res = await exportCsv(s, "SELECT i, repeat('x', 100) AS pad FROM range(10000000000000) t(i)", client.signal);
    assert.equal(res.status, 200);
    const reader = res.body!.getReader();
    const first = await reader.read();
    assert.ok(first.value && first.value.length > 0);
    assert.equal(s.app.queries.stats().running.admin, 1);
    client.abort();
    await untilIdle(s);
  });

  it('an export past its deadline after the first chunk is cut off, and its query stopped', async () => {
    const res = await exportCsv(s, "SELECT i, repeat('x', 100) AS pad FROM range(10000000000000) t(i)", AbortSignal.timeout(30_000));
    assert.equal(res.status, 200);
    let bytes = 0;
    const outcome = await (async () => {
      try {
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) bytes += chunk.length;
        return 'complete';
      } catch (e) {
        return (e as Error).name;
      }
    })();
    assert.notEqual(outcome, 'complete', 'an unending export cannot have completed');
    assert.notEqual(outcome, 'TimeoutError', 'the server cut the export at the 2 s deadline, not the client at 30 s');
    assert.ok(bytes > 0);
    await untilIdle(s);
  });
});

describe('POST /api/query and /api/query/explain: disconnect', () => {
  let s: TestServer;
  before(async () => {
    // A deadline far beyond the wait below: only the client leaving can stop these queries.
    s = await startServer(makeProject({ 'project.yml': 'name: q\ndatabase:\n  path: q.duckdb\nquery:\n  timeout_seconds:\n    admin: 120\n' }));
  });
  after(async () => s.close());

  it('a query whose client leaves is stopped long before its deadline, and the server answers the next one', async () => {
    const clients = Array.from({ length: 3 }, () => new AbortController());
    const send = (c: AbortController) =>
      fetch(`${s.url}/api/query`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ sql: LONG_SQL }), signal: c.signal }).catch((e: Error) => e.name);
    const pending = clients.map(send);
    // The test process keeps Node's pool of 4 workers, so 2 run and 1 waits for a slot.
    await waitUntil(() => accepted(s) === 3, 'the three queries to reach the query slots');
    for (const c of clients) c.abort();
    assert.deepEqual(await Promise.all(pending), ['AbortError', 'AbortError', 'AbortError']);
    await untilIdle(s);
    const short = await s.request('POST', '/api/query', { sql: 'SELECT 42 AS answer' });
    assert.deepEqual(short.body.rows, [[42]]);
  });
});
