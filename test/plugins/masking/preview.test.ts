/**
 * POST /api/masking/preview: a table's sample as a lower (or the same) role sees it, through the
 * guarded runner; never as a role above the caller's. Without --auth it still shows the role's
 * masking (the local admin is exempt, the previewed role is not).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { makeProject, startServer, type TestServer } from '../../helpers.js';

const SETUP = "CREATE TABLE people (id INTEGER, email VARCHAR); INSERT INTO people VALUES (1, 'ada@example.com')";
const POLICY = { schema_name: 'main', table_name: 'people', column_name: 'email', method: 'email' };

describe('masking preview', () => {
  let s: TestServer;
  const tokens: Record<string, string> = {};
  before(async () => {
    s = await startServer(makeProject(), { auth: true });
    await s.app.db.run(SETUP);
    tokens.admin = (await s.request('POST', '/api/auth/setup', { username: 'root', password: 'pass1234' })).body.token;
    for (const role of ['editor', 'viewer']) {
      await s.request('POST', '/api/users', { username: role, password: 'pass1234', role }, { token: tokens.admin });
      tokens[role] = (await s.request('POST', '/api/auth/login', { username: role, password: 'pass1234' })).body.token;
    }
    assert.equal((await s.request('POST', '/api/masking/policies', POLICY, { token: tokens.admin })).status, 201);
  });
  after(async () => s?.close());

  it('shows the sample as a lower role sees it, and the caller’s own view unchanged', async () => {
    const asViewer = await s.request('POST', '/api/masking/preview', { schema_name: 'main', table_name: 'people', role: 'viewer' }, { token: tokens.editor });
    assert.equal(asViewer.status, 200, asViewer.text);
    assert.deepEqual(asViewer.body.columns, ['id', 'email']);
    assert.deepEqual(asViewer.body.rows, [[1, '***@example.com']]);
    const asAdmin = await s.request('POST', '/api/masking/preview', { schema_name: 'main', table_name: 'people', role: 'admin' }, { token: tokens.admin });
    assert.deepEqual(asAdmin.body.rows, [[1, 'ada@example.com']], 'admin is exempt by default');
  });

  it('refuses a role above the caller’s, and bad input, changing nothing', async () => {
    const up = await s.request('POST', '/api/masking/preview', { schema_name: 'main', table_name: 'people', role: 'admin' }, { token: tokens.viewer });
    assert.equal(up.status, 403);
    assert.equal(up.body.error.code, 'preview_role_above_caller');
    assert.equal((await s.request('POST', '/api/masking/preview', { schema_name: 'main', table_name: 'people', role: 'root' }, { token: tokens.viewer })).status, 400);
    const missing = await s.request('POST', '/api/masking/preview', { schema_name: 'main', table_name: 'nope', role: 'viewer' }, { token: tokens.viewer });
    assert.ok(missing.status >= 400 && missing.status < 500, missing.text);
    assert.equal((await s.request('POST', '/api/masking/preview', { schema_name: 'main', table_name: 'people', role: 'viewer' })).status, 401);
  });
});

describe('masking preview without --auth', () => {
  it('masks as the previewed role although the local caller is exempt', async () => {
    const s = await startServer(makeProject());
    try {
      await s.app.db.run(SETUP);
      assert.equal((await s.request('POST', '/api/masking/policies', POLICY)).status, 201);
      const r = await s.request('POST', '/api/masking/preview', { schema_name: 'main', table_name: 'people', role: 'viewer' });
      assert.deepEqual(r.body.rows, [[1, '***@example.com']]);
      assert.deepEqual((await s.request('POST', '/api/query', { sql: 'SELECT email FROM people' })).body.rows, [['ada@example.com']]);
    } finally {
      await s.close();
    }
  });
});
