/**
 * The notebook API over real HTTP against a real DuckDB file: list, read, save (validated, atomic,
 * a refused body leaves the file as it was), and each cell type run in the notebook's session:
 * sql (guarded runner, masking for a viewer, 408 past the role's timeout, names across cells),
 * code and ingest (output, last value, exports, errors on the cell's own line), markdown; a
 * viewer refused code; an error in a pipeline notebook stops at that cell when run in order.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { threadPoolSize } from '../../../kernel/query-control.js';
import { startTestServer, type PluginTestServer, type TestCaller } from '../../../sdk/testing.js';
import { waitUntil } from '../../helpers.js';
import { FakeClock } from '../../kernel/fake-clock.js';

const EXPLORE = {
  cells: [
    { type: 'markdown', source: '# Customers\nA look at the customers.' },
    { type: 'sql', id: 'big', source: 'SELECT id, name, email FROM crm.customers WHERE id >= 2 ORDER BY id' },
    { type: 'sql', source: 'SELECT count(*) AS n, max(name) AS last FROM big' },
    { type: 'code', source: "export const total: number = Number(await db.value('SELECT count(*) FROM crm.customers'));\nconsole.log('customers', total);\nconsole.warn('careful');\ntotal * 2" },
    { type: 'code', source: 'const doubled = big.map((r: any) => r.id * 2);\nexport { doubled as ids };\n({ total, ids: doubled, when: new Date(0), big: 10n ** 20n, nothing: undefined })' },
    { type: 'code', source: "const a = 1;\n\nthrow new Error('boom at line three');" },
    { type: 'ingest', source: "await db.run('CREATE TABLE crm.loaded AS SELECT 42 AS answer');\nlog.info('loaded');" },
  ],
};

const PIPELINE = {
  cells: [
    { type: 'markdown', source: '# Load' },
    { type: 'sql', source: 'CREATE TABLE crm.p1 AS SELECT 1 AS x' },
    { type: 'ingest', source: "await db.run('INSERT INTO crm.p1 VALUES (2)');\nthrow new Error('ingest failed here');" },
    { type: 'sql', source: 'CREATE TABLE crm.p_never AS SELECT 3 AS z' },
  ],
};

describe('notebooks API (real HTTP, real DuckDB)', () => {
  let s: PluginTestServer;
  let admin: TestCaller;
  let editor: TestCaller;
  let viewer: TestCaller;
  // Query and cell deadlines count on this clock: the timeout tests move it once their query
  // runs, so no other query here meets a deadline however loaded the machine is.
  const clock = new FakeClock(Date.now());

  before(async () => {
    s = await startTestServer({
      clock,
      plugins: [],
      builtIn: ['notebooks', 'scripts', 'streams', 'models', 'masking', 'query'],
      auth: true,
      projectYml: 'query:\n  timeout_seconds:\n    viewer: 10\n    editor: 10\nnotebooks:\n  row_limit: 2\n',
      files: {
        'notebooks/explore.dpnb': JSON.stringify(EXPLORE, null, 2),
        'ingest/load.dpnb': JSON.stringify(PIPELINE),
        'export/broken.dpnb': '{"cells": 3}',
        'notebooks/readme.md': 'not a notebook',
      },
    });
    await s.db.run("CREATE SCHEMA crm; CREATE TABLE crm.customers AS SELECT * FROM (VALUES (1, 'ann', 'ann@example.com'), (2, 'bob', 'bob@example.com'), (3, 'cy', 'cy@example.com')) t(id, name, email)");
    admin = await s.caller('admin');
    editor = await s.caller('editor');
    viewer = await s.caller('viewer');
    const policy = await admin.request('POST', '/api/masking/policies', { schema_name: 'crm', table_name: 'customers', column_name: 'email', method: 'redact' });
    assert.equal(policy.status, 201, policy.text);
  });
  after(() => s.close());

  const run = (who: TestCaller, file: string, cell_index: number, extra: Record<string, unknown> = {}) => who.request('POST', `/api/notebooks/${file}/execute`, { cell_index, ...extra });

  it('lists notebooks of notebooks/, ingest/ and export/ with title, cell count and modification time', async () => {
    const r = await viewer.request('GET', '/api/notebooks');
    assert.equal(r.status, 200, r.text);
    const byPath = Object.fromEntries(r.body.notebooks.map((n: any) => [n.path, n]));
    assert.deepEqual(Object.keys(byPath).sort(), ['export/broken.dpnb', 'ingest/load.dpnb', 'notebooks/explore.dpnb']);
    assert.equal(byPath['notebooks/explore.dpnb'].title, 'Customers');
    assert.equal(byPath['notebooks/explore.dpnb'].cell_count, EXPLORE.cells.length);
    assert.ok(!Number.isNaN(Date.parse(byPath['notebooks/explore.dpnb'].modified)));
    assert.equal(byPath['ingest/load.dpnb'].title, 'Load');
    assert.equal(byPath['export/broken.dpnb'].valid, false);
  });

  it('reads a notebook, refusing paths outside the notebook folders or the project', async () => {
    const r = await viewer.request('GET', '/api/notebooks/notebooks/explore.dpnb');
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.path, 'notebooks/explore.dpnb');
    assert.deepEqual(r.body.cells, EXPLORE.cells);
    assert.match(r.body.sha256, /^[0-9a-f]{64}$/);
    for (const bad of ['transform/x.dpnb', 'notebooks/..%2F..%2Fetc%2Fpasswd.dpnb', 'notebooks/readme.md']) {
      const refused = await viewer.request('GET', `/api/notebooks/${bad}`);
      assert.equal(refused.status, 400, `${bad}: ${refused.text}`);
      assert.ok(['notebook_path_refused', 'path_outside_project'].includes(refused.body.error.code), refused.text);
      assert.doesNotMatch(refused.text, new RegExp(s.projectRoot.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
    }
    fs.symlinkSync(path.join(s.projectRoot, 'project.yml'), path.join(s.projectRoot, 'notebooks', 'link.dpnb'));
    const link = await viewer.request('GET', '/api/notebooks/notebooks/link.dpnb');
    assert.equal(link.status, 400, link.text);
    assert.equal((await viewer.request('GET', '/api/notebooks/notebooks/absent.dpnb')).status, 404);
  });

  it('saves a valid notebook atomically and refuses bad input with 400, leaving the file untouched', async () => {
    const file = path.join(s.projectRoot, 'notebooks', 'saved.dpnb');
    const first = { cells: [{ type: 'sql', source: 'SELECT 1 AS one' }] };
    const created = await editor.request('PUT', '/api/notebooks/notebooks/saved.dpnb', first);
    assert.equal(created.status, 200, created.text);
    assert.equal(created.body.created, true);
    const before = fs.readFileSync(file, 'utf8');
    assert.deepEqual(JSON.parse(before), first);
    for (const bad of [
      { cells: [{ type: 'python', source: 'print(1)' }] },
      { cells: [{ type: 'sql' }] },
      { cells: [{ type: 'sql', source: 'SELECT 1', id: 'not an identifier' }] },
      { cells: [{ type: 'sql', source: 'SELECT 1', id: 'a' }, { type: 'sql', source: 'SELECT 2', id: 'a' }] },
      { cells: 'nope' },
      { cells: [], extra: true },
    ]) {
      const r = await editor.request('PUT', '/api/notebooks/notebooks/saved.dpnb', bad);
      assert.equal(r.status, 400, `${JSON.stringify(bad)}: ${r.text}`);
      assert.ok(r.body.error.code, r.text);
      assert.equal(fs.readFileSync(file, 'utf8'), before);
    }
    const notJson = await editor.request('PUT', '/api/notebooks/notebooks/saved.dpnb', '{"cells": [', { headers: { 'content-type': 'application/json' } });
    assert.equal(notJson.status, 400);
    assert.equal(fs.readFileSync(file, 'utf8'), before);
    assert.equal((await viewer.request('PUT', '/api/notebooks/notebooks/saved.dpnb', first)).status, 403);
    assert.equal((await editor.request('PUT', '/api/notebooks/transform/x.dpnb', first)).status, 400);
    assert.equal(fs.existsSync(path.join(s.projectRoot, 'transform', 'x.dpnb')), false);

    // Persistence: what was saved is what is read back, and it runs.
    const second = { cells: [{ type: 'markdown', source: '# Saved' }, { type: 'sql', id: 'one', source: 'SELECT 1 AS one' }, { type: 'code', source: 'one[0].one + 1' }] };
    assert.equal((await editor.request('PUT', '/api/notebooks/notebooks/saved.dpnb', second)).status, 200);
    const read = await viewer.request('GET', '/api/notebooks/notebooks/saved.dpnb');
    assert.deepEqual(read.body.cells, second.cells);
    assert.equal((await run(editor, 'notebooks/saved.dpnb', 1)).status, 200);
    const code = await run(editor, 'notebooks/saved.dpnb', 2);
    assert.equal(code.status, 200, code.text);
    assert.equal(code.body.value, 2);
  });

  it('runs a markdown cell as {type: markdown} and refuses a cell index out of range', async () => {
    const md = await run(viewer, 'notebooks/explore.dpnb', 0);
    assert.equal(md.status, 200, md.text);
    assert.equal(md.body.type, 'markdown');
    for (const index of [-1, 7, 99]) {
      const r = await run(viewer, 'notebooks/explore.dpnb', index);
      assert.equal(r.status, 400, r.text);
      assert.equal(r.body.error.code, 'invalid_cell_index');
    }
    assert.equal((await viewer.request('POST', '/api/notebooks/notebooks/explore.dpnb/execute', { cell_index: 1.5 })).status, 400);
  });

  it('runs a sql cell through the guarded runner: row limit, column types, masking for a viewer, not for an admin', async () => {
    const asViewer = await run(viewer, 'notebooks/explore.dpnb', 1);
    assert.equal(asViewer.status, 200, asViewer.text);
    assert.equal(asViewer.body.type, 'sql');
    assert.deepEqual(asViewer.body.columns, ['id', 'name', 'email']);
    assert.equal(asViewer.body.column_types.length, 3);
    assert.equal(asViewer.body.rows.length, 2);
    assert.equal(asViewer.body.truncated, false);
    assert.equal(typeof asViewer.body.duration_ms, 'number');
    for (const row of asViewer.body.rows) assert.doesNotMatch(String(row[2]), /@example\.com/);
    const asAdmin = await run(admin, 'notebooks/explore.dpnb', 1);
    assert.equal(asAdmin.body.rows[0][2], 'bob@example.com');
    const limited = await run(viewer, 'notebooks/explore.dpnb', 0, { cells: [{ type: 'sql', source: 'SELECT * FROM range(10)' }] });
    assert.equal(limited.status, 200, limited.text);
    assert.equal(limited.body.rows.length, 2);
    assert.equal(limited.body.truncated, true);
  });

  it('lets a later sql cell select from an earlier sql cell by its id (masking still applies)', async () => {
    const r = await run(viewer, 'notebooks/explore.dpnb', 2);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.rows, [[2, 'cy']]);
    const leak = await run(viewer, 'notebooks/explore.dpnb', 2, { cells: [...EXPLORE.cells.slice(0, 2), { type: 'sql', source: 'SELECT email FROM big' }] });
    assert.equal(leak.status, 200, leak.text);
    for (const row of leak.body.rows) assert.doesNotMatch(String(row[0]), /@example\.com/);
  });

  it('refuses a write statement to a viewer and runs it for an editor', async () => {
    const cells = [{ type: 'sql', source: 'CREATE TABLE crm.by_viewer AS SELECT 1 AS x' }];
    const refused = await run(viewer, 'notebooks/explore.dpnb', 0, { cells });
    assert.equal(refused.status, 400, refused.text);
    assert.equal(refused.body.error.code, 'read_only_violation');
    const ok = await run(editor, 'notebooks/explore.dpnb', 0, { cells: [{ type: 'sql', source: 'CREATE TABLE crm.by_editor AS SELECT 1 AS x' }] });
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.body.statement, 'write');
    assert.equal(await s.db.value('SELECT count(*)::INTEGER FROM crm.by_editor'), 1);
  });

  it('answers 408 for a sql cell past the role timeout', async () => {
    const answer = run(viewer, 'notebooks/explore.dpnb', 0, { cells: [{ type: 'sql', source: 'SELECT sum(i) FROM range(10000000000000) t(i)' }] });
    await waitUntil(() => s.app.queries.stats().running.viewer === 1, "the viewer's query to run");
    // Short of the viewer's 10 s the query goes on; at 10 s it is stopped.
    await clock.advance(9_999);
    assert.equal(s.app.queries.stats().running.viewer, 1);
    await clock.advance(1);
    const r = await answer;
    assert.equal(r.status, 408, r.text);
    assert.equal(r.body.error.code, 'query_timeout');
    assert.equal(r.body.error.details.timeout_seconds, 10);
    await waitUntil(() => s.app.queries.stats().running.viewer === 0, 'the interrupted query to give back its slot');
  });

  it('stops a code cell past the role timeout with 408, interrupting its query', async () => {
    // Counting connections out: none is, once what earlier tests started has settled.
    const lent = 0;
    await waitUntil(() => s.app.lentConnections() === lent, 'no connection out');
    const answer = run(editor, 'notebooks/explore.dpnb', 0, { cells: [{ type: 'code', source: "await db.value('SELECT sum(i) FROM range(10000000000000) t(i)')" }] });
    await waitUntil(() => s.app.lentConnections() === lent + 1, "the cell's query to take a connection");
    await clock.advance(9_999);
    assert.equal(s.app.lentConnections(), lent + 1);
    await clock.advance(1);
    const r = await answer;
    assert.equal(r.status, 408, r.text);
    assert.equal(r.body.error.code, 'query_timeout');
    assert.equal(r.body.error.details.cell_index, 0);
    // The query was interrupted: its connection comes back (it would run for hours otherwise).
    await waitUntil(() => s.app.lentConnections() === lent, "the cell's interrupted query to give back its connection");
    // The session and the database are still usable.
    assert.equal((await run(editor, 'notebooks/explore.dpnb', 0, { cells: [{ type: 'code', source: "await db.value('SELECT 7')" }] })).body.value, 7);
  });

  it('stops a code cell whose query still waited for a worker when the deadline passed', async () => {
    // Every libuv worker of this process held by the cell's own sleeping queries, so its last
    // query waits for one; the deadline passes, the sleepers are interrupted, and the waiting
    // query starts after the interrupt was sent (DuckDB forgets such an interrupt: a single one
    // would leave it running for hours).
    const workers = threadPoolSize();
    // Connections ready in the pool: borrowing one needs no worker.
    await Promise.all(Array.from({ length: workers + 2 }, () => s.db.value('SELECT 1')));
    const lent = 0;
    await waitUntil(() => s.app.lentConnections() === lent, 'no connection out');
    const source = `const held = Array.from({ length: ${workers} }, () => db.value('SELECT sleep_ms(600000)').catch(() => null));\nawait db.value('SELECT sum(i) FROM range(10000000000000) t(i)');`;
    const answer = run(editor, 'notebooks/explore.dpnb', 0, { cells: [{ type: 'code', source }] });
    await waitUntil(() => s.app.lentConnections() === lent + workers + 1, "the cell's queries to take their connections");
    await clock.advance(10_000);
    const r = await answer;
    assert.equal(r.status, 408, r.text);
    await waitUntil(() => s.app.lentConnections() === lent, "the cell's queries to give back their connections");
  });

  it('refuses code and ingest cells to a viewer (403) and runs nothing', async () => {
    for (const index of [3, 6]) {
      const r = await run(viewer, 'notebooks/explore.dpnb', index);
      assert.equal(r.status, 403, r.text);
      assert.equal(r.body.error.code, 'insufficient_role');
    }
    assert.equal(await s.db.value("SELECT count(*)::INTEGER FROM duckdb_tables() WHERE table_name = 'loaded'"), 0);
  });

  it('runs code cells with db, captured output, the last value and exports seen by later cells', async () => {
    const first = await run(editor, 'notebooks/explore.dpnb', 3);
    assert.equal(first.status, 200, first.text);
    assert.equal(first.body.type, 'code');
    assert.deepEqual(first.body.output, [
      { stream: 'stdout', text: 'customers 3' },
      { stream: 'stderr', text: 'careful' },
    ]);
    assert.equal(first.body.value, 6);
    assert.deepEqual(first.body.exports, ['total']);
    await run(editor, 'notebooks/explore.dpnb', 1);
    const second = await run(editor, 'notebooks/explore.dpnb', 4);
    assert.equal(second.status, 200, second.text);
    assert.deepEqual(second.body.value, { total: 3, ids: [4, 6], when: '1970-01-01T00:00:00.000Z', big: '100000000000000000000', nothing: null });
    assert.deepEqual(second.body.exports, ['ids']);
  });

  it('answers a failing code cell with the standard error body and the line within the cell', async () => {
    const r = await run(editor, 'notebooks/explore.dpnb', 5);
    assert.equal(r.status, 400, r.text);
    assert.equal(r.body.error.code, 'notebook_cell_error');
    assert.match(r.body.error.message, /boom at line three/);
    // Cells are counted from 0 everywhere (SPEC's cell_index): the message names the same cell.
    assert.match(r.body.error.message, /^cell 5 line 3: /);
    assert.equal(r.body.error.details.cell_index, 5);
    assert.equal(r.body.error.details.line, 3);
    assert.doesNotMatch(r.text, /\.dp\/scripts|at async|node:internal/);
    const compile = await run(editor, 'notebooks/explore.dpnb', 0, { cells: [{ type: 'code', source: 'const ok = 1;\nconst x = ;' }] });
    assert.equal(compile.status, 400, compile.text);
    assert.equal(compile.body.error.code, 'notebook_cell_error');
    assert.equal(compile.body.error.details.line, 2);
  });

  it('runs an ingest cell that writes to the warehouse', async () => {
    const r = await run(editor, 'notebooks/explore.dpnb', 6);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.output, [{ stream: 'stdout', text: 'loaded' }]);
    assert.equal(await s.db.value('SELECT answer FROM crm.loaded'), 42);
  });

  it('stops a pipeline notebook at the failing cell when its cells are run in order', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < PIPELINE.cells.length; i++) {
      const r = await run(editor, 'ingest/load.dpnb', i);
      statuses.push(r.status);
      if (r.status !== 200) {
        assert.equal(r.body.error.details.cell_index, 2);
        assert.equal(r.body.error.details.line, 2);
        break;
      }
    }
    assert.deepEqual(statuses, [200, 200, 400]);
    assert.equal(await s.db.value("SELECT count(*)::INTEGER FROM duckdb_tables() WHERE table_name = 'p_never'"), 0);
  });
});

describe('notebook sessions and the API description', () => {
  let s: PluginTestServer;
  // Sessions idle out on this clock: the test moves it instead of waiting.
  const clock = new FakeClock(Date.now());
  before(async () => {
    s = await startTestServer({
      clock,
      plugins: [],
      builtIn: ['notebooks', 'scripts', 'streams', 'models', 'query'],
      projectYml: 'notebooks:\n  session_idle_seconds: 1\n',
      files: {
        'notebooks/s.dpnb': JSON.stringify({ cells: [{ type: 'code', source: 'export const x = 41;' }, { type: 'code', source: 'x + 1' }] }),
        'notebooks/other.dpnb': JSON.stringify({ cells: [{ type: 'code', source: 'typeof x' }] }),
      },
    });
  });
  after(() => s.close());

  it('keeps exports per notebook and releases an idle session', async () => {
    assert.equal((await s.request('POST', '/api/notebooks/notebooks/s.dpnb/execute', { cell_index: 0 })).status, 200);
    const next = await s.request('POST', '/api/notebooks/notebooks/s.dpnb/execute', { cell_index: 1 });
    assert.equal(next.body.value, 42, next.text);
    // Another notebook has its own session.
    assert.equal((await s.request('POST', '/api/notebooks/notebooks/other.dpnb/execute', { cell_index: 0 })).body.value, 'undefined');
    // Just short of the idle time, the session is kept (and a run restarts its idle time).
    await clock.advance(999);
    assert.equal((await s.request('POST', '/api/notebooks/notebooks/s.dpnb/execute', { cell_index: 1 })).body.value, 42);
    await clock.advance(1000);
    const released = await s.request('POST', '/api/notebooks/notebooks/s.dpnb/execute', { cell_index: 1 });
    assert.equal(released.status, 400, released.text);
    assert.match(released.body.error.message, /x is not defined/);
    assert.equal(released.body.error.details.line, 1);
  });

  it('describes every notebook route with its request and response schema at /docs', async () => {
    const docs = await s.request('GET', '/docs/json');
    assert.equal(docs.status, 200);
    const paths = docs.body.paths as Record<string, Record<string, any>>;
    const list = paths['/api/notebooks'];
    assert.ok(list?.get?.responses?.['200'], 'GET /api/notebooks');
    const one = Object.entries(paths).find(([p, ops]) => p.startsWith('/api/notebooks/') && ops.put);
    assert.ok(one, Object.keys(paths).filter((p) => p.includes('notebook')).join(', '));
    const [, ops] = one;
    assert.ok(ops.get?.responses?.['200']);
    assert.ok(ops.put?.requestBody && ops.put?.responses?.['200']);
    assert.ok(ops.post?.requestBody && ops.post?.responses?.['200']);
    assert.match(JSON.stringify(ops.post.requestBody), /cell_index/);
    assert.match(JSON.stringify(ops.put.requestBody), /markdown/);
    const outputs = Object.entries(paths).find(([p]) => p.startsWith('/api/notebooks/outputs/'));
    assert.ok(outputs?.[1].get?.responses?.['200'], 'GET /api/notebooks/outputs/{file}');
  });
});
