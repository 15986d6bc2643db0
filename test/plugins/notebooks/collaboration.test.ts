/**
 * /ws/collaborate end to end: real Yjs clients (Y.Doc + ws + y-protocols) over real WebSockets to
 * a real server on 127.0.0.1, the shared document saved through the files service.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as awarenessProtocol from 'y-protocols/awareness';
import * as Y from 'yjs';
import { startTestServer, type PluginTestServer } from '../../../sdk/testing.js';
import { FakeClock } from '../../kernel/fake-clock.js';
import { waitUntil } from '../../helpers.js';
import type { CollaborationClient } from '../../../plugins/notebooks/collaboration/client.js';
import { NOTEBOOK_CELLS, TEXT_CONTENT } from '../../../plugins/notebooks/collaboration/protocol.js';
import { COLLAB_PLUGINS, connect, upgradeStatus, waitFor, wsUrl } from './collaboration-support.js';

const NOTEBOOK = JSON.stringify({
  metadata: { kernel: 'dp' },
  cells: [
    { id: 'c1', type: 'sql', source: 'SELECT 1', outputs: [{ rows: [[1]] }] },
    { id: 'c2', type: 'code', source: 'console.log(1)', outputs: [{ text: '1' }] },
  ],
});

const cellsOf = (c: CollaborationClient) => c.doc.getArray<Y.Map<unknown>>(NOTEBOOK_CELLS);
const cellSource = (c: CollaborationClient, i: number) => cellsOf(c).get(i).get('source') as Y.Text;
const read = (s: PluginTestServer, rel: string) => fs.readFileSync(path.join(s.projectRoot, rel), 'utf8');

describe('collaboration without auth', () => {
  let s: PluginTestServer;
  const open: CollaborationClient[] = [];
  const join = (doc: string) => {
    const c = connect(s.url, doc);
    open.push(c);
    return c;
  };
  // Idle documents are released on this clock: the test moves it instead of waiting.
  const clock = new FakeClock(Date.now());
  before(async () => {
    s = await startTestServer({
      clock,
      plugins: [],
      builtIn: COLLAB_PLUGINS,
      files: { 'transform/staging/a.sql': 'SELECT 1\n', 'notebooks/n.dpnb': NOTEBOOK, 'notebooks/idle.dpnb': NOTEBOOK, 'transform/staging/gone.sql': 'SELECT 2\n', 'transform/staging/cli.sql': 'SELECT 4\n', 'data.csv': 'a\n1\n' },
      projectYml: 'collaboration:\n  idle_release_seconds: 0.3\n',
    });
  });
  after(async () => {
    for (const c of open) c.destroy();
    await s?.close();
  });

  it('two clients typing at once into one text file converge, and save writes the merged text', async () => {
    const a = join('transform/staging/a.sql');
    const b = join('transform/staging/a.sql');
    await Promise.all([a.whenSynced(), b.whenSynced()]);
    assert.equal(a.access, 'read-write');
    const ta = a.doc.getText(TEXT_CONTENT);
    const tb = b.doc.getText(TEXT_CONTENT);
    assert.equal(ta.toString(), 'SELECT 1\n');
    // Concurrent: both insert before either has seen the other's change.
    for (let i = 0; i < 20; i++) {
      ta.insert(ta.length, `a${i} `);
      tb.insert(0, `b${i} `);
    }
    await waitFor(() => ta.toString() === tb.toString() && ta.toString().includes('a19') && ta.toString().includes('b19'), 'convergence');
    const merged = ta.toString();
    for (let i = 0; i < 20; i++) assert.ok(merged.includes(`a${i} `) && merged.includes(`b${i} `), `edit ${i} kept`);
    assert.equal(read(s, 'transform/staging/a.sql'), 'SELECT 1\n', 'nothing written before a save');
    const saved = await a.save();
    assert.equal(saved.doc, 'transform/staging/a.sql');
    assert.equal(read(s, 'transform/staging/a.sql'), merged);
    // The HTTP save writes the same merged text (after one more edit).
    tb.insert(0, '-- x\n');
    await waitFor(() => ta.toString() === tb.toString(), 'the last edit');
    const r = await s.request('POST', '/api/notebooks/collaborate/save', { doc: 'transform/staging/a.sql' });
    assert.equal(r.status, 200, r.text);
    assert.equal(read(s, 'transform/staging/a.sql'), tb.toString());
  });

  it('a notebook is cells of {id, type, source}: concurrent cell edits and array operations converge; save keeps outputs of unchanged cells', async () => {
    const a = join('notebooks/n.dpnb');
    const b = join('notebooks/n.dpnb');
    await Promise.all([a.whenSynced(), b.whenSynced()]);
    assert.deepEqual(cellsOf(a).toArray().map((c) => [c.get('id'), c.get('type'), String(c.get('source'))]), [
      ['c1', 'sql', 'SELECT 1'],
      ['c2', 'code', 'console.log(1)'],
    ]);
    cellSource(a, 0).insert(8, ' AS one');
    cellSource(b, 0).insert(0, '-- b\n');
    const added = new Y.Map<unknown>();
    added.set('id', 'c3');
    added.set('type', 'markdown');
    added.set('source', new Y.Text('# notes'));
    cellsOf(b).push([added]);
    await waitFor(() => cellsOf(a).length === 3 && String(cellSource(a, 0)) === String(cellSource(b, 0)) && String(cellSource(a, 0)).includes('AS one') && String(cellSource(a, 0)).includes('-- b'), 'notebook convergence');
    assert.equal(String(cellSource(a, 0)), '-- b\nSELECT 1 AS one');
    await a.save();
    const file = JSON.parse(read(s, 'notebooks/n.dpnb'));
    assert.deepEqual(file.metadata, { kernel: 'dp' }, 'top-level fields kept');
    assert.deepEqual(file.cells, [
      { id: 'c1', type: 'sql', source: '-- b\nSELECT 1 AS one' },
      { id: 'c2', type: 'code', source: 'console.log(1)', outputs: [{ text: '1' }] },
      { id: 'c3', type: 'markdown', source: '# notes' },
    ]);
  });

  it('awareness (cursors) reaches the other editors and leaves with its client', async () => {
    const a = join('transform/staging/a.sql');
    const b = join('transform/staging/a.sql');
    await Promise.all([a.whenSynced(), b.whenSynced()]);
    a.awareness.setLocalStateField('user', { name: 'ada' });
    await waitFor(() => (b.awareness.getStates().get(a.doc.clientID) as { user?: { name: string } } | undefined)?.user?.name === 'ada', 'a cursor');
    a.destroy();
    await waitFor(() => !b.awareness.getStates().has(a.doc.clientID), 'the cursor to leave');
  });

  it("a socket cannot fake or clear another editor's cursor", async () => {
    const a = join('transform/staging/a.sql');
    const b = join('transform/staging/a.sql');
    const c = join('transform/staging/a.sql');
    await Promise.all([a.whenSynced(), b.whenSynced(), c.whenSynced()]);
    a.awareness.setLocalStateField('user', { name: 'ada' });
    await waitFor(() => (b.awareness.getStates().get(a.doc.clientID) as { user?: { name: string } } | undefined)?.user?.name === 'ada', 'a cursor');
    // c sends a newer awareness entry under a's client id (a higher clock wins in y-protocols).
    const forged = new Y.Doc();
    forged.clientID = a.doc.clientID;
    const forger = new awarenessProtocol.Awareness(forged);
    for (let i = 0; i < 20; i++) forger.setLocalStateField('user', { name: `mallory-${i}` });
    awarenessProtocol.applyAwarenessUpdate(c.awareness, awarenessProtocol.encodeAwarenessUpdate(forger, [forged.clientID]), 'forged');
    // c's own cursor after it: once b sees that, the server has handled the forged entry.
    c.awareness.setLocalStateField('user', { name: 'cy' });
    await waitFor(() => (b.awareness.getStates().get(c.doc.clientID) as { user?: { name: string } } | undefined)?.user?.name === 'cy', 'c’s own cursor');
    assert.equal((b.awareness.getStates().get(a.doc.clientID) as { user: { name: string } }).user.name, 'ada');
    forger.destroy();
    a.destroy();
    c.destroy();
  });

  it('an idle document is saved and released; one whose file changed on disk meanwhile is discarded', async () => {
    const a = join('notebooks/idle.dpnb');
    await a.whenSynced();
    const documents = async (): Promise<Array<{ doc: string; clients: number; unsaved: boolean }>> => (await s.request('GET', '/api/notebooks/collaborate')).body.documents;
    const entry = async (doc: string) => (await documents()).find((d) => d.doc === doc);
    cellSource(a, 1).insert(0, '// idle\n');
    await waitUntil(async () => (await entry('notebooks/idle.dpnb'))?.unsaved === true, 'the server to apply the edit');
    a.destroy();
    await waitUntil(async () => (await entry('notebooks/idle.dpnb'))?.clients === 0, 'the server to see the editor leave');
    await clock.advance(300);
    await waitUntil(() => JSON.parse(read(s, 'notebooks/idle.dpnb')).cells[1].source === '// idle\nconsole.log(1)', 'the idle save');
    await waitUntil(async () => !(await entry('notebooks/idle.dpnb')), 'the idle release');

    const b = join('transform/staging/gone.sql');
    await b.whenSynced();
    b.doc.getText(TEXT_CONTENT).insert(0, '-- mine\n');
    await waitUntil(async () => (await entry('transform/staging/gone.sql'))?.unsaved === true, 'the server to apply the edit');
    fs.writeFileSync(path.join(s.projectRoot, 'transform/staging/gone.sql'), 'SELECT 3\n');
    b.destroy();
    await waitUntil(async () => (await entry('transform/staging/gone.sql'))?.clients === 0, 'the server to see the editor leave');
    await clock.advance(300);
    await waitUntil(async () => !(await entry('transform/staging/gone.sql')), 'the idle release');
    assert.equal(read(s, 'transform/staging/gone.sql'), 'SELECT 3\n', 'the change on disk is not overwritten');
  });

  it('refuses a save over a change made on disk meanwhile (409 file_conflict, nothing written) unless forced', async () => {
    const c = join('transform/staging/cli.sql');
    await c.whenSynced();
    c.doc.getText(TEXT_CONTENT).insert(0, '-- ours\n');
    // The CLI (or any other tool) writes the file while the document is open.
    fs.writeFileSync(path.join(s.projectRoot, 'transform/staging/cli.sql'), 'SELECT 5\n');
    await assert.rejects(c.save(), (e: { code?: string }) => e.code === 'file_conflict');
    const viaHttp = await s.request('POST', '/api/notebooks/collaborate/save', { doc: 'transform/staging/cli.sql' });
    assert.equal(viaHttp.status, 409, viaHttp.text);
    assert.equal(read(s, 'transform/staging/cli.sql'), 'SELECT 5\n', 'the change on disk is kept');
    const forced = await c.save({ force: true });
    assert.equal(read(s, 'transform/staging/cli.sql'), '-- ours\nSELECT 4\n');
    // Saved as the new base: the next save goes through without force.
    c.doc.getText(TEXT_CONTENT).insert(0, '-- again\n');
    assert.notEqual((await c.save()).sha256, forced.sha256);
    c.destroy();
  });

  it('refuses docs the files API would refuse: outside the project, protected, other extensions, missing', async () => {
    assert.equal(await upgradeStatus(wsUrl(s.url, '../outside.sql')), 400);
    assert.equal(await upgradeStatus(wsUrl(s.url, '.env')), 400);
    assert.equal(await upgradeStatus(wsUrl(s.url, 'test.duckdb')), 400);
    assert.equal(await upgradeStatus(wsUrl(s.url, 'data.csv')), 400);
    assert.equal(await upgradeStatus(`${s.url.replace(/^http/, 'ws')}/ws/collaborate`), 400);
    const missing = join('transform/staging/none.sql');
    await assert.rejects(missing.whenSynced(), (e: { code?: string; close?: number }) => e.code === 'file_not_found' && e.close === 4404);
    const r = await s.request('POST', '/api/notebooks/collaborate/save', { doc: '../../etc/passwd.sql' });
    assert.equal(r.status, 400);
    assert.equal(r.body.error.code, 'path_outside_project');
    const notOpen = await s.request('POST', '/api/notebooks/collaborate/save', { doc: 'notebooks/none.dpnb' });
    assert.equal(notOpen.status, 404);
    assert.equal(notOpen.body.error.code, 'document_not_open');
  });
});

describe('collaboration with auth', () => {
  let s: PluginTestServer;
  let editorToken: string;
  let viewerToken: string;
  const open: CollaborationClient[] = [];
  before(async () => {
    s = await startTestServer({ plugins: [], builtIn: COLLAB_PLUGINS, auth: true, files: { 'transform/staging/a.sql': 'SELECT 1\n' } });
    editorToken = (await s.caller('editor')).token;
    viewerToken = (await s.caller('viewer')).token;
  });
  after(async () => {
    for (const c of open) c.destroy();
    await s?.close();
  });
  const join = (options: Parameters<typeof connect>[2]) => {
    const c = connect(s.url, 'transform/staging/a.sql', options);
    open.push(c);
    return c;
  };

  it('refuses a socket without a valid token; takes it as ?access_token=, ?token=, header or first message', async () => {
    assert.equal(await upgradeStatus(wsUrl(s.url, 'transform/staging/a.sql', '&access_token=nope')), 401);
    const silent = join({});
    await assert.rejects(silent.whenSynced(), (e: { close?: number }) => e.close === 4401);
    const wrongFirst = join({ token: 'not-a-token' });
    await assert.rejects(wrongFirst.whenSynced(), (e: { code?: string; close?: number }) => e.code === 'invalid_token' && e.close === 4401);
    for (const c of [
      join({ query: `&access_token=${editorToken}` }),
      join({ query: `&token=${editorToken}` }),
      join({ headers: { authorization: `Bearer ${editorToken}` } }),
      join({ token: editorToken }),
    ]) {
      await c.whenSynced();
      assert.equal(c.access, 'read-write');
      assert.equal(c.doc.getText(TEXT_CONTENT).toString(), 'SELECT 1\n');
    }
  });

  it("a viewer joins read-only: its edits reach neither the other clients nor the file, it still receives edits and sends its cursor", async () => {
    const editor = join({ token: editorToken });
    const viewer = join({ query: `&access_token=${viewerToken}` });
    await Promise.all([editor.whenSynced(), viewer.whenSynced()]);
    assert.equal(viewer.access, 'read-only');
    viewer.doc.getText(TEXT_CONTENT).insert(0, '-- viewer was here\n');
    viewer.awareness.setLocalStateField('user', { name: 'viewer' });
    editor.doc.getText(TEXT_CONTENT).insert(0, '-- editor\n');
    await waitFor(() => viewer.doc.getText(TEXT_CONTENT).toString().includes('-- editor'), 'the editor’s edit at the viewer');
    await waitFor(() => editor.awareness.getStates().has(viewer.doc.clientID), 'the viewer’s cursor');
    // A fresh client sees the server's document: without the viewer's text.
    const late = join({ token: editorToken });
    await late.whenSynced();
    assert.equal(late.doc.getText(TEXT_CONTENT).toString(), '-- editor\nSELECT 1\n');
    assert.ok(!editor.doc.getText(TEXT_CONTENT).toString().includes('viewer'));
    await assert.rejects(viewer.save(), (e: { code?: string }) => e.code === 'insufficient_role');
    const r = await s.request('POST', '/api/notebooks/collaborate/save', { doc: 'transform/staging/a.sql' }, { token: viewerToken });
    assert.equal(r.status, 403);
    assert.equal(read(s, 'transform/staging/a.sql'), 'SELECT 1\n');
    const saved = await s.request('POST', '/api/notebooks/collaborate/save', { doc: 'transform/staging/a.sql' }, { token: editorToken });
    assert.equal(saved.status, 200, saved.text);
    assert.equal(read(s, 'transform/staging/a.sql'), '-- editor\nSELECT 1\n');
  });
});
