/** The example third-party plugin adds masking methods through the `masking.methods` extension point. */
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { makeProject, REPO_ROOT, startServer, type TestServer } from '../../helpers.js';

describe('masking.methods extension point', () => {
  let s: TestServer;
  before(async () => {
    const plugin = path.join(REPO_ROOT, 'examples', 'plugins', 'masking-year-only');
    const root = makeProject({
      'project.yml': `name: t\ndatabase:\n  path: t.duckdb\nmasking:\n  enforce_without_auth: true\nplugins:\n  paths: [${JSON.stringify(plugin)}]\n`,
    });
    s = await startServer(root);
    await s.app.db.run("CREATE TABLE people (id INTEGER, joined DATE, nick VARCHAR); INSERT INTO people VALUES (1, DATE '2024-03-09', 'ace'), (2, NULL, NULL)");
  });
  after(async () => s.close());

  it('lists the contributed methods with their schemas and the contributing plugin', async () => {
    const r = await s.request('GET', '/api/masking/methods');
    const year = r.body.find((m: { name: string }) => m.name === 'year_only');
    assert.equal(year.plugin, 'masking-year-only');
    assert.equal(r.body.length, 16);
    const fixed = r.body.find((m: { name: string }) => m.name === 'fixed_text');
    assert.equal(fixed.config_schema.properties.text.default, 'hidden');
  });

  it('validates their config and enforces them on queries', async () => {
    const bad = await s.request('POST', '/api/masking/policies', { schema_name: 'main', table_name: 'people', column_name: 'nick', method: 'fixed_text', method_config: { text: 7 } });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.details.field, 'method_config.text');
    for (const [column, method] of [['joined', 'year_only'], ['nick', 'fixed_text']]) {
      const r = await s.request('POST', '/api/masking/policies', { schema_name: 'main', table_name: 'people', column_name: column, method });
      assert.equal(r.status, 201, r.text);
    }
    const q = await s.request('POST', '/api/query', { sql: 'SELECT joined, nick FROM people ORDER BY id' });
    assert.equal(q.status, 200, q.text);
    assert.deepEqual(q.body.rows, [
      ['2024', 'hidden'],
      [null, null],
    ]);
  });
});
