/**
 * The notebook routes as SPEC.md writes them (issue 33 point 13): `/api/notebooks/{file}.dpnb`
 * with the bare name of a notebook in notebooks/ reads, saves and executes it; project-relative
 * paths keep naming notebooks of ingest/ and export/, and a bare name never leaves notebooks/.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { makeProject, startServer, type TestServer } from '../../helpers.js';

describe('a notebook named by its bare file name', () => {
  let s: TestServer;
  let root: string;
  before(async () => {
    root = makeProject({
      'notebooks/explore.dpnb': JSON.stringify({ cells: [{ type: 'sql', source: 'SELECT 42 AS answer' }] }),
      'ingest/load.dpnb': JSON.stringify({ cells: [{ type: 'markdown', source: '# load' }] }),
    });
    s = await startServer(root);
  });
  after(async () => s.close());

  it('reads, executes and saves notebooks/<name>.dpnb', async () => {
    const read = await s.request('GET', '/api/notebooks/explore.dpnb');
    assert.equal(read.status, 200, read.text);
    assert.equal(read.body.path, 'notebooks/explore.dpnb');
    const run = await s.request('POST', '/api/notebooks/explore.dpnb/execute', { cell_index: 0 });
    assert.equal(run.status, 200, run.text);
    assert.deepEqual(run.body.rows, [[42]]);
    const saved = await s.request('PUT', '/api/notebooks/fresh.dpnb', { cells: [{ type: 'markdown', source: 'new' }] });
    assert.equal(saved.status, 200, saved.text);
    assert.equal(saved.body.path, 'notebooks/fresh.dpnb');
    assert.ok(fs.existsSync(path.join(root, 'notebooks', 'fresh.dpnb')));
    assert.ok(!fs.existsSync(path.join(root, 'fresh.dpnb')));
  });

  it('keeps project-relative paths for ingest/ and refuses what is not a notebook', async () => {
    assert.equal((await s.request('GET', '/api/notebooks/ingest/load.dpnb')).status, 200);
    assert.equal((await s.request('GET', '/api/notebooks/load.dpnb')).status, 404, 'a bare name is a notebook of notebooks/ only');
    for (const bad of ['project.yml', '.hidden.dpnb', 'notes.txt']) {
      const r = await s.request('GET', `/api/notebooks/${encodeURIComponent(bad)}`);
      assert.equal(r.status, 400, `${bad}: ${r.text}`);
      assert.equal(r.body.error.code, 'notebook_path_refused');
    }
  });
});
