/**
 * Connectors and the files they read (issue 28 points 4 and 9), on a real server with --auth:
 * a csv connector pointed at `.env`, `.dp/`, a database file, or a link (symbolic or hard) to
 * one of them is refused by the one check every file-reading feature shares
 * (`ctx.project.resolveReadable`); and `/api/cdc` withholds the high watermark of a cursor
 * column masked for the caller.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { makeProject } from '../helpers.js';
import { startServerWithRoles, type RoleServer } from '../support/role-server.js';

const SECRET = 'sk-live-3c9b1e7a55d2';
const LAST_EMAIL = 'zed@example.com';

describe('security: what connectors read and show', () => {
  let r: RoleServer;
  const as = (role: 'admin' | 'editor' | 'viewer', method: string, url: string, body?: unknown) => r.s.request(method, url, body, { token: r.tokens[role] });

  before(async () => {
    const root = makeProject({
      'project.yml': [
        'name: connreads',
        'connections:',
        '  people: { type: csv, path: data/people.csv }',
        '  envleak: { type: csv, path: .env }',
        'connectors:',
        '  people:',
        '    type: csv',
        '    target_schema: landing',
        '    tables: [{ name: people, cdc_mode: high_watermark, cdc_column: email }]',
        '  envleak:',
        '    type: csv',
        '    target_schema: landing',
        '    tables: [_env]',
      ].join('\n'),
      '.env': `API_KEY=${SECRET}\nOTHER=${SECRET}\n`,
      '.dp/secrets.csv': `key\n${SECRET}\n`,
      'data/people.csv': `id,email\n1,ada@example.com\n2,${LAST_EMAIL}\n`,
      'data/mixed/ok.csv': 'a\n1\n',
    });
    const link = (name: string, target: string) => fs.symlinkSync(target, path.join(root, name));
    link('data/env.csv', '../.env');
    link('data/dp-dir', '../.dp');
    link('data/mixed/leak.csv', '../../.env');
    fs.linkSync(path.join(root, '.env'), path.join(root, 'data/hard.csv'));
    r = await startServerWithRoles(root);
  });
  after(async () => r?.s.close());

  it('a csv connector never reads a hidden or service file, by name, symlink or hard link', async () => {
    for (const p of ['.env', '.dp/secrets.csv', 'data/env.csv', 'data/dp-dir/secrets.csv', 'data/dp-dir', 'data/mixed', 'data/hard.csv', '.dp/users.duckdb']) {
      for (const route of ['/api/connectors/discover', '/api/connectors/test']) {
        const res = await as('admin', 'POST', route, { connector_type: 'csv', config: { path: p } });
        assert.ok(!res.text.includes(SECRET), `${route} ${p} shows the secret: ${res.text.slice(0, 300)}`);
        assert.ok(res.status >= 400 || res.body.ok === false, `${route} ${p} is refused: ${res.text.slice(0, 300)}`);
        assert.match(res.text, /hidden or service file|project_file_protected/, `${route} ${p}: ${res.text.slice(0, 300)}`);
      }
    }
    const synced = await as('admin', 'POST', '/api/connectors/sync/envleak');
    assert.ok(!synced.text.includes(SECRET), synced.text);
    assert.ok(synced.status >= 400 || synced.body.status === 'error', synced.text);
    const leaked = await as('admin', 'POST', '/api/query', { sql: "SELECT count(*) FROM duckdb_tables() WHERE table_name = '_env'" });
    assert.deepEqual(leaked.body.rows, [[0]]);
    // A plain project file still reads.
    const ok = await as('admin', 'POST', '/api/connectors/discover', { connector_type: 'csv', config: { path: 'data/people.csv' } });
    assert.equal(ok.status, 200, ok.text);
  });

  it('/api/cdc withholds the high watermark of a cursor column masked for the caller', async () => {
    const synced = await as('admin', 'POST', '/api/connectors/sync/people');
    assert.equal(synced.body.results[0].status, 'success', synced.text);
    const policy = await as('admin', 'POST', '/api/masking/policies', { schema_name: 'landing', table_name: 'people', column_name: 'email', method: 'redact' });
    assert.equal(policy.status, 201, policy.text);
    for (const url of ['/api/cdc', '/api/cdc/people']) {
      const viewer = await as('viewer', 'GET', url);
      assert.equal(viewer.status, 200);
      assert.ok(!viewer.text.includes(LAST_EMAIL), `${url} shows the masked watermark: ${viewer.text}`);
      assert.match(viewer.text, /"watermark_masked":true/);
      assert.ok((await as('admin', 'GET', url)).text.includes(LAST_EMAIL), 'the exempt admin reads it');
    }
    const editorSync = await as('editor', 'POST', '/api/connectors/sync/people');
    assert.ok(!editorSync.text.includes(LAST_EMAIL), editorSync.text);
  });
});
