/**
 * Notebook sessions across users (issue 28 point 5), real HTTP with --auth and a real DuckDB
 * file: what a viewer's cells leave in a session (names of sql cells, shadowed globals) is never
 * seen by an admin's later code cell, and a viewer's queue of slow runs is bounded (429) and
 * never holds another user's run of the same notebook. The outputs collaborators see
 * (GET /api/notebooks/outputs/…) reach only callers of the role that made them: an admin's
 * unmasked rows never reach a viewer.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestServer, type PluginTestServer, type TestCaller } from '../../sdk/testing.js';

const NOTEBOOK = {
  cells: [
    { type: 'sql', id: 'totals', source: 'SELECT 1 AS n' },
    { type: 'markdown', source: '# Then' },
    { type: 'code', source: "[typeof planted, Number('5')]" },
  ],
};

/** Never finishes within the viewer's timeout on its own: stopped when its client leaves. */
const ENDLESS = 'SELECT sum(hash(range)) FROM range(100000000000000)';

describe('notebook sessions are per user (real HTTP, --auth)', () => {
  let s: PluginTestServer;
  let admin: TestCaller;
  let viewer: TestCaller;

  before(async () => {
    s = await startTestServer({
      plugins: [],
      builtIn: ['notebooks', 'scripts', 'streams', 'models', 'query'],
      auth: true,
      projectYml: 'query:\n  timeout_seconds:\n    viewer: 120\nnotebooks:\n  max_pending_runs: 2\n',
      files: { 'notebooks/shared.dpnb': JSON.stringify(NOTEBOOK, null, 2) },
    });
    admin = await s.caller('admin');
    viewer = await s.caller('viewer');
  });
  after(() => s?.close());

  const run = (who: TestCaller, cell_index: number, cells?: unknown[]) =>
    who.request('POST', '/api/notebooks/notebooks/shared.dpnb/execute', { cell_index, ...(cells ? { cells } : {}) });

  it("a viewer's sql cells with its own names (a global's among them) are not read by an admin's later code cell", async () => {
    const planted = [
      { type: 'sql', id: 'planted', source: "SELECT 'from the viewer' AS who" },
      { type: 'sql', id: 'Number', source: 'SELECT 1 AS shadow' },
      { type: 'code', source: '1' },
    ];
    for (const i of [0, 1]) {
      const r = await run(viewer, i, planted);
      assert.equal(r.status, 200, r.text);
    }
    const r = await run(admin, 2);
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.value, ['undefined', 5]);
  });

  it("shares a cell's output with callers of the role that ran it, and withholds it from other roles", async () => {
    const r = await run(admin, 0);
    assert.equal(r.status, 200, r.text);
    assert.equal(typeof r.body.execution_count, 'number');
    const url = '/api/notebooks/outputs/notebooks/shared.dpnb';
    const asAdmin = await admin.request('GET', url);
    assert.equal(asAdmin.status, 200, asAdmin.text);
    const mine = asAdmin.body.outputs.find((o: { cell_index: number }) => o.cell_index === 0);
    assert.deepEqual(mine.result.rows, [[1]]);
    assert.equal(mine.execution_count, r.body.execution_count);
    const asViewer = await viewer.request('GET', url);
    assert.equal(asViewer.status, 200, asViewer.text);
    const theirs = asViewer.body.outputs.find((o: { cell_index: number }) => o.cell_index === 0);
    assert.equal(theirs.withheld, true);
    assert.equal(theirs.result, undefined);
    assert.equal(asViewer.body.execution_count, asAdmin.body.execution_count);
  });

  it("a viewer's queue is bounded with a 429 and never holds an admin's run of the same notebook", async () => {
    const leave = new AbortController();
    const slow = { type: 'sql', source: ENDLESS };
    const viewerRuns = [0, 1, 2].map(() =>
      fetch(`${s.url}/api/notebooks/notebooks/shared.dpnb/execute`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${viewer.token}` },
        body: JSON.stringify({ cell_index: 0, cells: [slow] }),
        signal: leave.signal,
      }).then(async (res) => ({ status: res.status, body: (await res.json()) as { error?: { code: string; details: Record<string, unknown> } } })),
    );
    const settled = viewerRuns.map((p) => p.catch(() => null));
    try {
      // The first answer is the refusal: two runs are already waiting or running.
      const first = await Promise.race(viewerRuns);
      assert.equal(first.status, 429);
      assert.equal(first.body.error?.code, 'notebook_queue_full');
      assert.equal(first.body.error?.details.max_pending_runs, 2);

      let viewerAnswered = 0;
      for (const p of viewerRuns) void p.then(() => viewerAnswered++, () => undefined);
      const r = await run(admin, 0);
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.body.rows, [[1]]);
      // Only the refusal has answered: the viewer's runs are still queued or running.
      assert.equal(viewerAnswered, 1);
    } finally {
      leave.abort();
      await Promise.all(settled);
    }
  });
});
