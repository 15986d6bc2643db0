/**
 * Collaboration presence (issue 28 point 8, issue 38 point 4), real Yjs clients over real
 * WebSockets to a server with --auth: what others see of a socket (name, role, colour) is set by
 * the server from the socket's user, whatever the client sends, so a viewer cannot show as
 * `root (admin)` nor hand others a colour string that reaches a style; awareness messages are
 * bounded in size (4413) and in rate (a flood reaches the others merged, its last state intact).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startTestServer, type PluginTestServer, type TestCaller } from '../../sdk/testing.js';
import type { CollaborationClient } from '../../plugins/notebooks/collaboration/client.js';
import { AWARENESS_PER_SECOND, PEER_COLORS } from '../../plugins/notebooks/collaboration/protocol.js';
import { COLLAB_PLUGINS, connect, waitFor } from '../plugins/notebooks/collaboration-support.js';

const DOC = 'transform/staging/a.sql';

describe('collaboration awareness is the server\'s (real Yjs, --auth)', () => {
  let s: PluginTestServer;
  let admin: TestCaller;
  let viewer: TestCaller;
  const open: CollaborationClient[] = [];
  const join = async (who: TestCaller) => {
    const c = connect(s.url, DOC, { headers: { authorization: `Bearer ${who.token}` } });
    open.push(c);
    await c.whenSynced();
    return c;
  };
  const stateOf = (watcher: CollaborationClient, of: CollaborationClient) => watcher.awareness.getStates().get(of.doc.clientID) as Record<string, any> | undefined;

  before(async () => {
    s = await startTestServer({ plugins: [], builtIn: COLLAB_PLUGINS, auth: true, files: { [DOC]: 'SELECT 1\n' } });
    admin = await s.caller('admin');
    viewer = await s.caller('viewer');
  });
  after(async () => {
    for (const c of open) c.destroy();
    await s?.close();
  });

  it("shows a viewer under its own name, role and a colour of the server's palette, whatever it claims", async () => {
    const watcher = await join(admin);
    const v = await join(viewer);
    v.awareness.setLocalState({ user: { name: 'root (admin)', role: 'admin', color: 'red; position: fixed; inset: 0', colorLight: 'url(x)' }, cursor: { anchor: 1 } });
    await waitFor(() => stateOf(watcher, v)?.cursor?.anchor === 1, "the viewer's cursor");
    const shown = stateOf(watcher, v)!;
    assert.deepEqual(Object.keys(shown.user).sort(), ['color', 'name', 'role']);
    assert.equal(shown.user.name, viewer.username);
    assert.equal(shown.user.role, 'viewer');
    assert.ok((PEER_COLORS as readonly string[]).includes(shown.user.color), shown.user.color);
  });

  it('closes a socket that sends an awareness message over 8 KiB (4413), relaying none of it', async () => {
    const watcher = await join(admin);
    const v = await join(viewer);
    v.awareness.setLocalState({ user: { name: 'x' }, padding: 'p'.repeat(16 * 1024) });
    await waitFor(() => v.closed !== null, 'the socket closed');
    assert.equal(v.closed?.code, 4413);
    assert.equal(v.error?.code, 'awareness_update_too_large');
    assert.equal(stateOf(watcher, v), undefined);
  });

  it('relays a flood of awareness updates merged to a bounded rate, ending on the last state', async () => {
    const watcher = await join(admin);
    const v = await join(viewer);
    const sent = 2000;
    let relayed = 0;
    watcher.awareness.on('update', ({ added, updated }: { added: number[]; updated: number[] }) => {
      if ([...added, ...updated].includes(v.doc.clientID)) relayed++;
    });
    for (let i = 1; i <= sent; i++) v.awareness.setLocalState({ cursor: { anchor: i } });
    await waitFor(() => stateOf(watcher, v)?.cursor?.anchor === sent, 'the last cursor', 20_000);
    // Well under what was sent even if the server took several seconds over the flood.
    assert.ok(relayed <= AWARENESS_PER_SECOND * 10, `${relayed} of ${sent} updates relayed`);
  });
});
