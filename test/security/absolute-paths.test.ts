/**
 * No answer carries an absolute machine path (issue 33 point 7): a backup path outside
 * `_backups/` is echoed project-relative or not at all, `/api/environment` names the database
 * file project-relative (a file outside the project only by its name, except to admins), and an
 * absolute file path is refused instead of being saved inside the project.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { makeProject, startServer, tempDir, type TestServer } from '../helpers.js';

describe('absolute paths in answers', () => {
  let s: TestServer;
  let root: string;
  let outside: string;
  const tokens: Record<string, string> = {};
  before(async () => {
    outside = tempDir('dp-outside-');
    root = makeProject({ 'project.yml': `name: t\ndatabase:\n  path: ${path.join(outside, 'elsewhere.duckdb')}\n` });
    s = await startServer(root, { auth: true });
    tokens.admin = (await s.request('POST', '/api/auth/setup', { username: 'root', password: 'secret1' })).body.token;
    for (const role of ['viewer', 'editor'] as const) {
      await s.request('POST', '/api/users', { username: role, password: 'secret1', role }, { token: tokens.admin });
      tokens[role] = (await s.request('POST', '/api/auth/login', { username: role, password: 'secret1' })).body.token;
    }
  });
  after(async () => {
    await s.close();
    fs.rmSync(outside, { recursive: true, force: true });
  });

  const noMachinePath = (text: string) => {
    assert.ok(!text.includes(root), `the project's absolute folder in ${text}`);
    assert.ok(!text.includes(os.tmpdir()), `the temp folder in ${text}`);
  };

  it('echoes a refused backup path without the machine folders', async () => {
    for (const p of [path.join(root, 'project.yml'), '/etc/passwd', '../../x.duckdb', 'project.yml']) {
      const r = await s.request('POST', '/api/backup/verify', { path: p }, { token: tokens.editor });
      assert.equal(r.status, 400, r.text);
      assert.equal(r.body.error.code, 'backup_path_outside');
      noMachinePath(r.text);
      assert.doesNotMatch(r.text, /\/etc/);
    }
  });

  it('names a database file outside the project by its name, except to an admin', async () => {
    const viewer = await s.request('GET', '/api/environment', undefined, { token: tokens.viewer });
    assert.equal(viewer.status, 200, viewer.text);
    assert.equal(viewer.body.database_path, 'elsewhere.duckdb');
    noMachinePath(viewer.text);
    const admin = await s.request('GET', '/api/environment', undefined, { token: tokens.admin });
    assert.equal(admin.body.database_path, path.join(outside, 'elsewhere.duckdb'), 'as project.yml writes it');
  });

  it('refuses an absolute path on PUT /api/files instead of saving it inside the project', async () => {
    const r = await s.request('PUT', '/api/files/%2Ftmp%2Fx.sql', { content: 'SELECT 1' }, { token: tokens.editor });
    assert.equal(r.status, 400, r.text);
    assert.equal(r.body.error.code, 'path_outside_project');
    assert.ok(!fs.existsSync(path.join(root, 'tmp', 'x.sql')));
    const ok = await s.request('PUT', '/api/files/tmp%2Fx.sql', { content: 'SELECT 1' }, { token: tokens.editor });
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.body.path, 'tmp/x.sql');
  });
});
