/**
 * The example third-party plugin tested the way its author would: through sdk/testing, with only
 * itself and the built-ins it talks to (masking, query), auth on, one caller per role.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startTestServer, type PluginTestServer } from '../../sdk/testing.js';
import { REPO_ROOT } from '../helpers.js';

describe('examples/plugins/masking-year-only through sdk/testing', () => {
  let s: PluginTestServer;
  before(async () => {
    s = await startTestServer({ plugins: [path.join(REPO_ROOT, 'examples', 'plugins', 'masking-year-only')], builtIn: ['masking', 'query'], auth: true });
    await s.db.run("CREATE TABLE people (id INTEGER, joined DATE); INSERT INTO people VALUES (1, DATE '2024-03-09')");
  });
  after(async () => s.close());

  it('boots only the plugins asked for', async () => {
    const admin = await s.caller('admin');
    const plugins = await admin.request('GET', '/api/plugins');
    assert.deepEqual(plugins.body.enabled.map((p: { name: string }) => p.name).sort(), ['masking', 'masking-year-only', 'query']);
    assert.equal((await admin.request('GET', '/api/tables')).status, 404, 'the tables plugin is not loaded');
  });

  it('masks for a viewer with the contributed method, and refuses a viewer the policy write', async () => {
    const editor = await s.caller('editor');
    const viewer = await s.caller('viewer');
    const policy = { schema_name: 'main', table_name: 'people', column_name: 'joined', method: 'year_only' };
    assert.equal((await viewer.request('POST', '/api/masking/policies', policy)).status, 403);
    assert.equal((await editor.request('POST', '/api/masking/policies', policy)).status, 201);
    const q = await viewer.request('POST', '/api/query', { sql: 'SELECT joined FROM people' });
    assert.equal(q.status, 200, q.text);
    assert.deepEqual(q.body.rows, [['2024']]);
    assert.equal((await s.request('POST', '/api/query', { sql: 'SELECT 1' })).status, 401, 'no token, no answer');
  });
});
