import assert from 'node:assert/strict';
import v8 from 'node:v8';
import vm from 'node:vm';
import { after, afterEach, before, describe, it } from 'node:test';
import { closeInProcessClis, makeProject, runInProcess, startServer, type TestServer } from '../../helpers.js';

// The CLI's App holds the project's database: closed after each test, before another opens it.
afterEach(closeInProcessClis);

describe('/api/query', () => {
  let s: TestServer;
  before(async () => {
    s = await startServer(makeProject({ 'project.yml': 'name: q\ndatabase:\n  path: q.duckdb\nquery:\n  timeout_seconds:\n    admin: 2\n' }));
    await s.app.db.run("CREATE TABLE orders AS SELECT i AS id, DATE '2024-01-01' + INTERVAL (i) DAY AS day, i % 3 = 0 AS flag FROM range(2500) t(i)");
  });
  after(async () => s.close());

  it('returns columns, types, rows and the window', async () => {
    const r = await s.request('POST', '/api/query', { sql: 'SELECT id, flag FROM orders ORDER BY id', limit: 2, offset: 3 });
    assert.equal(r.status, 200);
    // Browsers read the body by its type: a missing content type left the SQL page without rows.
    assert.match(r.headers.get('content-type') ?? '', /^application\/json/);
    assert.deepEqual(r.body.columns, ['id', 'flag']);
    assert.deepEqual(r.body.column_types, ['BIGINT', 'BOOLEAN']);
    assert.deepEqual(r.body.rows, [
      [3, true],
      [4, false],
    ]);
    assert.equal(r.body.truncated, true);
    assert.equal(r.body.limit, 2);
    assert.equal(r.body.offset, 3);
  });

  it('defaults to 1000 rows and says when it truncated', async () => {
    const r = await s.request('POST', '/api/query', { sql: 'SELECT id FROM orders' });
    assert.equal(r.body.rows.length, 1000);
    assert.equal(r.body.limit, 1000);
    assert.equal(r.body.truncated, true);
    const all = await s.request('POST', '/api/query', { sql: 'SELECT id FROM orders', limit: 5000 });
    assert.equal(all.body.rows.length, 2500);
    assert.equal(all.body.truncated, false);
  });

  it('rejects a limit above the maximum', async () => {
    const r = await s.request('POST', '/api/query', { sql: 'SELECT 1', limit: 100001 });
    assert.equal(r.status, 400);
    assert.equal(r.body.error.code, 'invalid_limit');
  });

  it('binds params as typed prepared-statement values', async () => {
    const r = await s.request('POST', '/api/query', {
      sql: 'SELECT $n + 1 AS n, $f AS f, typeof($f) AS ft, $b AS b, typeof($b) AS bt, CAST($d AS DATE) + 1 AS d, $s AS s',
      params: { n: 41, f: 1.5, b: true, d: '2024-02-28', s: "O'Brien; DROP TABLE orders" },
    });
    assert.equal(r.status, 200, r.text);
    const [n, f, ft, b, bt, d, str] = r.body.rows[0];
    assert.equal(n, 42);
    assert.equal(f, 1.5);
    assert.equal(ft, 'DOUBLE');
    assert.equal(b, true);
    assert.equal(bt, 'BOOLEAN');
    assert.equal(d, '2024-02-29');
    assert.equal(str, "O'Brien; DROP TABLE orders");
    const still = await s.request('POST', '/api/query', { sql: 'SELECT count(*) FROM orders' });
    assert.deepEqual(still.body.rows, [[2500]]);
  });

  it('filters with a bound param', async () => {
    const r = await s.request('POST', '/api/query', { sql: 'SELECT count(*) AS c FROM orders WHERE id < $max AND flag = $flag', params: { max: 10, flag: true } });
    assert.deepEqual(r.body.rows, [[4]]);
  });

  it('rejects bad param names and bad bodies with the field named', async () => {
    const bad = await s.request('POST', '/api/query', { sql: 'SELECT 1', params: { 'a-b': 1 } });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.details.field, 'params.a-b');
    const missing = await s.request('POST', '/api/query', { params: {} });
    assert.equal(missing.status, 400);
    assert.equal(missing.body.error.details.field, 'sql');
    assert.ok(!missing.text.includes('    at '), 'no stack trace');
  });

  it('interrupts a query past the role timeout with 408 and stays usable', async () => {
    const r = await s.request('POST', '/api/query', { sql: 'SELECT sum(a.range * b.range) FROM range(200000) a, range(200000) b' });
    assert.equal(r.status, 408, r.text);
    assert.equal(r.body.error.code, 'query_timeout');
    assert.equal(r.body.error.details.timeout_seconds, 2);
    const next = await s.request('POST', '/api/query', { sql: 'SELECT 7' });
    assert.deepEqual(next.body.rows, [[7]]);
  });

  it('explains a query with a structured plan and raw text', async () => {
    const r = await s.request('POST', '/api/query/explain', { sql: 'SELECT count(*) FROM orders WHERE flag' });
    assert.equal(r.status, 200, r.text);
    assert.ok(Array.isArray(r.body.plan));
    assert.match(r.body.raw, /SEQ_SCAN|TABLE_SCAN|Seq Scan|SCAN/i);
    const refused = await s.request('POST', '/api/query/explain', { sql: 'DROP TABLE orders' });
    assert.equal(refused.status, 400);
  });
});

describe('CSV export', () => {
  let s: TestServer;
  before(async () => {
    s = await startServer(makeProject());
  });
  after(async () => s.close());

  it('quotes fields per RFC 4180', async () => {
    const r = await s.request('POST', '/api/query/export-csv', { sql: `SELECT 'a,b' AS x, 'say "hi"' AS y, NULL AS z, 3 AS n` });
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type') ?? '', /text\/csv/);
    assert.equal(r.text, 'x,y,z,n\r\n"a,b","say ""hi""",,3\r\n');
  });

  it('streams 1,000,000 rows with no row limit and flat memory', async () => {
    // Live heap after a full GC, so garbage the collector has not reached yet under load does not count.
    v8.setFlagsFromString('--expose-gc');
    const gc = vm.runInNewContext('gc') as () => void;
    const liveHeap = () => {
      gc();
      return process.memoryUsage().heapUsed;
    };
    const before = liveHeap();
    let peak = before;
    let reads = 0;
    const res = await fetch(`${s.url}/api/query/export-csv`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ sql: "SELECT i, md5(i::VARCHAR) AS h, repeat('x', 40) AS pad FROM range(1000000) t(i)" }),
    });
    assert.equal(res.status, 200);
    const reader = res.body!.getReader();
    let lines = 0;
    let bytes = 0;
    let lastByte = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      bytes += value.length;
      for (let i = 0; i < value.length; i++) if (value[i] === 10) lines++;
      lastByte = value[value.length - 1];
      if (++reads % 200 === 0) peak = Math.max(peak, liveHeap());
    }
    assert.equal(lines, 1_000_001, 'header plus one line per row');
    assert.equal(lastByte, 10);
    assert.ok(bytes > 80_000_000, `about 90 MB of CSV, got ${bytes}`);
    // Buffering the export would hold ~90 MB (180 MB as JS strings) at once.
    assert.ok(reads > 200, `the export arrived in ${reads} reads: too few to sample memory while streaming`);
    assert.ok(peak - before < 40_000_000, `heap grew by ${Math.round((peak - before) / 1e6)} MB`);
  });

  it('refuses writes before streaming anything', async () => {
    const r = await s.request('POST', '/api/query/export-csv', { sql: "COPY (SELECT 1) TO '/tmp/x.csv'" });
    assert.equal(r.status, 400);
    assert.equal(r.body.error.code, 'read_only_violation');
  });
});

describe('dp query', () => {
  it('prints a table, JSON and CSV, and exits 1 on bad SQL', async () => {
    const root = makeProject();
    const table = await runInProcess(['query', 'SELECT 1 AS one, $x AS x', '--param', 'x=hello', '--project', root]);
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, /one\s+x\n-+\s+-+\n1\s+hello/);
    const json = await runInProcess(['query', 'SELECT 2 AS two', '--json', '--project', root]);
    assert.deepEqual(JSON.parse(json.stdout).rows, [[2]]);
    const csv = await runInProcess(['query', 'SELECT * FROM range(3) t(i)', '--csv', '--project', root]);
    assert.equal(csv.stdout, 'i\r\n0\r\n1\r\n2\r\n');
    const bad = await runInProcess(['query', 'DROP TABLE x', '--project', root]);
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /^error: Only read-only SELECT/m);
    assert.doesNotMatch(bad.stderr, /\n\s+at /);
  });
});
