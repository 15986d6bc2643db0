import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { makeProject, startServer, tempDir, type TestServer } from '../../helpers.js';

describe('files plugin', () => {
  let s: TestServer;
  let root: string;
  let outside: string;
  before(async () => {
    outside = tempDir('dp-outside-');
    fs.writeFileSync(path.join(outside, 'secret.sql'), 'SELECT 42');
    root = makeProject({
      'transform/staging/stg_a.sql': 'SELECT 1 AS a',
      'seeds/colors.csv': 'id,name\n1,red\n',
      '.env': 'API_KEY=supersecretvalue\n',
      'notes/readme.md': '# hi',
    });
    fs.symlinkSync(outside, path.join(root, 'escape'));
    fs.symlinkSync(path.join(outside, 'secret.sql'), path.join(root, 'transform', 'link.sql'));
    s = await startServer(root);
  });
  after(async () => s.close());

  it('returns the tree without secrets or database files', async () => {
    const r = await s.request('GET', '/api/files');
    assert.equal(r.status, 200);
    const flat: string[] = [];
    const walk = (nodes: Array<{ path: string; children?: unknown[] }>) => nodes.forEach((n) => (flat.push(n.path), n.children && walk(n.children as never)));
    walk(r.body.children);
    assert.ok(flat.includes('transform/staging/stg_a.sql'));
    assert.ok(flat.includes('project.yml'));
    assert.ok(!flat.some((p) => p.endsWith('.env') || p.endsWith('.duckdb') || p.startsWith('escape')), flat.join(','));
  });

  it('reads a file with its language', async () => {
    const r = await s.request('GET', '/api/files/transform/staging/stg_a.sql');
    const sha256 = (await import('node:crypto')).createHash('sha256').update('SELECT 1 AS a').digest('hex');
    assert.deepEqual(r.body, { path: 'transform/staging/stg_a.sql', content: 'SELECT 1 AS a', language: 'sql', sha256 });
    assert.equal((await s.request('GET', '/api/files/project.yml')).body.language, 'yaml');
    assert.equal((await s.request('GET', '/api/files/nope.sql')).status, 404);
  });

  it('saves only over the version the caller read when it passes base_sha256 (409 file_conflict otherwise, file unchanged)', async () => {
    const file = 'transform/staging/conflict.sql';
    const created = await s.request('PUT', `/api/files/${file}`, { content: 'SELECT 1 AS v', base_sha256: null });
    assert.equal(created.status, 200, created.text);
    assert.equal(created.body.created, true);
    const again = await s.request('PUT', `/api/files/${file}`, { content: 'SELECT 9 AS v', base_sha256: null });
    assert.equal(again.status, 409, 'null means the file must not exist yet');
    const read = await s.request('GET', `/api/files/${file}`);
    // Someone else saves in between: the first editor's save is refused and changes nothing.
    const other = await s.request('PUT', `/api/files/${file}`, { content: 'SELECT 2 AS v', base_sha256: read.body.sha256 });
    assert.equal(other.status, 200, other.text);
    const stale = await s.request('PUT', `/api/files/${file}`, { content: 'SELECT 3 AS v', base_sha256: read.body.sha256 });
    assert.equal(stale.status, 409);
    assert.equal(stale.body.error.code, 'file_conflict');
    assert.equal(stale.body.error.details.current_sha256, other.body.sha256);
    assert.equal((await s.request('GET', `/api/files/${file}`)).body.content, 'SELECT 2 AS v');
    // Without base_sha256 a save overwrites, as before.
    assert.equal((await s.request('PUT', `/api/files/${file}`, { content: 'SELECT 4 AS v' })).status, 200);
    await s.request('DELETE', `/api/files/${file}`);
  });

  const traversal = [
    '../outside.sql',
    '..%2F..%2Fetc%2Fpasswd',
    '%2Fetc%2Fpasswd',
    'transform/../../x.sql',
    'transform/%2e%2e/%2e%2e/x.sql',
    'escape/secret.sql',
    'escape/new.sql',
    'transform/link.sql',
  ];
  for (const p of traversal) {
    it(`refuses path ${p} for read and write, writing nothing`, async () => {
      const read = await s.request('GET', `/api/files/${p}`);
      assert.ok([400, 404].includes(read.status), `${p}: ${read.status}`);
      if (read.status === 400) assert.equal(read.body.error.code, 'path_outside_project');
      const write = await s.request('PUT', `/api/files/${p}`, { content: 'SELECT 666' });
      assert.ok([400, 404].includes(write.status), `${p}: ${write.status} ${write.text}`);
      assert.equal(fs.readFileSync(path.join(outside, 'secret.sql'), 'utf8'), 'SELECT 42');
      assert.ok(!fs.existsSync(path.join(outside, 'new.sql')));
      assert.ok(!fs.existsSync(path.join(path.dirname(root), 'outside.sql')));
    });
  }

  it('never reads or writes .env', async () => {
    const read = await s.request('GET', '/api/files/.env');
    assert.equal(read.status, 400);
    assert.equal(read.body.error.code, 'protected_path');
    assert.ok(!read.text.includes('supersecretvalue'));
    const write = await s.request('PUT', '/api/files/.env', { content: 'X=1' });
    assert.equal(write.status, 400);
    assert.equal(fs.readFileSync(path.join(root, '.env'), 'utf8'), 'API_KEY=supersecretvalue\n');
  });

  it('saves allowed extensions atomically and creates folders', async () => {
    const r = await s.request('PUT', '/api/files/transform/marts/new_model.sql', { content: 'SELECT 2 AS b' });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.created, true);
    assert.equal(fs.readFileSync(path.join(root, 'transform/marts/new_model.sql'), 'utf8'), 'SELECT 2 AS b');
    assert.deepEqual(
      fs.readdirSync(path.join(root, 'transform/marts')).filter((f) => f.endsWith('.tmp')),
      [],
    );
    for (const ok of ['a.py', 'b.yml', 'c.yaml', 'd.sqlfluff', 'ingest/e.ts', 'f.js', 'g.mjs']) {
      assert.equal((await s.request('PUT', `/api/files/${ok}`, { content: 'x: 1' })).status, 200, ok);
    }
  });

  it('refuses other extensions', async () => {
    for (const bad of ['run.sh', 'x.exe', 'noext', 'data.csv', 'x.sql.bak']) {
      const r = await s.request('PUT', `/api/files/${bad}`, { content: 'x' });
      assert.equal(r.status, 400, bad);
      assert.equal(r.body.error.code, 'extension_not_allowed');
      assert.ok(!fs.existsSync(path.join(root, bad)));
    }
  });

  it('refuses broken YAML and notebooks, keeping the old file', async () => {
    const before = fs.readFileSync(path.join(root, 'project.yml'), 'utf8');
    const r = await s.request('PUT', '/api/files/project.yml', { content: 'name: [unclosed\n' });
    assert.equal(r.status, 400);
    assert.equal(r.body.error.code, 'invalid_yaml');
    assert.equal(fs.readFileSync(path.join(root, 'project.yml'), 'utf8'), before);
    const nb = await s.request('PUT', '/api/files/notebooks/x.dpnb', { content: '{"cells": 3}' });
    assert.equal(nb.status, 400);
    assert.equal(nb.body.error.code, 'invalid_notebook');
  });

  it('deletes a file and, with drop_object=true, the table it defines', async () => {
    await s.app.db.run('CREATE SCHEMA IF NOT EXISTS staging; CREATE TABLE staging.stg_a AS SELECT 1 AS a');
    const keep = await s.request('DELETE', '/api/files/notes/readme.md');
    assert.equal(keep.status, 200);
    assert.equal(keep.body.dropped_object, null);
    const r = await s.request('DELETE', '/api/files/transform/staging/stg_a.sql?drop_object=true');
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.dropped_object, 'staging.stg_a');
    assert.ok(!fs.existsSync(path.join(root, 'transform/staging/stg_a.sql')));
    const left = await s.app.db.all("SELECT * FROM duckdb_tables() WHERE schema_name = 'staging'");
    assert.equal(left.length, 0);
    assert.equal((await s.request('DELETE', '/api/files/transform/staging/stg_a.sql')).status, 404);
  });
});
