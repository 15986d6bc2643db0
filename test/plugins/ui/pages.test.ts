/**
 * The ui plugin's server side: the page list per role and per enabled plugin, the prebuilt
 * modules of third-party pages (and nothing else of their folder), the shell with its CSP,
 * and the refusals at boot (two pages at one path, a missing prebuilt module, a bad manifest).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { App } from '../../../kernel/app.js';
import { makeProject, REPO_ROOT, startServer, type TestServer } from '../../helpers.js';

const EXAMPLE = path.join(REPO_ROOT, 'examples', 'plugins', 'ui-page-example');

/** A plugin folder inside the project with one page (and an optional prebuilt module). */
function pagePlugin(name: string, page: Record<string, unknown>, files: Record<string, string> = {}): Record<string, string> {
  const manifest = { name, version: '1.0.0', entry: './index.mjs', contributes: { ui: { pages: [page] } } };
  return {
    [`ext/${name}/plugin.json`]: JSON.stringify(manifest),
    [`ext/${name}/index.mjs`]: 'export default { setup() {} };\n',
    ...Object.fromEntries(Object.entries(files).map(([f, c]) => [`ext/${name}/${f}`, c])),
  };
}

async function login(s: TestServer, username: string, role: string): Promise<string> {
  await s.app.auth.users.create({ username, password: 'pass1234', role: role as 'viewer' });
  const r = await s.request('POST', '/api/auth/login', { username, password: 'pass1234' });
  assert.equal(r.status, 200, r.text);
  return r.body.token as string;
}

describe('ui plugin: pages and modules', () => {
  let s: TestServer;
  let viewer: string;
  let editor: string;
  before(async () => {
    const root = makeProject({
      'project.yml': `name: t\ndatabase:\n  path: t.duckdb\nplugins:\n  paths: [${JSON.stringify(EXAMPLE)}, ext/writer-page]\n`,
      ...pagePlugin('writer-page', { path: '/writer', title: 'Writer', permission: 'write', entry: './ui/page.js' }, { 'ui/page.js': 'export default () => null;\n', 'secret.js': 'no' }),
    });
    s = await startServer(root, { auth: true });
    await s.request('POST', '/api/auth/setup', { username: 'root', password: 'pass1234' });
    viewer = await login(s, 'vera', 'viewer');
    editor = await login(s, 'ed', 'editor');
  });
  after(async () => s?.close());

  it('lists the pages of enabled plugins that the role may see, in order', async () => {
    const v = await s.request('GET', '/api/ui/pages', undefined, { token: viewer });
    assert.equal(v.status, 200, v.text);
    const paths = v.body.pages.map((p: { path: string }) => p.path);
    assert.ok(paths.includes('/sql'), paths.join());
    assert.ok(paths.includes('/largest-tables'));
    assert.ok(!paths.includes('/writer'), 'a write page is hidden from a viewer');
    const e = await s.request('GET', '/api/ui/pages', undefined, { token: editor });
    assert.ok(e.body.pages.some((p: { path: string }) => p.path === '/writer'));
    const orders = e.body.pages.map((p: { order: number }) => p.order);
    assert.deepEqual(orders, [...orders].sort((a, b) => a - b));
    const sql = e.body.pages.find((p: { path: string }) => p.path === '/sql');
    assert.deepEqual(sql.module, { kind: 'built', key: 'query:./ui/SqlPage.tsx', available: true });
    const example = e.body.pages.find((p: { path: string }) => p.path === '/largest-tables');
    assert.deepEqual(example.module, { kind: 'module', url: '/api/ui/modules/ui-page-example/ui/page.js' });
    assert.equal((await s.request('GET', '/api/ui/pages')).status, 401, 'no login, no page list');
  });

  it('serves a prebuilt page and its sibling modules, and nothing else of the plugin folder', async () => {
    const page = await s.request('GET', '/api/ui/modules/ui-page-example/ui/page.js', undefined, { token: viewer });
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type') ?? '', /text\/javascript/);
    assert.match(page.text, /from '@dp\/ui'/);
    assert.equal((await s.request('GET', '/api/ui/modules/ui-page-example/ui/format.js', undefined, { token: viewer })).status, 200);
    for (const bad of ['index.mjs', 'plugin.json', 'ui/../index.mjs', 'ui/%2e%2e/index.mjs', 'ui/missing.js', 'ui/.hidden.js', 'ui/page.ts']) {
      const r = await s.request('GET', `/api/ui/modules/ui-page-example/${bad}`, undefined, { token: viewer });
      assert.equal(r.status, 404, `${bad}: ${r.status} ${r.text}`);
      assert.equal(r.body.error.code === 'ui_module_not_found' || r.body.error.code === 'not_found', true, r.text);
    }
    assert.equal((await s.request('GET', '/api/ui/modules/writer-page/secret.js', undefined, { token: editor })).status, 404, 'outside the entry folder');
    assert.equal((await s.request('GET', '/api/ui/modules/query/ui/SqlPage.tsx', undefined, { token: editor })).status, 404, 'built-in sources are not served');
    assert.equal((await s.request('GET', '/api/ui/modules/nope/ui/page.js', undefined, { token: editor })).status, 404);
    assert.equal((await s.request('GET', '/api/ui/modules/ui-page-example/ui/page.js')).status, 401);
  });

  it('answers the shell at / and client-side routes without a login, with the import map hash in the CSP', async () => {
    for (const p of ['/', '/sql', '/models/marts.orders']) {
      const r = await fetch(s.url + p, { headers: { accept: 'text/html' } });
      assert.equal(r.status, 200, p);
      const html = await r.text();
      const map = /<script type="importmap">([^<]*)<\/script>/.exec(html);
      assert.ok(map, 'index.html carries the import map');
      const hash = (await import('node:crypto')).createHash('sha256').update(map[1]).digest('base64');
      assert.ok((r.headers.get('content-security-policy') ?? '').includes(`'sha256-${hash}'`), 'the CSP allows exactly that import map');
      assert.ok(JSON.parse(map[1]).imports.react, 'react is shared by bare name');
    }
    // Other responses keep the plain policy: no inline script allowed anywhere else.
    const api = await fetch(s.url + '/api/auth/status');
    assert.doesNotMatch(api.headers.get('content-security-policy') ?? '', /sha256-/);
  });
});

describe('ui plugin: trimmed deployments and refusals', () => {
  it('drops the page of a disabled plugin, and with ui disabled / is gone while the API answers', async () => {
    const trimmed = await startServer(makeProject({ 'project.yml': 'name: t\ndatabase:\n  path: t.duckdb\nplugins:\n  disable: [query]\n' }));
    try {
      const pages = await trimmed.request('GET', '/api/ui/pages');
      assert.ok(!pages.body.pages.some((p: { path: string }) => p.path === '/sql'));
    } finally {
      await trimmed.close();
    }
    const noUi = await startServer(makeProject({ 'project.yml': 'name: t\ndatabase:\n  path: t.duckdb\nplugins:\n  disable: [ui]\n' }));
    try {
      const page = await fetch(noUi.url + '/', { headers: { accept: 'text/html' } });
      assert.equal(page.status, 404);
      assert.equal((await noUi.request('GET', '/api/ui/pages')).status, 404);
      const q = await noUi.request('POST', '/api/query', { sql: 'SELECT 42 AS x' });
      assert.deepEqual(q.body.rows, [[42]]);
    } finally {
      await noUi.close();
    }
  });

  it('refuses to start when two plugins claim one page path, or a prebuilt page is missing', async () => {
    const clash = makeProject({
      'project.yml': 'name: t\ndatabase:\n  path: t.duckdb\nplugins:\n  paths: [ext/clash]\n',
      ...pagePlugin('clash', { path: '/sql', title: 'Mine', permission: 'read', entry: './ui/page.js' }, { 'ui/page.js': 'export default () => null;\n' }),
    });
    await assert.rejects(App.boot({ projectRoot: clash, serving: true }), (e: { code?: string; message: string }) => e.code === 'ui_page_conflict' && /query/.test(e.message) && /clash/.test(e.message));
    const missing = makeProject({
      'project.yml': 'name: t\ndatabase:\n  path: t.duckdb\nplugins:\n  paths: [ext/missing]\n',
      ...pagePlugin('missing', { path: '/missing', title: 'Missing', permission: 'read', entry: './ui/page.js' }),
    });
    await assert.rejects(App.boot({ projectRoot: missing, serving: true }), (e: { code?: string }) => e.code === 'ui_page_entry_missing');
  });

  it('refuses a manifest page at a reserved path or with an entry outside the plugin', async () => {
    for (const [page, field] of [
      [{ path: '/api/x', title: 'X', permission: 'read', entry: './ui/page.js' }, 'path'],
      [{ path: '/x', title: 'X', permission: 'read', entry: './../x/page.js' }, 'entry'],
      [{ path: '/x', title: 'X', permission: 'public', entry: './ui/page.js' }, 'permission'],
    ] as const) {
      const root = makeProject({ 'project.yml': 'name: t\ndatabase:\n  path: t.duckdb\nplugins:\n  paths: [ext/bad]\n', ...pagePlugin('bad', page, { 'ui/page.js': '' }) });
      await assert.rejects(App.boot({ projectRoot: root, serving: true }), (e: { code?: string; message: string }) => e.code === 'invalid_plugin_manifest' && e.message.includes(field), `${field}`);
    }
    assert.ok(fs.existsSync(EXAMPLE));
  });
});
