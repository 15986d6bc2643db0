/**
 * Routes that are not JSON (WebSocket, SSE, static with a SPA fallback), registered by the kernel
 * from the test-only plugin test/fixtures/plugins/live-demo, on a real server with auth on.
 */
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import type { Duplex } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { App } from '../../kernel/app.js';
import { FIXTURE_PLUGINS, makeProject, startServer, tempDir, type TestServer } from '../helpers.js';
import { upgrade } from '../support/upgrade.js';

/** The Content-Security-Policy answered to GET /api/health sent with this Host header. */
function policyFor(baseUrl: string, host: string): Promise<string> {
  return new Promise((resolve, reject) => {
    http
      .get(`${baseUrl}/api/health`, { headers: { host } }, (res) => {
        res.resume();
        resolve(String(res.headers['content-security-policy'] ?? ''));
      })
      .on('error', reject);
  });
}

/** One masked client text frame (RFC 6455), and the text of one unmasked server frame. */
function clientFrame(text: string): Buffer {
  const payload = Buffer.from(text);
  const mask = crypto.randomBytes(4);
  const masked = Buffer.from(payload.map((b, i) => b ^ mask[i % 4]));
  return Buffer.concat([Buffer.from([0x81, 0x80 | payload.length]), mask, masked]);
}
function readFrame(socket: Duplex): Promise<string> {
  return new Promise((resolve) => socket.once('data', (chunk: Buffer) => resolve(chunk.subarray(2, 2 + (chunk[1] & 0x7f)).toString())));
}

/**
 * Reads an event stream until `done(text)` holds or the deadline passes; returns the status and the text read.
 * `onOpen` runs when the headers arrive: the server sends them once the client is subscribed.
 */
async function readSse(url: string, headers: Record<string, string>, done: (text: string) => boolean, options: { deadlineMs?: number; onOpen?: () => void } = {}) {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), options.deadlineMs ?? 30_000);
  let text = '';
  const res = await fetch(url, { headers, signal: controller.signal });
  options.onOpen?.();
  try {
    if (res.status !== 200 || !res.body) return { status: res.status, text: await res.text(), headers: res.headers };
    const reader = res.body.getReader();
    while (!done(text)) {
      const { value, done: ended } = await reader.read();
      if (ended) break;
      text += Buffer.from(value).toString();
    }
  } catch (e) {
    if ((e as Error).name !== 'AbortError') throw e;
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
  return { status: res.status, text, headers: res.headers };
}

const ids = (text: string) => [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));

describe('websocket, sse and static routes (auth on)', () => {
  let s: TestServer;
  const tokens = { admin: '', editor: '', viewer: '' };
  const project = makeProject({
    'project.yml': `name: t\ndatabase:\n  path: t.duckdb\nplugins:\n  # live-demo serves its own static folder at /, where the ui plugin's shell would be.\n  disable: [ui]\n  paths: [${JSON.stringify(path.join(FIXTURE_PLUGINS, 'live-demo'))}]\n`,
    'site/index.html': '<!doctype html><title>live demo</title><script src="/app.js"></script>',
    'site/app.js': 'console.log("app");\n',
  });

  before(async () => {
    s = await startServer(project, { auth: true, server: { sseHeartbeatMs: 50 } });
    tokens.admin = (await s.request('POST', '/api/auth/setup', { username: 'root', password: 'secret1' })).body.token;
    for (const [username, role] of [
      ['ed', 'editor'],
      ['vi', 'viewer'],
    ]) {
      assert.equal((await s.request('POST', '/api/users', { username, password: `pw-${username}`, role }, { token: tokens.admin })).status, 201);
    }
    tokens.editor = (await s.request('POST', '/api/auth/login', { username: 'ed', password: 'pw-ed' })).body.token;
    tokens.viewer = (await s.request('POST', '/api/auth/login', { username: 'vi', password: 'pw-vi' })).body.token;
  });
  after(async () => s.close());

  it('refuses the WebSocket upgrade with 401 (no token) and 403 (viewer) before upgrading', async () => {
    const none = await upgrade(s.url, '/ws/live-demo/echo');
    assert.equal(none.status, 401);
    assert.equal(JSON.parse(none.body).error.code, 'auth_required');
    const viewer = await upgrade(s.url, '/ws/live-demo/echo', { authorization: `Bearer ${tokens.viewer}` });
    assert.equal(viewer.status, 403);
    assert.equal(JSON.parse(viewer.body).error.code, 'insufficient_role');
    const viewerByQuery = await upgrade(s.url, `/ws/live-demo/echo?access_token=${tokens.viewer}`);
    assert.equal(viewerByQuery.status, 403);
  });

  it('upgrades an editor authenticated by header, query token or cookie, and the handler sees the caller', async () => {
    for (const [how, urlPath, headers] of [
      ['header', '/ws/live-demo/echo', { authorization: `Bearer ${tokens.editor}` }],
      ['query', `/ws/live-demo/echo?access_token=${tokens.editor}`, {}],
      ['cookie', '/ws/live-demo/echo', { cookie: `dp_token=${tokens.editor}` }],
    ] as const) {
      const r = await upgrade(s.url, urlPath, headers);
      assert.equal(r.status, 101, how);
      const reply = readFrame(r.socket!);
      r.socket!.write(clientFrame('hello'));
      assert.equal(await reply, 'ed: hello', how);
      r.socket!.destroy();
    }
  });

  it('refuses the event stream with 401 and 403 as JSON, never as a stream', async () => {
    const none = await readSse(`${s.url}/api/live-demo/events`, {}, () => true);
    assert.equal(none.status, 401);
    assert.equal(JSON.parse(none.text).error.code, 'auth_required');
    const viewer = await readSse(`${s.url}/api/live-demo/events?access_token=${tokens.viewer}`, {}, () => true);
    assert.equal(viewer.status, 403);
    assert.equal(JSON.parse(viewer.text).error.details.required_permission, 'execute');
    // `?token=` is the same credential under the name EventSource clients of SPEC.md use.
    const viewerByToken = await readSse(`${s.url}/api/live-demo/events?token=${tokens.viewer}`, {}, () => true);
    assert.equal(viewerByToken.status, 403);
    const bogus = await readSse(`${s.url}/api/live-demo/events?token=dp_not_a_token`, {}, () => true);
    assert.equal(bogus.status, 401);
  });

  it('streams live events with ids, replays after Last-Event-ID from the bounded buffer, and sends keepalives', async () => {
    const auth = { authorization: `Bearer ${tokens.editor}` };
    for (const text of ['one', 'two', 'three']) assert.equal((await s.request('POST', '/api/live-demo/emit', { text }, { token: tokens.editor })).status, 200);

    const all = await readSse(`${s.url}/api/live-demo/events`, auth, (t) => ids(t).length >= 3);
    assert.equal(all.status, 200);
    assert.match(all.headers.get('content-type') ?? '', /^text\/event-stream/);
    assert.deepEqual(ids(all.text), [1, 2, 3]);
    assert.match(all.text, /^event: note\ndata: \{"text":"one"\}$/m);

    const resumed = await readSse(`${s.url}/api/live-demo/events`, { ...auth, 'last-event-id': '2' }, (t) => ids(t).length >= 1);
    assert.deepEqual(ids(resumed.text), [3], 'only what came after id 2');

    // Live: an event pushed while connected arrives after the replay.
    let subscribed!: () => void;
    const opened = new Promise<void>((resolve) => (subscribed = resolve));
    const live = readSse(`${s.url}/api/live-demo/events`, { ...auth, 'last-event-id': '3' }, (t) => ids(t).includes(4), { onOpen: subscribed });
    await Promise.race([opened, live]);
    await s.request('POST', '/api/live-demo/emit', { text: 'four' }, { token: tokens.editor });
    assert.deepEqual(ids((await live).text), [4]);

    // The buffer holds 5: after 8 events, id 1 is gone, so a client resuming from it gets all 5 held.
    for (const text of ['5', '6', '7', '8']) await s.request('POST', '/api/live-demo/emit', { text }, { token: tokens.editor });
    const stale = await readSse(`${s.url}/api/live-demo/events`, { ...auth, 'last-event-id': '1' }, (t) => ids(t).length >= 5);
    assert.deepEqual(ids(stale.text), [4, 5, 6, 7, 8]);

    const beat = await readSse(`${s.url}/api/live-demo/events`, { ...auth, 'last-event-id': '8' }, (t) => (t.match(/^: keepalive$/gm) ?? []).length >= 2);
    assert.equal((beat.text.match(/^: keepalive$/gm) ?? []).length, 2, 'two heartbeats at the configured interval');
    assert.deepEqual(ids(beat.text), []);
  });

  it('serves the static folder, index.html for HTML page loads of unknown UI paths, and JSON 404 for unknown API paths', async () => {
    const html = { accept: 'text/html,application/xhtml+xml,*/*;q=0.8' };
    const root = await s.request('GET', '/', undefined, { headers: html });
    assert.equal(root.status, 200);
    assert.match(root.text, /<title>live demo<\/title>/);
    const asset = await s.request('GET', '/app.js');
    assert.equal(asset.status, 200);
    assert.match(asset.headers.get('content-type') ?? '', /javascript/);

    const deep = await s.request('GET', '/models/staging/orders', undefined, { headers: html });
    assert.equal(deep.status, 200);
    assert.match(deep.headers.get('content-type') ?? '', /^text\/html/);
    assert.match(deep.text, /<title>live demo<\/title>/);

    for (const p of ['/api/nope', '/ws/nope', '/docs/nope']) {
      const r = await s.request('GET', p, undefined, { headers: html });
      assert.equal(r.status, p === '/docs/nope' ? r.status : 404, p);
      assert.ok(!/<title>live demo/.test(r.text), `${p} is not the SPA`);
    }
    const api = await s.request('GET', '/api/nope', undefined, { headers: html, token: tokens.viewer });
    assert.equal(api.status, 404);
    assert.equal(api.body.error.code, 'not_found');
    const missingAsset = await s.request('GET', '/missing.js', undefined, { headers: { accept: '*/*' } });
    assert.equal(missingAsset.status, 404, 'a script request does not get index.html');
    assert.equal(missingAsset.body.error.code, 'not_found');
    const post = await s.request('POST', '/models/x', {}, { headers: html });
    assert.equal(post.status, 404, 'only GETs fall back');
  });

  it('checks the permission of a static route before serving or redirecting', async () => {
    assert.equal((await s.request('GET', '/private/app.js')).status, 401);
    assert.equal((await s.request('GET', '/private')).status, 401);
    const asset = await s.request('GET', '/private/app.js', undefined, { token: tokens.viewer });
    assert.equal(asset.status, 200);
    assert.match(asset.text, /console\.log/);
    const index = await s.request('GET', '/private/', undefined, { token: tokens.viewer });
    assert.equal(index.status, 200);
    assert.match(index.text, /<title>live demo/);
  });

  it('sends security headers with a CSP that allows the UI and nothing external, and /docs still loads', async () => {
    const r = await s.request('GET', '/', undefined, { headers: { accept: 'text/html' } });
    const csp = r.headers.get('content-security-policy') ?? '';
    assert.match(csp, /default-src 'self'/);
    assert.match(csp, /script-src 'self'(;|$)/);
    assert.match(csp, /img-src 'self' data:/);
    assert.match(csp, /connect-src 'self' ws:\/\/127\.0\.0\.1:\d+ wss:\/\/127\.0\.0\.1:\d+/);
    for (const source of csp.split(';').flatMap((d) => d.trim().split(/\s+/).slice(1))) {
      assert.ok(/^'(self|none|unsafe-inline)'$|^data:$|^wss?:\/\/127\.0\.0\.1:\d+$/.test(source), `CSP source ${source} is not external`);
    }
    assert.doesNotMatch(csp, /unsafe-eval/);
    assert.equal(r.headers.get('x-content-type-options'), 'nosniff');
    assert.ok(r.headers.get('x-frame-options'));

    // The policy is built once per Host: another Host gets its own sockets, a crafted one none.
    const other = await policyFor(s.url, 'localhost:9999');
    assert.match(other, /connect-src 'self' ws:\/\/localhost:9999 wss:\/\/localhost:9999;/);
    const crafted = await policyFor(s.url, 'x; script-src *');
    assert.match(crafted, /connect-src 'self' 'self';/);
    assert.doesNotMatch(crafted, /script-src \*/);
    const again = await s.request('GET', '/api/health');
    assert.equal(again.headers.get('content-security-policy'), csp);
    assert.equal(again.headers.get('x-content-type-options'), 'nosniff');

    const docs = await s.request('GET', '/docs/', undefined, { headers: { cookie: `dp_token=${tokens.viewer}` } });
    assert.equal(docs.status, 200);
    const scripts = [...docs.text.matchAll(/<script src="([^"]+)"/g)].map((m) => m[1]);
    assert.ok(scripts.length >= 2);
    for (const src of scripts) {
      assert.ok(!/^[a-z]+:\/\//i.test(src), `${src} is same-origin`);
      const js = await s.request('GET', new URL(src, `${s.url}/docs/`).pathname, undefined, { headers: { cookie: `dp_token=${tokens.viewer}` } });
      assert.equal(js.status, 200, src);
    }
    const spec = await s.request('GET', '/docs/json', undefined, { token: tokens.viewer });
    assert.equal(spec.status, 200);
    assert.ok(spec.body.paths['/api/live-demo/events'], 'the SSE route is in the OpenAPI document');
  });
});

describe('route kinds in plugin.json', () => {
  const noBuiltIns = tempDir('dp-no-plugins-');
  const boot = (route: Record<string, unknown>, code: string) =>
    App.boot({
      projectRoot: makeProject({
        'project.yml': 'name: t\ndatabase:\n  path: t.duckdb\nplugins:\n  paths: [ext]\n',
        'ext/plugin.json': JSON.stringify({ name: 'ext', version: '1.0.0', entry: './index.mjs', contributes: { routes: [route] } }),
        'ext/index.mjs': `export default { setup(ctx) { ${code} } };\n`,
      }),
      builtInPluginsDir: noBuiltIns,
    });

  it('refuses a route registered with another kind than its manifest says', async () => {
    await assert.rejects(
      boot({ method: 'GET', url: '/api/ext/events', permission: 'read', kind: 'sse' }, "ctx.route({ method: 'GET', url: '/api/ext/events', permission: 'read', handler: () => ({}) });"),
      (e: { code?: string; message?: string }) => e.code === 'route_kind_mismatch' && /kind 'sse', the code registers 'json'/.test(e.message ?? ''),
    );
    const ok = await boot(
      { method: 'GET', url: '/api/ext/events', permission: 'read', kind: 'sse' },
      "ctx.route({ kind: 'sse', method: 'GET', url: '/api/ext/events', permission: 'read', source: () => ({ since: () => [], subscribe: () => () => {} }) });",
    );
    await ok.close();
  });

  it('keeps websocket routes under /ws, non-JSON kinds on GET, and only static routes outside /api, /ws, /docs', async () => {
    for (const route of [
      { method: 'GET', url: '/api/ext/socket', permission: 'read', kind: 'websocket' },
      { method: 'POST', url: '/api/ext/events', permission: 'read', kind: 'sse' },
      { method: 'GET', url: '/ext', permission: 'read' },
      { method: 'GET', url: '/ext', permission: 'read', kind: 'sse' },
      { method: 'POST', url: '/ext', permission: 'read', kind: 'static' },
    ]) {
      await assert.rejects(boot(route, ''), (e: { code?: string }) => e.code === 'invalid_plugin_manifest', JSON.stringify(route));
    }
  });
});
