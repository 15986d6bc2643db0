/**
 * Backups through the real server and the real `dp` binary: checkpoint + copy + SHA-256 +
 * manifest, verify by re-hash and read-only open, a corrupted copy refused, paths outside
 * `_backups/` refused, cleanup, and a restore of a good backup while another client keeps
 * querying (every answer is a result or a clear 503, and the server serves the restored data).
 */
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { httpRequester } from '../../../sdk/testing.js';
import { makeProject, runCliBatch, startServer, waitUntil } from '../../helpers.js';

const sha256 = (file: string) => crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex');
const PROJECT = { 'project.yml': 'name: b\ndatabase:\n  path: b.duckdb\n' };

describe('versioning: backups', () => {
  it('backs up, verifies, refuses a corrupted copy and paths outside _backups/, cleans up', async () => {
    const root = makeProject(PROJECT);
    const s = await startServer(root);
    try {
      await s.app.db.run('CREATE TABLE t AS SELECT i FROM range(20000) r(i)');
      const r = await s.request('POST', '/api/backup', { note: 'first' });
      assert.equal(r.status, 200, r.text);
      assert.match(r.body.path, /^_backups\/b-\d{8}-\d{6}\.duckdb$/);
      assert.equal(r.body.verified, true);
      const file = path.join(root, r.body.path);
      assert.equal(r.body.sha256, sha256(file));
      assert.equal(r.body.size_bytes, fs.statSync(file).size);
      assert.ok(!Number.isNaN(Date.parse(r.body.timestamp)));
      const list = await s.request('GET', '/api/backups');
      assert.deepEqual(list.body.map((b: { path: string; note: string }) => [b.path, b.note]), [[r.body.path, 'first']]);

      const ok = await s.request('POST', '/api/backup/verify', { path: r.body.path });
      assert.equal(ok.status, 200, ok.text);
      assert.equal(ok.body.valid, true);
      assert.equal(ok.body.opens, true);
      assert.ok(ok.body.tables >= 1);

      // One byte changed in the middle of the copy.
      const bytes = fs.readFileSync(file);
      bytes[Math.floor(bytes.length / 2)] ^= 0xff;
      fs.writeFileSync(file, bytes);
      const bad = await s.request('POST', '/api/backup/verify', { path: r.body.path });
      assert.equal(bad.status, 200);
      assert.equal(bad.body.valid, false);
      assert.equal(bad.body.checksum_ok, false);
      await s.app.db.run('INSERT INTO t VALUES (-1)');
      const refused = await s.request('POST', '/api/backup/restore', { path: r.body.path });
      assert.equal(refused.status, 409, refused.text);
      assert.equal(refused.body.error.code, 'backup_verify_failed');
      assert.equal(Number(await s.app.db.value('SELECT count(*) FROM t')), 20001, 'the database was not replaced');
      assert.equal((await s.request('GET', '/api/backups')).body.length, 1, 'no pre-restore backup was made');

      // A copy whose checksum is right but that DuckDB cannot open is refused too.
      const junk = await s.request('POST', '/api/backup', { no_verify: true });
      assert.equal(junk.body.verified, null);
      const junkFile = path.join(root, junk.body.path);
      fs.writeFileSync(junkFile, 'not a database');
      // The checksum dp trusts is its record in _service (manifest.json is only a mirror).
      await s.app.db.run('UPDATE _service.backup_history SET sha256 = $1 WHERE path = $2', [sha256(junkFile), junk.body.path]);
      const unreadable = await s.request('POST', '/api/backup/verify', { path: junk.body.path });
      assert.equal(unreadable.body.checksum_ok, true);
      assert.equal(unreadable.body.opens, false);
      assert.equal(unreadable.body.valid, false);
      assert.ok(!unreadable.text.includes(root), 'no absolute path in the answer');

      for (const p of ['../b.duckdb', 'b.duckdb', '/etc/passwd', '_backups/../b.duckdb', path.join(root, 'b.duckdb'), '_backups/manifest.json']) {
        for (const url of ['/api/backup/verify', '/api/backup/restore']) {
          const x = await s.request('POST', url, { path: p });
          assert.equal(x.status, 400, `${url} ${p}: ${x.text}`);
          assert.equal(x.body.error.code, 'backup_path_outside');
        }
      }
      const unknown = await s.request('POST', '/api/backup/verify', { path: '_backups/none.duckdb' });
      assert.equal(unknown.status, 404);
      assert.equal(unknown.body.error.code, 'backup_not_found');
      for (const body of [{ keep: 0 }, { keep: -2 }]) {
        assert.equal((await s.request('POST', '/api/backup/cleanup', body)).status, 400);
        assert.equal((await s.request('POST', '/api/backup', body)).status, 400);
      }
      assert.equal((await s.request('GET', '/api/backups')).body.length, 2, 'bad input changed nothing');

      const third = await s.request('POST', '/api/backup', { keep: 2 });
      assert.equal(third.status, 200, third.text);
      const left = (await s.request('GET', '/api/backups')).body.map((b: { path: string }) => b.path);
      assert.deepEqual(left, [third.body.path, junk.body.path]);
      assert.ok(!fs.existsSync(file), 'the oldest backup file was deleted');
      const cleaned = await s.request('POST', '/api/backup/cleanup', { keep: 1 });
      assert.deepEqual(cleaned.body, { deleted: [junk.body.path], kept: 1, kept_backups: [third.body.path] });
    } finally {
      await s.close();
    }
  });

  it('restores a good backup while another client keeps querying: each answer is a result or a clear 503, then the restored data is served', async () => {
    const root = makeProject(PROJECT);
    const s = await startServer(root);
    try {
      await s.app.db.run('CREATE TABLE t AS SELECT i FROM range(100000) r(i)');
      const backup = (await s.request('POST', '/api/backup', {})).body;
      await s.app.db.run('INSERT INTO t SELECT i FROM range(5000) r(i); CREATE TABLE later AS SELECT 1 AS x');
      // The other client: its own requester, querying in a loop until told to stop.
      const other = httpRequester(s.url);
      const answers: Array<{ status: number; code?: string; count?: number }> = [];
      let stop = false;
      const loop = (async () => {
        while (!stop) {
          const q = await other('POST', '/api/query', { sql: 'SELECT count(*) AS n, sum(i) AS s FROM t' });
          answers.push({ status: q.status, code: q.body?.error?.code, count: q.status === 200 ? Number(q.body.rows[0][0]) : undefined });
        }
      })();
      await waitUntil(() => answers.length >= 5, 'five answers before the restore');
      const restored = await s.request('POST', '/api/backup/restore', { path: backup.path });
      const afterRestore = answers.length;
      await waitUntil(() => answers.length >= afterRestore + 5, 'five answers after the restore');
      stop = true;
      await loop;

      assert.equal(restored.status, 200, restored.text);
      assert.equal(restored.body.restored, backup.path);
      assert.match(restored.body.replaced_backup.path, /^_backups\/b-pre-restore-\d{8}-\d{6}\.duckdb$/);
      for (const a of answers) {
        assert.ok(a.status === 200 || (a.status === 503 && a.code === 'maintenance'), `an answer was ${a.status} ${a.code ?? ''}`);
      }
      assert.ok(answers.some((a) => a.count === 105000), 'answers before the restore saw the newer data');
      assert.equal(answers[answers.length - 1].count, 100000, 'answers after the restore see the backup');
      assert.equal(Number(await s.app.db.value('SELECT count(*) FROM t')), 100000);
      assert.equal(Number(await s.app.db.value("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'later'")), 0);
      // The replaced file is a backup of its own, listed and valid: the restore can be undone.
      const list = (await s.request('GET', '/api/backups')).body;
      assert.equal(list[0].path, restored.body.replaced_backup.path);
      assert.equal(list[0].kind, 'pre-restore');
      const check = await s.request('POST', '/api/backup/verify', { path: list[0].path });
      assert.equal(check.body.valid, true, check.text);
      const undo = await s.request('POST', '/api/backup/restore', { path: list[0].path });
      assert.equal(undo.status, 200, undo.text);
      assert.equal(Number(await s.app.db.value('SELECT count(*) FROM t')), 105000);
    } finally {
      await s.close();
    }
  });

  it('dp backup, dp backups, dp backup-verify and dp backup-restore through the real binary', async () => {
    const root = makeProject({ ...PROJECT, 'transform/m/t.sql': 'SELECT i FROM range(10) r(i)\n' });
    const run = (...args: string[]) => ({ args: [...args, '--project', root] });
    // The binary's entry, a few commands per process (runCliBatch).
    const [built, made, unverifiedRun, listed] = await runCliBatch([run('transform'), run('backup', '--note', 'cli', '--json'), run('backup', '--no-verify', '--json'), run('backups', '--json')]);
    assert.equal(built.code, 0, built.stderr);
    assert.equal(made.code, 0, made.stderr);
    const b = JSON.parse(made.stdout);
    assert.equal(b.verified, true);
    assert.match(made.stderr, /checkpoint/);
    const unverified = JSON.parse(unverifiedRun.stdout);
    assert.equal(unverified.verified, null);
    assert.equal(JSON.parse(listed.stdout).length, 2);
    fs.writeFileSync(path.join(root, 'transform/m/t.sql'), 'SELECT i FROM range(3) r(i)\n');
    const [verified, rebuilt, restored, countedRun, outside] = await runCliBatch([
      run('backup-verify', b.path),
      run('transform'),
      run('backup-restore', b.path),
      run('query', 'SELECT count(*) AS n FROM m.t', '--json'),
      run('backup-restore', '../b.duckdb'),
    ]);
    assert.equal(verified.code, 0, verified.stderr);
    assert.equal(rebuilt.code, 0, rebuilt.stderr);
    assert.equal(restored.code, 0, restored.stderr);
    assert.match(restored.stdout, /replaced database is kept as _backups\//);
    const counted = JSON.parse(countedRun.stdout);
    assert.deepEqual(counted.rows, [[10]], 'the table is back to the backup (10 rows, not 3)');
    assert.equal(outside.code, 1);
    assert.match(outside.stderr, /outside _backups/);
  });
});
