/**
 * A client that writes its requests and closes stdin gets every answer (issue 33 point 15):
 * `dp mcp` answers what was asked, then exits, both on its own and relaying to a running
 * `dp serve` (where closing stdin used to abort the requests in flight).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, describe, it } from 'node:test';
import { DP_BIN, makeProject, spawnServe, type ServeProcess } from '../../helpers.js';

const REQUESTS = [
  { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } },
  { jsonrpc: '2.0', method: 'notifications/initialized' },
  { jsonrpc: '2.0', id: 2, method: 'tools/list' },
  { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'query', arguments: { sql: 'SELECT 41 + 1 AS answer' } } },
];

/** Writes every request at once, closes stdin, and reads stdout until the process exits. */
function askAndClose(root: string): Promise<{ code: number | null; answers: Array<{ id: number; result?: any; error?: any }> }> {
  const child = spawn(process.execPath, [DP_BIN, 'mcp', '--project', root], { env: { ...process.env, DP_LOG_SILENT: '1' }, stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (d) => (out += d));
  child.stdin.end(REQUESTS.map((r) => JSON.stringify(r)).join('\n') + '\n');
  return new Promise((resolve) => {
    child.once('close', (code) => {
      const answers = out
        .split('\n')
        .filter((l) => l.trim())
        .map((l) => JSON.parse(l));
      resolve({ code, answers });
    });
  });
}

function assertAnswered(answers: Array<{ id: number; result?: any; error?: any }>): void {
  assert.deepEqual(answers.map((a) => a.id).sort(), [1, 2, 3], JSON.stringify(answers));
  for (const a of answers) assert.equal(a.error, undefined, JSON.stringify(a));
  assert.match(JSON.stringify(answers.find((a) => a.id === 3)!.result), /42/);
}

describe('dp mcp when the client closes stdin right after its requests', () => {
  it('answers every request on its own', async () => {
    const r = await askAndClose(makeProject());
    assert.equal(r.code, 0);
    assertAnswered(r.answers);
  });

  describe('relaying to a running dp serve', () => {
    let root: string;
    let server: ServeProcess;
    before(async () => {
      root = makeProject();
      server = await spawnServe(root);
    });
    after(async () => {
      await server.stop();
    });

    it('answers every request before it exits', async () => {
      const r = await askAndClose(root);
      assert.equal(r.code, 0);
      assertAnswered(r.answers);
    });
  });
});
