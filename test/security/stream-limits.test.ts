/**
 * Issue 38 point 5: one viewer held 300 event streams and 300 WebSockets. Open streaming
 * connections (SSE and WebSockets together) are limited per user (server.max_streams_per_user),
 * past it a clear 429 `too_many_streams`; a connection that closes frees its place, and other
 * users are not affected.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { makeProject, startServer, waitUntil, type TestServer } from '../helpers.js';
import { upgrade } from '../support/upgrade.js';

interface Opened {
  status: number;
  body: string;
  close(): void;
}

/** A WebSocket upgrade, kept open when it succeeds. */
async function openSocket(baseUrl: string, urlPath: string): Promise<Opened> {
  const r = await upgrade(baseUrl, urlPath);
  return { status: r.status, body: r.body, close: () => r.socket?.destroy() };
}

async function openStream(url: string): Promise<Opened> {
  const controller = new AbortController();
  const res = await fetch(url, { headers: { accept: 'text/event-stream' }, signal: controller.signal });
  if (res.status === 200) return { status: 200, body: '', close: () => controller.abort() };
  return { status: res.status, body: await res.text(), close: () => {} };
}

describe('security: streaming connections per user', () => {
  let s: TestServer;
  let viewer: string;
  let other: string;
  before(async () => {
    s = await startServer(makeProject({ 'ingest/x.ts': 'export default async () => {};\n' }), { auth: true, server: { http: { maxStreamsPerUser: 3 } } });
    const admin = (await s.request('POST', '/api/auth/setup', { username: 'root', password: 'secret1' })).body.token;
    for (const username of ['vic', 'val']) {
      assert.equal((await s.request('POST', '/api/users', { username, password: `secret-${username}`, role: 'viewer' }, { token: admin })).status, 201);
    }
    viewer = (await s.request('POST', '/api/auth/login', { username: 'vic', password: 'secret-vic' })).body.token;
    other = (await s.request('POST', '/api/auth/login', { username: 'val', password: 'secret-val' })).body.token;
  });
  after(async () => s.close());

  it('refuses the stream or socket past the limit with 429 too_many_streams, and a closed one frees its place', async () => {
    const events = (token: string) => openStream(`${s.url}/api/stream/events?access_token=${token}`);
    const socket = (token: string) => openSocket(s.url, `/ws/collaborate?doc=ingest/x.ts&access_token=${token}`);
    const held = [await events(viewer), await events(viewer), await socket(viewer)];
    assert.deepEqual(
      held.map((h) => h.status),
      [200, 200, 101],
    );
    for (const extra of [await events(viewer), await socket(viewer)]) {
      assert.equal(extra.status, 429, extra.body);
      const body = JSON.parse(extra.body);
      assert.equal(body.error.code, 'too_many_streams');
      assert.deepEqual(body.error.details, { open: 3, max: 3 });
    }
    // Another user has places of their own.
    const others = await events(other);
    assert.equal(others.status, 200);
    others.close();

    held.shift()!.close();
    // The server frees the place when it sees the connection close: wait for that state.
    let again = await socket(viewer);
    await waitUntil(async () => {
      if (again.status !== 429) return true;
      again = await socket(viewer);
      return false;
    }, 'the server to free the place');
    assert.equal(again.status, 101, again.body);
    held.push(again);
    for (const h of held) h.close();
  });
});
