/**
 * Takeover through an environment switch (issue 10 point 2): users and tokens belong to the
 * project, not to the environment's database, and only an admin switches environments.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { hashPassword } from '../../kernel/auth/crypto.js';
import { AUTH_MIGRATIONS } from '../../kernel/auth/users.js';
import { DuckDatabase } from '../../kernel/database.js';
import { makeProject, startServer, type TestServer } from '../helpers.js';

const PROJECT = 'name: t\ndatabase:\n  path: dev.duckdb\nenvironments:\n  dev:\n    database:\n      path: dev.duckdb\n  staging:\n    database:\n      path: staging.duckdb\n';

describe('environment switch and the user store', () => {
  let s: TestServer;
  let admin: string;
  let editor: string;
  before(async () => {
    s = await startServer(makeProject({ 'project.yml': PROJECT }), { auth: true, env: 'dev' });
    admin = (await s.request('POST', '/api/auth/setup', { username: 'root', password: 'secret1' })).body.token;
    await s.request('POST', '/api/users', { username: 'ed', password: 'secret1', role: 'editor' }, { token: admin });
    editor = (await s.request('POST', '/api/auth/login', { username: 'ed', password: 'secret1' })).body.token;
  });
  after(async () => s.close());

  it('refuses an editor (and a viewer) the switch', async () => {
    const r = await s.request('PUT', '/api/environment/staging', undefined, { token: editor });
    assert.equal(r.status, 403, r.text);
    assert.equal(r.body.error.code, 'insufficient_role');
    assert.equal((await s.request('GET', '/api/environment', undefined, { token: admin })).body.active, 'dev');
  });

  it('an admin switch to a fresh database opens no setup window and keeps every login', async () => {
    const r = await s.request('PUT', '/api/environment/staging', undefined, { token: admin });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.active, 'staging');
    assert.deepEqual((await s.request('GET', '/api/auth/status')).body, { auth_enabled: true, needs_setup: false });
    const setup = await s.request('POST', '/api/auth/setup', { username: 'mallory', password: 'secret1' });
    assert.equal(setup.status, 409, setup.text);
    assert.equal((await s.request('GET', '/api/auth/me', undefined, { token: admin })).body.username, 'root');
    assert.equal((await s.request('GET', '/api/auth/me', undefined, { token: editor })).body.username, 'ed');
    assert.equal((await s.request('POST', '/api/auth/login', { username: 'ed', password: 'secret1' })).status, 200);
    // The environment's own database holds no credentials.
    const creds = await s.app.db.value("SELECT count(*) FROM duckdb_tables() WHERE schema_name = '_service' AND table_name IN ('users', 'tokens')");
    assert.equal(Number(creds), 0);
    assert.equal((await s.request('PUT', '/api/environment/dev', undefined, { token: admin })).status, 200);
  });
});

describe('users kept in an environment database by earlier versions', () => {
  let s: TestServer;
  let root: string;
  before(async () => {
    root = makeProject({ 'project.yml': 'name: t\ndatabase:\n  path: old.duckdb\n' });
    const old = new DuckDatabase(path.join(root, 'old.duckdb'));
    await old.run('CREATE SCHEMA _service');
    for (const step of AUTH_MIGRATIONS) await old.run(step.sql);
    const { hash, salt } = await hashPassword('legacy-pw');
    await old.run("INSERT INTO _service.users VALUES ('veteran', $1, $2, 'admin', NULL, TIMESTAMP '2024-01-01 00:00:00', NULL)", [hash, salt]);
    old.close();
    s = await startServer(root, { auth: true });
  });
  after(async () => s.close());

  it('are imported into the project store on first open, once', async () => {
    assert.deepEqual((await s.request('GET', '/api/auth/status')).body, { auth_enabled: true, needs_setup: false });
    const login = await s.request('POST', '/api/auth/login', { username: 'veteran', password: 'legacy-pw' });
    assert.equal(login.status, 200, login.text);
    assert.equal(login.body.role, 'admin');
    assert.ok(fs.existsSync(path.join(root, '.dp', 'users.duckdb')));
    assert.equal((await s.request('POST', '/api/auth/setup', { username: 'mallory', password: 'secret1' })).status, 409);
    const left = await s.app.db.value("SELECT count(*) FROM duckdb_tables() WHERE schema_name = '_service' AND table_name IN ('users', 'tokens')");
    assert.equal(Number(left), 0, 'no password hashes stay in the environment database');
  });
});
