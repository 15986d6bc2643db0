/**
 * Issue 10 point 11: a page (`limit`, `offset`) is asked of DuckDB, so a large offset no longer
 * reads every skipped row into the server's memory (one request grew it from 174 MB to 3.8 GB).
 */
import assert from 'node:assert/strict';
import v8 from 'node:v8';
import vm from 'node:vm';
import { after, before, describe, it } from 'node:test';
import { makeProject, startServer, type TestServer } from '../../helpers.js';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

/** Peak growth of the live heap and of RSS while `fn` runs, sampled every few milliseconds. */
async function growth(fn: () => Promise<unknown>): Promise<{ heap: number; rss: number }> {
  gc();
  const base = process.memoryUsage();
  let heap = 0;
  let rss = 0;
  const sample = () => {
    const m = process.memoryUsage();
    heap = Math.max(heap, m.heapUsed - base.heapUsed);
    rss = Math.max(rss, m.rss - base.rss);
  };
  const timer = setInterval(sample, 2);
  try {
    await fn();
  } finally {
    clearInterval(timer);
    sample();
  }
  return { heap, rss };
}

describe('/api/query paging', () => {
  let s: TestServer;
  before(async () => {
    s = await startServer(makeProject({ 'project.yml': 'name: paging\ndatabase:\n  path: p.duckdb\n' }));
    await s.app.db.run('CREATE TABLE t AS SELECT i AS id, i % 7 AS g FROM range(10000) r(i)');
  });
  after(async () => s.close());

  const page = (body: Record<string, unknown>) => s.request('POST', '/api/query', body);

  it('a large offset keeps memory bounded by the page, not by the rows skipped', async () => {
    // 2,000,000 rows of ~150 bytes: reading the skipped rows into JavaScript holds several hundred MB.
    const sql = "SELECT i, repeat('x', 120) || i::VARCHAR AS pad FROM range(2000000) t(i)";
    let r: Awaited<ReturnType<typeof page>> | undefined;
    const grew = await growth(async () => {
      r = await page({ sql, limit: 10, offset: 1_999_990 });
    });
    assert.equal(r!.status, 200, r!.text);
    assert.deepEqual(
      r!.body.rows.map((row: unknown[]) => row[0]),
      Array.from({ length: 10 }, (_, i) => 1_999_990 + i),
    );
    assert.equal(r!.body.truncated, false);
    assert.ok(grew.heap < 60_000_000, `heap grew by ${Math.round(grew.heap / 1e6)} MB`);
    assert.ok(grew.rss < 150_000_000, `RSS grew by ${Math.round(grew.rss / 1e6)} MB`);
  });

  it('a query with a LIMIT of its own is paged chunk by chunk: no skipped row is kept in JavaScript', async () => {
    const sql = "SELECT i, repeat('x', 120) || i::VARCHAR AS pad FROM range(3000000) t(i) LIMIT 2000000";
    let r: Awaited<ReturnType<typeof page>> | undefined;
    const grew = await growth(async () => {
      r = await page({ sql, limit: 5, offset: 1_999_997 });
    });
    assert.equal(r!.status, 200, r!.text);
    assert.deepEqual(
      r!.body.rows.map((row: unknown[]) => row[0]),
      [1_999_997, 1_999_998, 1_999_999],
    );
    // RSS is not bounded here: DuckDB's LIMIT operator itself buffers up to its row count
    // (engine memory, under DuckDB's memory_limit), which no page in SQL can avoid.
    assert.ok(grew.heap < 60_000_000, `heap grew by ${Math.round(grew.heap / 1e6)} MB`);
  });

  it('pages keep the query order, its column names and the truncated flag', async () => {
    const r = await page({ sql: 'SELECT id, id AS id FROM t ORDER BY id DESC', limit: 3, offset: 2 });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.columns, ['id', 'id'], 'duplicate names are kept (a subquery would rename them)');
    assert.deepEqual(r.body.rows, [
      [9997, 9997],
      [9996, 9996],
      [9995, 9995],
    ]);
    assert.equal(r.body.truncated, true);
    const last = await page({ sql: 'SELECT id FROM t ORDER BY id', limit: 5, offset: 9998 });
    assert.deepEqual(last.body.rows, [[9998], [9999]]);
    assert.equal(last.body.truncated, false);
    const beyond = await page({ sql: 'SELECT id FROM t', limit: 5, offset: 20000 });
    assert.deepEqual(beyond.body.rows, []);
  });

  it('pages set operations, CTEs, VALUES, params, trailing semicolons and comments', async () => {
    const cases: Array<[Record<string, unknown>, unknown[][]]> = [
      [{ sql: 'SELECT 1 AS x UNION ALL SELECT 2 UNION ALL SELECT 3 ORDER BY x', limit: 1, offset: 1 }, [[2]]],
      [{ sql: 'WITH a AS (SELECT id FROM t WHERE g = 0) SELECT id FROM a ORDER BY id', limit: 2, offset: 1 }, [[7], [14]]],
      [{ sql: 'VALUES (1), (2), (3)', limit: 1, offset: 2 }, [[3]]],
      [{ sql: 'SELECT id FROM t WHERE id >= $lo ORDER BY id', params: { lo: 100 }, limit: 2, offset: 1 }, [[101], [102]]],
      [{ sql: 'SELECT id FROM t ORDER BY id; -- the end', limit: 1, offset: 4 }, [[4]]],
      [{ sql: "SELECT id FROM t WHERE 'a;--' <> '' ORDER BY id /* last */ ;", limit: 1, offset: 5 }, [[5]]],
      [{ sql: 'SELECT id FROM t ORDER BY id LIMIT 10 OFFSET 3', limit: 2, offset: 1 }, [[4], [5]]],
    ];
    for (const [body, rows] of cases) {
      const r = await page(body);
      assert.equal(r.status, 200, `${body.sql}: ${r.text}`);
      assert.deepEqual(r.body.rows, rows, String(body.sql));
    }
  });

  it('pages DESCRIBE and SUMMARIZE over their own result, not the query they describe', async () => {
    const d = await page({ sql: 'DESCRIBE SELECT id, g FROM t', limit: 1, offset: 1 });
    assert.equal(d.status, 200, d.text);
    assert.equal(d.body.rows.length, 1);
    assert.equal(d.body.rows[0][0], 'g');
    const sm = await page({ sql: 'SUMMARIZE SELECT id FROM t', limit: 1 });
    assert.equal(sm.status, 200, sm.text);
    const count = sm.body.rows[0][sm.body.columns.indexOf('count')];
    assert.equal(Number(count), 10000, 'the summary covers every row');
  });

  it('refuses the parameter names the page uses', async () => {
    const r = await page({ sql: 'SELECT $dp_window_limit AS x', params: { dp_window_limit: 5 } });
    assert.equal(r.status, 400);
    assert.equal(r.body.error.code, 'invalid_param_name');
  });
});
