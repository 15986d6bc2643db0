/**
 * The MCP servers `POST /mcp` keeps between its stateless requests (plugins/agents/server-pool.ts):
 * a caller's next request reuses its server instead of building every tool again, a server is
 * never lent to another caller nor to two requests at once, a released server answers a new
 * transport (the real SDK server and client over its in-memory transport), and invalidate()
 * drops what was kept.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { McpServerPool } from '../../../plugins/agents/server-pool.js';
import type { Caller } from '../../../sdk/index.js';

const vera: Caller = { username: 'vera', role: 'viewer', display_name: null, authenticated: true };
const root: Caller = { username: 'root', role: 'admin', display_name: null, authenticated: true };

function counting(): { pool: McpServerPool; built: Array<{ caller: Caller; readOnly: boolean }> } {
  const built: Array<{ caller: Caller; readOnly: boolean }> = [];
  const pool = new McpServerPool(async (caller, readOnly) => {
    built.push({ caller, readOnly });
    const server = new McpServer({ name: 'dp-test', version: '1.0.0' });
    server.registerTool('whoami', { description: 'The caller this server was built for' }, async () => ({ content: [{ type: 'text' as const, text: caller.username ?? '' }] }));
    return server;
  });
  return { pool, built };
}

/** Connects a client to the lent server, calls whoami, closes the client. */
async function whoami(server: McpServer): Promise<string> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const client = new Client({ name: 'dp-test', version: '1.0.0' });
  await client.connect(clientSide);
  const r = (await client.callTool({ name: 'whoami', arguments: {} })) as { content: Array<{ text: string }> };
  await client.close();
  return r.content[0]!.text;
}

describe('McpServerPool', () => {
  it("reuses a caller's released server, and a released server answers a new transport", async () => {
    const { pool, built } = counting();
    for (let i = 0; i < 3; i++) {
      const lent = await pool.acquire(vera, false);
      assert.equal(await whoami(lent.server), 'vera');
      await lent.release();
    }
    assert.equal(built.length, 1);
    assert.equal(pool.size, 1);
  });

  it('never lends a server to another caller, another read-only flag, or two requests at once', async () => {
    const { pool, built } = counting();
    const a = await pool.acquire(vera, false);
    const b = await pool.acquire(vera, false);
    assert.notEqual(a.server, b.server, 'two requests at once get two servers');
    await a.release();
    await b.release();
    const admin = await pool.acquire(root, false);
    assert.equal(await whoami(admin.server), 'root');
    const readOnly = await pool.acquire(vera, true);
    assert.ok(![a.server, b.server].includes(readOnly.server));
    const promoted = await pool.acquire({ ...vera, role: 'admin' }, false);
    assert.ok(![a.server, b.server].includes(promoted.server), 'a changed role is another caller');
    assert.equal(built.length, 5);
    const again = await pool.acquire(vera, false);
    assert.ok([a.server, b.server].includes(again.server));
    assert.equal(await whoami(again.server), 'vera');
  });

  it('invalidate() drops kept servers, and one lent before it is not kept', async () => {
    const { pool, built } = counting();
    const kept = await pool.acquire(vera, false);
    await kept.release();
    const lent = await pool.acquire(root, false);
    pool.invalidate();
    assert.equal(pool.size, 0);
    await lent.release();
    assert.equal(pool.size, 0);
    const fresh = await pool.acquire(vera, false);
    assert.notEqual(fresh.server, kept.server);
    assert.equal(built.length, 3);
  });
});
