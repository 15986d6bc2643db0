/**
 * Issue 34 point 8: during a graceful stop new requests got "connection refused", where the
 * README promises `503 shutting_down`. The real `dp serve` binary, a request in flight (so the
 * grace period lasts), SIGTERM, then new requests: each gets 503 in dp's shape with Retry-After
 * until the in-flight work ends or the grace runs out; then the process exits.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { makeProject, spawnServe } from '../helpers.js';

const LONG_SQL = 'SELECT sum(i) FROM range(10000000000000) t(i)';

describe('reliability: graceful shutdown answers 503 shutting_down', () => {
  let child: ChildProcess;
  let url: string;
  let exited: Promise<number | null>;
  before(async () => {
    const root = makeProject();
    const served = await spawnServe(root, { args: ['--shutdown-grace', '5'] });
    ({ child, url } = served);
    exited = served.exited.then(({ code }) => code);
  });
  after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });

  it('keeps accepting during the grace period and answers 503 shutting_down, then exits', { timeout: 60_000 }, async () => {
    // Holds the grace period open: it runs until the drain interrupts it. Written on its own
    // connection before the health check below connects, so the server has read it by the time
    // it answers that check.
    const { port } = new URL(url);
    const body = JSON.stringify({ sql: LONG_SQL });
    const query = net.connect(Number(port), '127.0.0.1');
    const closed = new Promise<void>((resolve) => query.on('close', () => resolve()));
    query.on('error', () => undefined);
    // Read what the server answers it (the drain's error): a socket nobody reads never sees its end.
    query.resume();
    await new Promise<void>((resolve) =>
      query.on('connect', () =>
        query.write(`POST /api/query HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`, () => resolve()),
      ),
    );
    const health = await fetch(`${url}/api/health`);
    assert.equal(health.status, 200);
    child.kill('SIGTERM');
    // Until the signal is handled the server answers 200; from then on 503, never a refused connection.
    let answer: Response;
    for (;;) {
      answer = await fetch(`${url}/api/health`, { headers: { connection: 'close' } });
      if (answer.status !== 200) break;
      await answer.arrayBuffer();
    }
    assert.equal(answer.status, 503);
    assert.equal((await answer.json()).error.code, 'shutting_down');
    assert.ok(Number(answer.headers.get('retry-after')) > 0);
    // A write is refused the same way.
    const write = await fetch(`${url}/api/query`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ sql: 'SELECT 1' }) });
    assert.equal(write.status, 503);
    // The in-flight query is interrupted at the end of the grace (or earlier by the drain) and the process exits.
    await closed;
    assert.notEqual(await exited, null);
  });
});
