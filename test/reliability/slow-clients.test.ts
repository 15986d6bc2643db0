/**
 * Issue 34 point 6: a request body sent slowly was not cut off within 150 s. Headers and whole
 * requests have time limits (server.headers_timeout_seconds, server.request_timeout_seconds);
 * a client trickling bytes is answered 408 `request_timeout` in dp's shape and its connection
 * closed. The limits are shortened here so the test is fast; a test-level timeout makes the
 * server that never cuts fail instead of hanging.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { makeProject, startServer, type TestServer } from '../helpers.js';

/**
 * Opens a raw connection, writes `head`, then one byte of `drip` per `everyMs` (a client that is
 * slow, not idle), and resolves with everything the server sent once it closes the connection.
 */
function slowClient(url: string, head: string, drip: string, everyMs: number): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname);
    let received = '';
    let sent = 0;
    let timer: NodeJS.Timeout | undefined;
    socket.on('connect', () => {
      socket.write(head);
      timer = setInterval(() => {
        if (sent < drip.length && socket.writable) socket.write(drip[sent++]);
      }, everyMs);
    });
    socket.on('data', (d) => (received += d.toString('latin1')));
    socket.on('close', () => {
      clearInterval(timer);
      resolve(received);
    });
    socket.on('error', (e: NodeJS.ErrnoException) => (e.code === 'ECONNRESET' ? undefined : reject(e)));
  });
}

function parse(raw: string): { status: number; code: string | undefined } {
  const status = Number(/^HTTP\/1\.1 (\d+)/.exec(raw)?.[1] ?? 0);
  const body = raw.slice(raw.indexOf('\r\n\r\n') + 4);
  let code: string | undefined;
  try {
    code = JSON.parse(body).error?.code;
  } catch {
    /* not JSON */
  }
  return { status, code };
}

describe('reliability: slow clients are cut off', () => {
  let s: TestServer;
  before(async () => {
    s = await startServer(makeProject(), { server: { http: { headersTimeoutMs: 400, requestTimeoutMs: 800 } } });
  });
  after(async () => s.close());

  it('headers sent a byte at a time are cut with 408 at the headers timeout', { timeout: 20_000 }, async () => {
    const { port } = new URL(s.url);
    const raw = await slowClient(s.url, 'GET /api/health HTTP/1.1\r\n', `Host: 127.0.0.1:${port}\r\nX-Slow: ${'a'.repeat(500)}\r\n\r\n`, 50);
    assert.deepEqual(parse(raw), { status: 408, code: 'request_timeout' });
  });

  it('a body sent a byte at a time is cut with 408 at the request timeout', { timeout: 20_000 }, async () => {
    const { port } = new URL(s.url);
    const body = JSON.stringify({ sql: `SELECT '${'x'.repeat(500)}'` });
    const head = `POST /api/query HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`;
    const raw = await slowClient(s.url, head, body, 50);
    assert.deepEqual(parse(raw), { status: 408, code: 'request_timeout' });
  });

  it('a client that sends in time is answered', async () => {
    assert.equal((await s.request('POST', '/api/query', { sql: 'SELECT 1' })).status, 200);
  });
});
