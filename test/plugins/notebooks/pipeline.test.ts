/**
 * Notebooks in pipeline runs and in the models plugin's commands, through the CLI (in process):
 * `dp run` gives cells the same names across cells as a session (exports, sql cells by id) and
 * stops at the first failing cell, naming it and its line; `dp debug` writes a notebook this
 * plugin reads, saves and runs, and `dp promote` takes the last sql cell of a notebook saved
 * through the API.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { closeInProcessClis, makeProject, runInProcess, startServer, type TestServer } from '../../helpers.js';

const NAMED = {
  cells: [
    { type: 'markdown', source: '# Load with names' },
    { type: 'sql', source: 'CREATE TABLE src AS SELECT * FROM range(5) t(i)' },
    { type: 'sql', id: 'evens', source: 'SELECT i FROM src WHERE i % 2 = 0' },
    { type: 'code', source: 'export const total = evens.reduce((a: number, r: any) => a + Number(r.i), 0);\nconsole.log("total", total);' },
    { type: 'sql', source: 'CREATE TABLE even_copy AS SELECT * FROM src WHERE i % 2 = 0' },
    { type: 'sql', id: 'even_count', source: 'SELECT count(*) AS n FROM evens' },
    { type: 'ingest', source: 'await db.run(`CREATE TABLE result AS SELECT ${total} AS total, ${Number(even_count[0].n)} AS n`);' },
  ],
};

const FAILING = {
  cells: [
    { type: 'sql', source: 'CREATE TABLE before_failure AS SELECT 1 AS x' },
    { type: 'code', source: "const x = 1;\nthrow new Error('stop here');" },
    { type: 'sql', source: 'CREATE TABLE after_failure AS SELECT 2 AS y' },
  ],
};

describe('notebooks in pipelines and model commands (the CLI)', () => {
  let root: string;
  after(closeInProcessClis);
  before(() => {
    root = makeProject({
      'ingest/named.dpnb': JSON.stringify(NAMED),
      'ingest/failing.dpnb': JSON.stringify(FAILING),
      'transform/staging/orders.sql': 'SELECT * FROM (VALUES (1, 10.5), (2, 20.0)) t(id, amount)\n',
    });
  });

  it('dp run gives cells the names of earlier cells, as a session does', async () => {
    const r = await runInProcess(['run', 'ingest/named.dpnb', '--project', root]);
    assert.equal(r.code, 0, r.stderr + r.stdout);
    assert.match(r.stdout, /^total 6$/m);
    const q = await runInProcess(['query', 'SELECT total::INTEGER, n::INTEGER FROM result', '--json', '--project', root]);
    assert.deepEqual(JSON.parse(q.stdout).rows, [[6, 3]]);
  });

  it('dp run stops a notebook at the failing cell, naming the cell and its line', async () => {
    const r = await runInProcess(['run', 'ingest/failing.dpnb', '--project', root, '--json']);
    assert.equal(r.code, 1);
    const result = JSON.parse(r.stdout);
    assert.equal(result.status, 'error');
    assert.equal(result.error, 'cell 1 (code) failed: stop here');
    assert.match(result.stack, /^Error: stop here\n {4}at ingest\/failing\.dpnb#cell1:2:\d+(\n|$)/);
    const tables = await runInProcess(['query', "SELECT table_name FROM duckdb_tables() WHERE table_name LIKE '%failure' ORDER BY 1", '--json', '--project', root]);
    assert.deepEqual(JSON.parse(tables.stdout).rows, [['before_failure']]);
  });

  describe('dp debug and dp promote with notebooks of this plugin', () => {
    let s: TestServer;
    before(async () => {
      const t = await runInProcess(['transform', '--project', root]);
      assert.equal(t.code, 0, t.stderr);
      const d = await runInProcess(['debug', 'staging.orders', '--project', root]);
      assert.equal(d.code, 0, d.stderr);
      await closeInProcessClis(); // the server opens the file next
      s = await startServer(root);
    });
    after(() => s.close());

    it('reads, runs and saves the notebook dp debug wrote, and dp promote takes its last sql cell', async () => {
      const rel = 'notebooks/debug_staging_orders.dpnb';
      const list = await s.request('GET', '/api/notebooks');
      assert.ok(list.body.notebooks.some((n: any) => n.path === rel && n.valid), list.text);
      const nb = await s.request('GET', `/api/notebooks/${rel}`);
      assert.equal(nb.status, 200, nb.text);
      const sqlIndexes = nb.body.cells.map((c: any, i: number) => (c.type === 'sql' ? i : -1)).filter((i: number) => i >= 0);
      assert.ok(sqlIndexes.length >= 2);
      for (const i of sqlIndexes) {
        const r = await s.request('POST', `/api/notebooks/${rel}/execute`, { cell_index: i });
        assert.equal(r.status, 200, `cell ${i}: ${r.text}`);
      }
      // Saved through this plugin, with a new last sql cell: promote takes that one.
      const cells = [...nb.body.cells, { type: 'sql', id: 'big_orders', source: 'SELECT id, amount FROM staging.orders WHERE amount > 15' }];
      assert.equal((await s.request('PUT', `/api/notebooks/${rel}`, { cells })).status, 200);
      await s.close();
      const p = await runInProcess(['promote', rel, '--name', 'big_orders', '--schema', 'marts', '--project', root]);
      assert.equal(p.code, 0, p.stderr + p.stdout);
      await closeInProcessClis();
      assert.match(fs.readFileSync(path.join(root, 'transform/marts/big_orders.sql'), 'utf8'), /amount > 15/);
      s = await startServer(root);
    });
  });
});
