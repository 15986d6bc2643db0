/**
 * Issue 28 points 1 and 2: a page of another origin on the same host (another port: SameSite does
 * not separate ports, so the browser sends the `dp_token` cookie) must not open a WebSocket or an
 * event stream with the cookie, nor send a state-changing request with it (HTML forms: text/plain
 * and multipart). Requests are shaped as a browser sends them (Origin of another port,
 * Sec-Fetch-Site, form content types). Every socket, stream and state-changing route is swept,
 * whatever plugin registered it; tokens sent explicitly keep working.
 */
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { makeProject, startServer, type TestServer } from '../helpers.js';
import { upgrade } from '../support/upgrade.js';

/** Opens an event stream: the status, the error body when refused (the stream is closed at once when accepted). */
async function subscribe(url: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  const controller = new AbortController();
  const res = await fetch(url, { headers: { accept: 'text/event-stream', ...headers }, signal: controller.signal });
  if (res.status === 200) {
    controller.abort();
    return { status: 200, body: '' };
  }
  return { status: res.status, body: await res.text() };
}

const code = (body: string) => {
  try {
    return (JSON.parse(body) as { error?: { code?: string } }).error?.code;
  } catch {
    return undefined;
  }
};

/** A multipart body as an HTML form sends it. */
function multipartForm(fields: Record<string, string>, file: { name: string; content: string }) {
  const boundary = '----formboundary' + crypto.randomBytes(6).toString('hex');
  const parts = Object.entries(fields).map(([k, v]) => `--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`);
  parts.push(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${file.name}"\r\nContent-Type: text/csv\r\n\r\n${file.content}\r\n`);
  return { body: parts.join('') + `--${boundary}--\r\n`, contentType: `multipart/form-data; boundary=${boundary}` };
}

/** A route's URL with every parameter filled. */
const concrete = (url: string) => url.replace(/:(\w+)/g, 'x_$1');

describe('security: cross-origin requests with the login cookie (auth on)', () => {
  let s: TestServer;
  let editor: string;
  let cookie: string;
  let own: string;
  /** A dev server or any local tool: the same host, another port. */
  const foreign = (s0: TestServer) => `http://127.0.0.1:${Number(new URL(s0.url).port) + 1}`;

  before(async () => {
    s = await startServer(makeProject({ 'ingest/x.ts': 'export default async () => {};\n', 'seeds/t.csv': 'a\n1\n' }), { auth: true });
    const admin = (await s.request('POST', '/api/auth/setup', { username: 'root', password: 'secret1' })).body.token;
    assert.equal((await s.request('POST', '/api/users', { username: 'ed', password: 'secret-ed', role: 'editor' }, { token: admin })).status, 201);
    editor = (await s.request('POST', '/api/auth/login', { username: 'ed', password: 'secret-ed' })).body.token;
    cookie = `dp_token=${editor}`;
    own = s.url;
  });
  after(async () => s.close());

  it('refuses the collaboration socket opened with the cookie from another port, and takes it from dp’s own page', async () => {
    const path = '/ws/collaborate?doc=ingest/x.ts';
    const refused = await upgrade(s.url, path, { cookie, origin: foreign(s) });
    assert.equal(refused.status, 403, refused.body);
    assert.equal(code(refused.body), 'cross_origin_refused');
    assert.equal((await upgrade(s.url, path, { cookie, origin: 'null' })).status, 403, 'an opaque origin is foreign too');
    // dp's own page; and an explicit token, which a page of another origin cannot attach.
    const accepted: Array<Record<string, string>> = [{ cookie, origin: own }, { authorization: `Bearer ${editor}`, origin: foreign(s) }];
    for (const headers of accepted) {
      const opened = await upgrade(s.url, path, headers);
      assert.equal(opened.status, 101, JSON.stringify(headers));
      opened.socket?.destroy();
    }
    const byQuery = await upgrade(s.url, `${path}&access_token=${editor}`, { origin: foreign(s) });
    assert.equal(byQuery.status, 101);
    byQuery.socket?.destroy();
  });

  it('refuses every socket and event stream route the plugins registered, with the cookie from another origin', async () => {
    const live = s.app.nonJsonRoutes.filter((r) => r.kind === 'websocket' || r.kind === 'sse');
    assert.ok(live.length >= 3, `only ${live.length} live routes`);
    for (const r of live) {
      const url = concrete(r.url);
      const answer = r.kind === 'websocket' ? await upgrade(s.url, url, { cookie, origin: foreign(s) }) : await subscribe(s.url + url, { cookie, origin: foreign(s) });
      assert.equal(answer.status, 403, `${r.kind} ${r.url}: ${answer.body}`);
      assert.equal(code(answer.body), 'cross_origin_refused', r.url);
    }
  });

  it('event streams: refused for another origin (or another site without Origin), served to dp’s page and to explicit tokens', async () => {
    for (const path of ['/api/stream/events', '/api/transform/events']) {
      assert.equal((await subscribe(s.url + path, { cookie, origin: foreign(s) })).status, 403, path);
      assert.equal((await subscribe(s.url + path, { cookie, 'sec-fetch-site': 'same-site' })).status, 403, `${path}: Sec-Fetch-Site same-site`);
      assert.equal((await subscribe(s.url + path, { cookie, 'sec-fetch-site': 'same-origin' })).status, 200, path);
      assert.equal((await subscribe(s.url + path, { cookie, origin: own })).status, 200, path);
      assert.equal((await subscribe(`${s.url}${path}?access_token=${editor}`, { origin: foreign(s) })).status, 200, `${path}: explicit token`);
    }
  });

  it('refuses a text/plain form post with the cookie on every state-changing route, from another origin or with no proof of origin', async () => {
    const writes = s.app.routes.filter((r) => r.method !== 'GET');
    assert.ok(writes.length > 20, `only ${writes.length} routes`);
    for (const r of writes) {
      const url = s.url + concrete(r.url);
      const form = { method: r.method, headers: { cookie, 'content-type': 'text/plain', origin: foreign(s) }, body: 'a=b' };
      const res = await fetch(url, form);
      const body = await res.text();
      assert.equal(res.status, 403, `${r.method} ${r.url}: ${body}`);
      assert.equal(code(body), 'cross_origin_refused', `${r.method} ${r.url}`);
      // Without Origin (an old browser, a stripped header) the cookie alone proves nothing.
      if (r.permission === 'public') continue;
      const bare = await fetch(url, { method: r.method, headers: { cookie, 'content-type': 'application/json' }, body: '{}' });
      const bareBody = await bare.text();
      assert.equal(bare.status, 403, `${r.method} ${r.url} without Origin: ${bareBody}`);
      assert.equal(code(bareBody), 'cross_origin_refused', `${r.method} ${r.url} without Origin`);
    }
  });

  it('routes refuse a text/plain body even from dp’s own page (no form of any page can drive stream start, run, cancel, sync, reset)', async () => {
    for (const [method, path] of [
      ['POST', '/api/stream/daily/start'],
      ['POST', '/api/stream/daily'],
      ['POST', '/api/stream/cancel'],
      ['POST', '/api/connectors/sync/shop_db'],
      ['POST', '/api/connectors/regenerate/shop_db'],
      ['POST', '/api/cdc/shop_db/reset'],
      ['POST', '/api/run'],
    ]) {
      const res = await fetch(s.url + path, { method, headers: { cookie, origin: own, 'content-type': 'text/plain' }, body: '{"path":"ingest/x.ts"}' });
      const body = await res.text();
      assert.equal(res.status, 415, `${method} ${path}: ${body}`);
      assert.equal(code(body), 'unsupported_media_type');
    }
  });

  it('a multipart form from another origin cannot replace a table; the same upload from dp’s page (or with a token) can', async () => {
    const form = multipartForm({ mode: 'replace' }, { name: 't.csv', content: 'a\n42\n' });
    const path = '/api/import?schema=landing&table=victim&mode=replace';
    const foreignPost = await fetch(s.url + path, { method: 'POST', headers: { cookie, origin: foreign(s), 'content-type': form.contentType }, body: form.body });
    assert.equal(foreignPost.status, 403, await foreignPost.text());
    const noOrigin = await fetch(s.url + path, { method: 'POST', headers: { cookie, 'sec-fetch-site': 'same-site', 'content-type': form.contentType }, body: form.body });
    assert.equal(noOrigin.status, 403, 'Sec-Fetch-Site: same-site');
    const tables = await s.request('POST', '/api/query', { sql: "SELECT count(*) FROM information_schema.tables WHERE table_name = 'victim'" }, { token: editor });
    assert.deepEqual(tables.body.rows, [[0]], 'no table was written');

    const ownPost = await fetch(s.url + path, { method: 'POST', headers: { cookie, origin: own, 'content-type': form.contentType }, body: form.body });
    assert.equal(ownPost.status, 200, await ownPost.text());
    const headerPost = await fetch(s.url + path, { method: 'POST', headers: { cookie, 'x-dp-request': '1', 'content-type': form.contentType }, body: form.body });
    assert.equal(headerPost.status, 200, 'the UI’s X-DP-Request header');
    const tokenPost = await fetch(s.url + path, { method: 'POST', headers: { authorization: `Bearer ${editor}`, origin: foreign(s), 'content-type': form.contentType }, body: form.body });
    assert.equal(tokenPost.status, 200, 'an explicit token');
  });

  it('JSON calls of dp’s own page with the cookie work (Origin, Sec-Fetch-Site or the X-DP-Request header)', async () => {
    const proofs: Array<Record<string, string>> = [{ origin: own }, { 'sec-fetch-site': 'same-origin' }, { 'x-dp-request': '1' }];
    for (const headers of proofs) {
      const res = await fetch(s.url + '/api/query', { method: 'POST', headers: { cookie, 'content-type': 'application/json', ...headers }, body: JSON.stringify({ sql: 'SELECT 1' }) });
      assert.equal(res.status, 200, JSON.stringify(headers));
    }
  });
});

describe('security: cross-origin requests without --auth', () => {
  let s: TestServer;
  before(async () => {
    s = await startServer(makeProject({ 'ingest/x.ts': 'export default async () => {};\n' }));
  });
  after(async () => s.close());

  it('a page of another origin cannot open a socket or post a form to a server without auth (every caller is an admin there)', async () => {
    const other = 'http://localhost:5173';
    const ws = await upgrade(s.url, '/ws/collaborate?doc=ingest/x.ts&token=anything', { origin: other });
    assert.equal(ws.status, 403, ws.body);
    assert.equal((await subscribe(s.url + '/api/stream/events', { origin: other })).status, 403);
    const post = await fetch(s.url + '/api/files/ingest/x.ts', { method: 'PUT', headers: { origin: other, 'content-type': 'text/plain' }, body: 'x' });
    assert.equal(post.status, 403);
    // Tools without a browser (the CLI, curl, tests) send no Origin and keep working.
    assert.equal((await s.request('POST', '/api/query', { sql: 'SELECT 1' })).status, 200);
    const own = await upgrade(s.url, '/ws/collaborate?doc=ingest/x.ts', { origin: s.url });
    assert.equal(own.status, 101);
    own.socket?.destroy();
  });
});

describe('security: allowed origins for a reverse proxy', () => {
  let s: TestServer;
  before(async () => {
    s = await startServer(makeProject({ 'project.yml': 'name: proxied\ndatabase:\n  path: p.duckdb\nserver:\n  allowed_origins: ["https://dp.example.com"]\n' }));
  });
  after(async () => s.close());

  it('accepts the listed origin although the proxy rewrote Host, and no other', async () => {
    const post = (origin: string) => fetch(s.url + '/api/query', { method: 'POST', headers: { origin, 'content-type': 'application/json' }, body: JSON.stringify({ sql: 'SELECT 1' }) });
    assert.equal((await post('https://dp.example.com')).status, 200);
    assert.equal((await post('https://DP.example.com:443')).status, 200, 'compared as an origin (case, default port)');
    assert.equal((await post('https://evil.example.com')).status, 403);
  });
});
