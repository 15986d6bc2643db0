/**
 * The route table × role matrix, generated from the routes the running server registered
 * (kernel, auth and every enabled plugin), so a new route is covered the day it lands.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { minimumRole, PERMISSIONS, type RoutePermission } from '../../sdk/auth.js';
import { App } from '../../kernel/app.js';
import { hashToken, newToken } from '../../kernel/auth/crypto.js';
import { kernelRoutes } from '../../kernel/routes.js';
import { FIXTURE_PLUGINS, makeProject, startServer, tempDir, type TestServer } from '../helpers.js';

interface RouteRow {
  method: string;
  url: string;
  permission: RoutePermission;
}

/** A concrete path for a route pattern: every `:param` (with or without a regex) and `*` becomes a dummy segment. */
function concrete(url: string): string {
  return url.replace(/:[A-Za-z0-9_]+(\([^)]*\))?/g, 'x').replace(/\*/g, 'x');
}

describe('route table × role matrix (auth on)', () => {
  let s: TestServer;
  let routes: RouteRow[];
  const tokens: Record<'admin' | 'editor' | 'viewer' | 'expired' | 'revoked' | 'loggedOut', string> = {} as never;

  const send = (route: RouteRow, headers: Record<string, string>) =>
    s.request(route.method, concrete(route.url), route.method === 'GET' ? undefined : {}, { headers });

  before(async () => {
    // The live-demo fixture adds one route of each non-JSON kind (websocket, sse, static).
    s = await startServer(makeProject({ 'project.yml': `name: test\ndatabase:\n  path: test.duckdb\nplugins:\n  # live-demo serves its own static folder at /, where the ui plugin's shell would be.\n  disable: [ui]\n  paths: [${JSON.stringify(path.join(FIXTURE_PLUGINS, 'live-demo'))}]\n` }), { auth: true });
    routes = [...kernelRoutes(s.app), ...s.app.auth.routes(), ...s.app.routes, ...s.app.nonJsonRoutes].map((r) => ({ method: r.method, url: r.url, permission: r.permission }));

    tokens.admin = (await s.request('POST', '/api/auth/setup', { username: 'root', password: 'secret1' })).body.token;
    const login = async (username: string) => {
      const r = await s.request('POST', '/api/auth/login', { username, password: `pw-${username}` });
      assert.equal(r.status, 200, `login ${username}`);
      return r.body.token as string;
    };
    for (const [username, role] of [
      ['ed', 'editor'],
      ['vi', 'viewer'],
      ['gone', 'viewer'],
      ['old', 'admin'],
    ]) {
      assert.equal((await s.request('POST', '/api/users', { username, password: `pw-${username}`, role }, { token: tokens.admin })).status, 201);
    }
    tokens.editor = await login('ed');
    tokens.viewer = await login('vi');
    // An admin's token past its lifetime: expiry must beat even the highest role.
    tokens.expired = await login('old');
    await s.app.auth.users.database.run("UPDATE _service.tokens SET expires_at = TIMESTAMP '2000-01-01 00:00:00' WHERE token_hash = $1", [hashToken(tokens.expired)]);
    tokens.revoked = await login('gone');
    assert.equal((await s.request('DELETE', '/api/users/gone', undefined, { token: tokens.admin })).status, 200);
    tokens.loggedOut = await login('vi');
    assert.equal((await s.request('POST', '/api/auth/logout', undefined, { token: tokens.loggedOut })).status, 200);
  });
  after(async () => s.close());

  it('covers the whole registered table, and every route declares a known permission', () => {
    const keys = new Set(routes.map((r) => `${r.method} ${r.url}`));
    for (const expected of ['GET /ws/live-demo/echo', 'GET /api/live-demo/events', 'GET /', 'GET /api/auth/status', 'POST /api/auth/setup', 'GET /api/users', 'DELETE /api/users/:username', 'POST /api/secrets', 'PUT /api/environment/:env_name', 'POST /api/query']) {
      assert.ok(keys.has(expected), `${expected} is in the matrix`);
    }
    for (const r of routes) assert.ok(r.permission === 'public' || PERMISSIONS.includes(r.permission), `${r.method} ${r.url}: ${r.permission}`);
    assert.ok(routes.some((r) => r.permission === 'read') && routes.some((r) => r.permission === 'manage_users') && routes.some((r) => r.permission === 'write'));
  });

  it('every non-public route refuses a missing, malformed, unknown, expired, revoked or logged-out token with 401', async () => {
    const variants: Record<string, Record<string, string>> = {
      missing: {},
      'basic scheme': { authorization: 'Basic cm9vdDpzZWNyZXQx' },
      'bearer without token': { authorization: 'Bearer' },
      'not a dp token': { authorization: 'Bearer not-a-token' },
      'unknown well-formed token': { authorization: `Bearer ${newToken()}` },
      'garbage cookie': { cookie: 'dp_token=garbage' },
      expired: { authorization: `Bearer ${tokens.expired}` },
      'revoked (user deleted)': { authorization: `Bearer ${tokens.revoked}` },
      'logged out': { authorization: `Bearer ${tokens.loggedOut}` },
    };
    const failures: string[] = [];
    for (const route of routes.filter((r) => r.permission !== 'public')) {
      for (const [name, headers] of Object.entries(variants)) {
        const r = await send(route, headers);
        if (r.status !== 401) failures.push(`${route.method} ${route.url} with ${name} token: ${r.status} ${r.text.slice(0, 120)}`);
      }
    }
    assert.deepEqual(failures, []);
    assert.equal((await s.request('GET', '/docs/json')).status, 401, '/docs needs login too');
  });

  it('a viewer gets 403 on every route beyond read; an editor gets 403 on every admin route', async () => {
    const failures: string[] = [];
    let checked = 0;
    for (const route of routes) {
      if (route.permission !== 'public' && route.permission !== 'read') {
        const r = await send(route, { authorization: `Bearer ${tokens.viewer}` });
        checked++;
        if (r.status !== 403 || r.body?.error?.code !== 'insufficient_role') failures.push(`viewer ${route.method} ${route.url}: ${r.status}`);
      }
      if (route.permission !== 'public' && minimumRole(route.permission) === 'admin') {
        const r = await send(route, { authorization: `Bearer ${tokens.editor}` });
        checked++;
        if (r.status !== 403 || r.body?.error?.details?.required_role !== 'admin') failures.push(`editor ${route.method} ${route.url}: ${r.status}`);
      }
    }
    assert.deepEqual(failures, []);
    assert.ok(checked >= 10, `checked ${checked} route/role pairs`);
  });

  it('public routes answer without a token', async () => {
    for (const route of routes.filter((r) => r.permission === 'public' && r.method === 'GET')) {
      const r = await send(route, {});
      assert.notEqual(r.status, 401, `${route.method} ${route.url}`);
    }
  });
});

describe('a route without a permission stops start-up', () => {
  const noBuiltIns = tempDir('dp-no-plugins-');
  const projectWith = (code: string, declared = 'read') =>
    makeProject({
      'project.yml': 'name: t\ndatabase:\n  path: t.duckdb\nplugins:\n  paths: [ext]\n',
      'ext/plugin.json': JSON.stringify({
        name: 'ext',
        version: '1.0.0',
        entry: './index.mjs',
        contributes: { routes: [{ method: 'GET', url: '/api/ext', permission: declared }] },
      }),
      'ext/index.mjs': `export default { setup(ctx) { ${code} } };\n`,
    });

  it('refuses code that registers a route with no permission, or with one its manifest does not say', async () => {
    await assert.rejects(
      App.boot({ projectRoot: projectWith("ctx.route({ method: 'GET', url: '/api/ext', handler: () => ({}) });"), builtInPluginsDir: noBuiltIns }),
      (e: { code?: string }) => e.code === 'route_without_permission',
    );
    await assert.rejects(
      App.boot({ projectRoot: projectWith("ctx.route({ method: 'GET', url: '/api/ext', permission: 'public', handler: () => ({}) });"), builtInPluginsDir: noBuiltIns }),
      (e: { code?: string }) => e.code === 'route_permission_mismatch',
    );
    const ok = await App.boot({ projectRoot: projectWith("ctx.route({ method: 'GET', url: '/api/ext', permission: 'read', handler: () => ({}) });"), builtInPluginsDir: noBuiltIns });
    await ok.close();
  });
});
