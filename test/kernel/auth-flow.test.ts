import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { after, before, describe, it, mock } from 'node:test';
import { hashToken } from '../../kernel/auth/crypto.js';
import { makeProject, type TestServer } from '../helpers.js';
import { startKernelServer as startServer } from './auth-server.js';

/** Makes a token look issued long ago: only its digest is in the database. */
async function expire(s: TestServer, token: string): Promise<void> {
  await s.app.auth.users.database.run("UPDATE _service.tokens SET expires_at = TIMESTAMP '2000-01-01 00:00:00' WHERE token_hash = $1", [hashToken(token)]);
}

describe('auth on: setup, login, users and token lifecycle', () => {
  let s: TestServer;
  let admin: string;

  before(async () => {
    s = await startServer(makeProject({ 'project.yml': 'name: authflow\ndatabase:\n  path: t.duckdb\nauth:\n  token_ttl_days: 2\n' }), { auth: true });
  });
  after(async () => s.close());

  it('status says setup is needed and protected routes refuse everyone until then', async () => {
    const st = await s.request('GET', '/api/auth/status');
    assert.deepEqual(st.body, { auth_enabled: true, needs_setup: true });
    const me = await s.request('GET', '/api/auth/me');
    assert.equal(me.status, 401);
    assert.equal(me.body.error.code, 'auth_required');
    assert.match(me.headers.get('www-authenticate') ?? '', /^Bearer/);
  });

  it('setup validates fields, creates the first admin once, and answers 409 afterwards', async () => {
    const badName = await s.request('POST', '/api/auth/setup', { username: 'bad name', password: 'secret1' });
    assert.equal(badName.status, 400);
    assert.equal(badName.body.error.details.field, 'username');
    const shortPw = await s.request('POST', '/api/auth/setup', { username: 'root', password: 'abc' });
    assert.equal(shortPw.status, 400);
    assert.equal(shortPw.body.error.details.field, 'password');
    const viewerFirst = await s.request('POST', '/api/auth/setup', { username: 'root', password: 'secret1', role: 'viewer' });
    assert.equal(viewerFirst.status, 400);
    assert.equal(viewerFirst.body.error.details.field, 'role');

    const first = await s.request('POST', '/api/auth/setup', { username: 'root', password: 'secret1' });
    assert.equal(first.status, 200);
    assert.equal(first.body.username, 'root');
    assert.equal(first.body.role, 'admin');
    assert.match(first.body.token, /^dp_/);
    const expires = Date.parse(first.body.expires_at) - Date.now();
    assert.ok(expires > 1.9 * 86400_000 && expires <= 2 * 86400_000, 'auth.token_ttl_days sets the lifetime');
    admin = first.body.token;

    const again = await s.request('POST', '/api/auth/setup', { username: 'other', password: 'secret2' });
    assert.equal(again.status, 409);
    assert.equal(again.body.error.code, 'setup_done');
    assert.deepEqual((await s.request('GET', '/api/auth/status')).body, { auth_enabled: true, needs_setup: false });
  });

  it('stores only PBKDF2 hash and salt, and only token digests', async () => {
    const [row] = await s.app.auth.users.database.all<{ password_hash: string; salt: string }>("SELECT * FROM _service.users WHERE username = 'root'");
    assert.equal(row.salt.length, 64);
    assert.ok(!JSON.stringify(row).includes('secret1'));
    const tokens = await s.app.auth.users.database.all<{ token_hash: string }>('SELECT token_hash FROM _service.tokens');
    assert.ok(tokens.some((t) => t.token_hash === hashToken(admin)));
    assert.ok(!JSON.stringify(tokens).includes(admin));
  });

  it('me answers for the token holder; a fresh token is checked with crypto.timingSafeEqual', async () => {
    const login = await s.request('POST', '/api/auth/login', { username: 'root', password: 'secret1' });
    assert.equal(login.status, 200);
    const spy = mock.method(crypto, 'timingSafeEqual');
    try {
      const me = await s.request('GET', '/api/auth/me', undefined, { token: login.body.token });
      assert.deepEqual(me.body, { username: 'root', role: 'admin', display_name: null, authenticated: true });
      assert.ok(spy.mock.callCount() >= 1);
    } finally {
      spy.mock.restore();
    }
    const users = await s.request('GET', '/api/users', undefined, { token: admin });
    assert.equal(users.body[0].username, 'root');
    assert.match(users.body[0].last_login, /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/);
    assert.ok(!('password_hash' in users.body[0]) && !('salt' in users.body[0]));
  });

  it('refuses malformed, unknown equal-length, expired and logged-out tokens with 401', async () => {
    const fake = admin.slice(0, -1) + (admin.endsWith('A') ? 'B' : 'A');
    for (const headers of [{ authorization: 'Basic cm9vdDpzZWNyZXQx' }, { authorization: 'Bearer' }, { authorization: `Bearer ${admin}x` }, { authorization: `Bearer ${fake}` }]) {
      const r = await s.request('GET', '/api/auth/me', undefined, { headers });
      assert.equal(r.status, 401, JSON.stringify(headers));
      assert.equal(r.body.error.code, 'invalid_token');
    }
    const old = (await s.request('POST', '/api/auth/login', { username: 'root', password: 'secret1' })).body.token;
    await expire(s, old);
    const expired = await s.request('GET', '/api/auth/me', undefined, { token: old });
    assert.equal(expired.status, 401);
    assert.equal(expired.body.error.code, 'token_expired');

    const session = (await s.request('POST', '/api/auth/login', { username: 'root', password: 'secret1' })).body.token;
    assert.equal((await s.request('GET', '/api/auth/me', undefined, { token: session })).status, 200);
    assert.equal((await s.request('POST', '/api/auth/logout', undefined, { token: session })).status, 200);
    assert.equal((await s.request('GET', '/api/auth/me', undefined, { token: session })).status, 401);
  });

  it('the login cookie authenticates the API and /docs, which need login too', async () => {
    const docs = await s.request('GET', '/docs/json');
    assert.equal(docs.status, 401);
    const login = await s.request('POST', '/api/auth/login', { username: 'root', password: 'secret1' });
    const cookie = login.headers.get('set-cookie') ?? '';
    assert.match(cookie, /^dp_token=dp_[^;]+;/);
    for (const attribute of [/; Path=\/(;|$)/, /; HttpOnly(;|$)/, /; SameSite=Strict(;|$)/, /; Max-Age=\d+(;|$)/]) assert.match(cookie, attribute);
    const pair = cookie.split(';')[0];
    assert.equal((await s.request('GET', '/docs/json', undefined, { headers: { cookie: pair } })).status, 200);
    assert.equal((await s.request('GET', '/api/auth/me', undefined, { headers: { cookie: `theme=dark; ${pair}` } })).body.username, 'root');
  });

  it('admins manage users; field errors name the field; duplicates are 409', async () => {
    const created = await s.request('POST', '/api/users', { username: 'ann', password: 'pw-ann', role: 'editor', display_name: 'Ann' }, { token: admin });
    assert.equal(created.status, 201);
    assert.deepEqual({ ...created.body, created_at: undefined }, { username: 'ann', role: 'editor', display_name: 'Ann', created_at: undefined, last_login: null });
    const dup = await s.request('POST', '/api/users', { username: 'ann', password: 'pw-ann', role: 'editor' }, { token: admin });
    assert.equal(dup.status, 409);
    for (const [body, field] of [
      [{ username: 'a b', password: 'pw-ok', role: 'viewer' }, 'username'],
      [{ username: 'bo', password: 'pw', role: 'viewer' }, 'password'],
      [{ username: 'bo', password: 'pw-ok', role: 'owner' }, 'role'],
      [{ username: 'bo', password: 'pw-ok' }, 'role'],
    ] as const) {
      const r = await s.request('POST', '/api/users', body, { token: admin });
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.equal(r.body.error.details.field, field, JSON.stringify(r.body));
    }
    const badUpdate = await s.request('PUT', '/api/users/ann', { password: 'x' }, { token: admin });
    assert.equal(badUpdate.status, 400);
    assert.equal(badUpdate.body.error.details.field, 'password');
    assert.equal((await s.request('PUT', '/api/users/nobody', { role: 'viewer' }, { token: admin })).status, 404);
    assert.equal((await s.request('DELETE', '/api/users/nobody', undefined, { token: admin })).status, 404);
  });

  it('a role change, a password change and deletion each revoke the user’s tokens; a display-name change does not', async () => {
    const login = async (password = 'pw-ann') => (await s.request('POST', '/api/auth/login', { username: 'ann', password })).body.token as string;
    const me = async (token: string) => (await s.request('GET', '/api/auth/me', undefined, { token })).status;

    let t = await login();
    assert.equal(await me(t), 200);
    assert.equal((await s.request('PUT', '/api/users/ann', { display_name: 'Ann B.' }, { token: admin })).status, 200);
    assert.equal(await me(t), 200, 'a display-name change keeps sessions');

    const changed = await s.request('PUT', '/api/users/ann', { role: 'viewer' }, { token: admin });
    assert.equal(changed.body.role, 'viewer');
    assert.equal(await me(t), 401, 'role change revokes');

    t = await login();
    assert.equal((await s.request('PUT', '/api/users/ann', { password: 'pw-new' }, { token: admin })).status, 200);
    assert.equal(await me(t), 401, 'password change revokes');
    assert.equal((await s.request('POST', '/api/auth/login', { username: 'ann', password: 'pw-ann' })).status, 401);

    t = await login('pw-new');
    const tokensBefore = await s.app.auth.users.database.value<number>("SELECT count(*) FROM _service.tokens WHERE username = 'ann'");
    assert.ok(Number(tokensBefore) >= 1);
    assert.equal((await s.request('DELETE', '/api/users/ann', undefined, { token: admin })).status, 200);
    assert.equal(await me(t), 401, 'deletion revokes');
    assert.equal(Number(await s.app.auth.users.database.value("SELECT count(*) FROM _service.tokens WHERE username = 'ann'")), 0);
  });

  it('the last admin can be neither demoted nor deleted', async () => {
    const demote = await s.request('PUT', '/api/users/root', { role: 'editor' }, { token: admin });
    assert.equal(demote.status, 409);
    assert.equal(demote.body.error.code, 'last_admin');
    assert.equal((await s.request('DELETE', '/api/users/root', undefined, { token: admin })).status, 409);
  });
});

describe('login rate limit', () => {
  let s: TestServer;
  before(async () => {
    s = await startServer(makeProject(), { auth: true });
    await s.request('POST', '/api/auth/setup', { username: 'root', password: 'secret1' });
  });
  after(async () => s.close());

  it('answers 429 with Retry-After after 10 failures of one username from one address, even for the right password', async () => {
    for (let i = 0; i < 10; i++) {
      const r = await s.request('POST', '/api/auth/login', { username: 'root', password: 'wrong' });
      assert.equal(r.status, 401, `attempt ${i + 1}`);
      assert.equal(r.body.error.code, 'invalid_credentials');
    }
    const blocked = await s.request('POST', '/api/auth/login', { username: 'root', password: 'secret1' });
    assert.equal(blocked.status, 429);
    assert.equal(blocked.body.error.code, 'too_many_login_attempts');
    const retry = Number(blocked.headers.get('retry-after'));
    assert.ok(retry > 0 && retry <= 15 * 60, `Retry-After ${retry}`);
  });
});

describe('auth off', () => {
  let s: TestServer;
  before(async () => {
    s = await startServer(makeProject());
  });
  after(async () => s.close());

  it('every endpoint is open and the caller is an unauthenticated admin', async () => {
    assert.deepEqual((await s.request('GET', '/api/auth/status')).body, { auth_enabled: false, needs_setup: false });
    assert.deepEqual((await s.request('GET', '/api/auth/me')).body, { username: null, role: 'admin', display_name: null, authenticated: false });
    assert.equal((await s.request('GET', '/api/users')).status, 200);
    assert.equal((await s.request('GET', '/api/secrets')).status, 200);
    assert.equal((await s.request('GET', '/api/auth/me', undefined, { headers: { authorization: 'Bearer junk' } })).status, 200);
  });

  it('setup still creates the first user once', async () => {
    assert.equal((await s.request('POST', '/api/auth/setup', { username: 'root', password: 'secret1' })).status, 200);
    assert.equal((await s.request('POST', '/api/auth/setup', { username: 'root2', password: 'secret1' })).status, 409);
    assert.deepEqual((await s.request('GET', '/api/auth/status')).body, { auth_enabled: false, needs_setup: false });
  });
});

describe('ctx.webhooks reads the project .env', () => {
  let s: TestServer;
  before(async () => {
    s = await startServer(makeProject({ '.env': 'SERVICE_WEBHOOK_SECRET_ORDER_EVENTS=per-hook-secret\n' }));
  });
  after(async () => s.close());

  it('checks the per-webhook secret and sees secrets set through the API at once', async () => {
    const webhooks = s.app.contextFor({ name: 'connectors-test', version: '1.0.0', entry: './index.js' }).webhooks;
    assert.equal(webhooks.header, 'x-service-webhook-secret');
    webhooks.verify('order-events', 'per-hook-secret');
    assert.throws(() => webhooks.verify('order-events', 'per-hook-secreT'), (e: { status?: number; code?: string }) => e.status === 401 && e.code === 'webhook_secret_invalid');
    assert.throws(() => webhooks.verify('payments', 'anything'), (e: { code?: string }) => e.code === 'webhook_not_configured');
    assert.equal((await s.request('POST', '/api/secrets', { key: 'SERVICE_WEBHOOK_SECRET', value: 'global-secret' })).status, 200);
    webhooks.verify('payments', 'global-secret');
  });
});
