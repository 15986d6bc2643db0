/**
 * Seeing what a role sees (issue 33 point 12): without --auth every caller is an exempt admin,
 * so a masked column shows raw; `as` on /api/query (admins only) and `dp query --as` run the
 * query under that role's masking.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { closeInProcessClis, makeProject, runInProcess, startServer, type TestServer } from '../../helpers.js';

const SETUP = "CREATE SCHEMA crm; CREATE TABLE crm.customers AS SELECT 1 AS id, 'ann@example.com' AS email";

describe('a query run as another role', () => {
  let s: TestServer;
  let root: string;
  before(async () => {
    root = makeProject();
    s = await startServer(root);
    await s.app.db.run(SETUP);
    const policy = await s.request('POST', '/api/masking/policies', { schema_name: 'crm', table_name: 'customers', column_name: 'email', method: 'redact' });
    assert.equal(policy.status, 201, policy.text);
  });
  after(async () => s.close());

  it('shows raw values to the local admin and masked ones with as: viewer', async () => {
    const raw = await s.request('POST', '/api/query', { sql: 'SELECT email FROM crm.customers' });
    assert.deepEqual(raw.body.rows, [['ann@example.com']]);
    const asViewer = await s.request('POST', '/api/query', { sql: 'SELECT email FROM crm.customers', as: 'viewer' });
    assert.equal(asViewer.status, 200, asViewer.text);
    assert.notEqual(asViewer.body.rows[0][0], 'ann@example.com');
    assert.equal(asViewer.body.masked_columns[0].name, 'email');
    const asAdmin = await s.request('POST', '/api/query', { sql: 'SELECT email FROM crm.customers', as: 'admin' });
    assert.deepEqual(asAdmin.body.rows, [['ann@example.com']]);
    const bad = await s.request('POST', '/api/query', { sql: 'SELECT 1', as: 'root' });
    assert.equal(bad.status, 400);
  });

  it('dp query --as viewer prints the masked value', async () => {
    await s.close();
    const plain = await runInProcess(['query', 'SELECT email FROM crm.customers', '--project', root]);
    assert.match(plain.stdout, /ann@example\.com/);
    const asViewer = await runInProcess(['query', 'SELECT email FROM crm.customers', '--as', 'viewer', '--project', root]);
    assert.equal(asViewer.code, 0, asViewer.stderr);
    assert.doesNotMatch(asViewer.stdout, /ann@example\.com/);
    const bad = await runInProcess(['query', 'SELECT 1', '--as', 'boss', '--project', root]);
    assert.notEqual(bad.code, 0);
    assert.match(bad.stderr, /--as takes a role/);
    await closeInProcessClis();
    s = await startServer(root);
  });
});

describe('as is for admins only', () => {
  let s: TestServer;
  before(async () => {
    s = await startServer(makeProject(), { auth: true });
    await s.app.db.run(SETUP);
  });
  after(async () => s.close());

  it('refuses as from a viewer or an editor', async () => {
    const admin = (await s.request('POST', '/api/auth/setup', { username: 'root', password: 'secret1' })).body.token;
    await s.request('POST', '/api/masking/policies', { schema_name: 'crm', table_name: 'customers', column_name: 'email', method: 'redact', exempted_roles: ['admin', 'editor'] }, { token: admin });
    await s.request('POST', '/api/users', { username: 'ed', password: 'secret1', role: 'editor' }, { token: admin });
    const editor = (await s.request('POST', '/api/auth/login', { username: 'ed', password: 'secret1' })).body.token;
    const refused = await s.request('POST', '/api/query', { sql: 'SELECT email FROM crm.customers', as: 'viewer' }, { token: editor });
    assert.equal(refused.status, 403, refused.text);
    assert.equal(refused.body.error.code, 'insufficient_role');
    const asViewer = await s.request('POST', '/api/query', { sql: 'SELECT email FROM crm.customers', as: 'viewer' }, { token: admin });
    assert.notEqual(asViewer.body.rows[0][0], 'ann@example.com');
    const asEditor = await s.request('POST', '/api/query', { sql: 'SELECT email FROM crm.customers', as: 'editor' }, { token: admin });
    assert.deepEqual(asEditor.body.rows, [['ann@example.com']]);
  });
});
