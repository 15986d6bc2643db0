/**
 * A collaboration save cannot write a file past the 5 MiB a read opens (issue 34 point 9): the
 * save that would cross it is refused (400 file_too_large), the file stays as it was, and the
 * notebook still opens and can be joined again. Real Yjs clients, real server, real files.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type * as Y from 'yjs';
import { startTestServer, type PluginTestServer } from '../../sdk/testing.js';
import type { CollaborationClient } from '../../plugins/notebooks/collaboration/client.js';
import { NOTEBOOK_CELLS } from '../../plugins/notebooks/collaboration/protocol.js';
import { COLLAB_PLUGINS, connect } from '../plugins/notebooks/collaboration-support.js';

const DOC = 'notebooks/growing.dpnb';
const NOTEBOOK = JSON.stringify({ cells: [{ id: 'a', type: 'sql', source: 'SELECT 1' }] });
const MIB = 1024 * 1024;

describe('collaboration save limit (real Yjs, real files)', () => {
  let s: PluginTestServer;
  const open: CollaborationClient[] = [];
  before(async () => {
    s = await startTestServer({ plugins: [], builtIn: COLLAB_PLUGINS, files: { [DOC]: NOTEBOOK } });
  });
  after(async () => {
    for (const c of open) c.destroy();
    await s?.close();
  });

  it('refuses a save that would write the notebook past 5 MiB and leaves the file openable', async () => {
    const c = connect(s.url, DOC);
    open.push(c);
    await c.whenSynced();
    const source = c.doc.getArray<Y.Map<unknown>>(NOTEBOOK_CELLS).get(0).get('source') as Y.Text;
    // In 1 MiB updates: each fits a WebSocket message, together they pass 5 MiB.
    for (let i = 0; i < 6; i++) source.insert(source.length, `-- ${'x'.repeat(MIB)}\n`);
    await assert.rejects(c.save(), (e: Error & { code?: string }) => e.code === 'file_too_large');
    const viaHttp = await s.request('POST', '/api/notebooks/collaborate/save', { doc: DOC });
    assert.equal(viaHttp.status, 400, viaHttp.text);
    assert.equal(viaHttp.body.error.code, 'file_too_large');

    assert.equal(fs.readFileSync(path.join(s.projectRoot, DOC), 'utf8'), NOTEBOOK);
    const read = await s.request('GET', `/api/notebooks/${DOC}`);
    assert.equal(read.status, 200, read.text);

    // Back under the limit, the same document saves.
    source.delete(source.length - 6 * (MIB + 4), 6 * (MIB + 4));
    const saved = await c.save();
    assert.ok(saved.bytes < MIB);
  });
});
