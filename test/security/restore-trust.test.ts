/**
 * A restore trusts nothing it finds on disk (issue 38.2): a version folder dropped into
 * `_snapshots/` (git, a copied project, a script) is neither listed nor restored, a manifest's SQL
 * never runs (tables are rebuilt from the columns dp recorded in `_service`), a Parquet file whose
 * bytes differ from the recorded SHA-256 is refused, a file dropped into `_backups/` and named in a
 * hand-edited manifest is not a backup, and verifying a backup opens it inside the engine's sandbox.
 */
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DuckDBInstance } from '@duckdb/node-api';
import { makeProject, startServer, tempDir, type TestServer } from '../helpers.js';

const SECRET = 'DP_MASKING_KEY=k-0123456789abcdef0123456789abcdef';

async function writeDatabase(file: string, sql: string): Promise<void> {
  const inst = await DuckDBInstance.create(file);
  const conn = await inst.connect();
  await conn.run(sql);
  conn.closeSync();
  inst.closeSync();
}

async function writeParquet(file: string, select: string): Promise<void> {
  const inst = await DuckDBInstance.create(':memory:');
  const conn = await inst.connect();
  await conn.run(`COPY (${select}) TO '${file}' (FORMAT parquet)`);
  conn.closeSync();
  inst.closeSync();
}

describe('a restore trusts nothing it reads on disk', () => {
  let root: string;
  let s: TestServer;
  const tables = async () => (await s.app.db.all<{ t: string }>("SELECT schema_name || '.' || table_name AS t FROM duckdb_tables() WHERE schema_name NOT IN ('_service', '_masking') ORDER BY 1")).map((r) => r.t);

  before(async () => {
    root = makeProject({ 'project.yml': 'name: trust\ndatabase:\n  path: t.duckdb\n', '.env': `${SECRET}\n` });
    // The planted version is there before the server starts, as a cloned project would bring it.
    const planted = path.join(root, '_snapshots', 'v99-20300101-000000');
    fs.mkdirSync(planted, { recursive: true });
    await writeParquet(path.join(planted, 'main.leak.parquet'), 'SELECT 1 AS x');
    fs.writeFileSync(
      path.join(planted, '_manifest.json'),
      JSON.stringify({
        format: 1,
        version_id: 'v99-20300101-000000',
        number: 99,
        created_at: '2030-01-01T00:00:00.000Z',
        description: 'planted',
        trigger: 'manual',
        total_rows: 1,
        size_bytes: 1,
        tables: [
          {
            table: 'main.leak',
            schema: 'main',
            name: 'leak',
            file: 'main.leak.parquet',
            row_count: 1,
            columns: [{ name: 'x', type: 'INTEGER' }],
            key: [],
            ddl: "CREATE TABLE main.leak AS SELECT content AS x FROM read_text('.env')",
            bytes: 1,
          },
        ],
      }),
    );
    s = await startServer(root);
    await s.app.db.run("CREATE SCHEMA shop; CREATE TABLE shop.items AS SELECT i AS id, 'item ' || i AS label FROM range(50) r(i)");
  });

  after(async () => {
    await s?.close();
  });

  it('a version folder dp did not record is not listed and cannot be restored', async () => {
    const listed = (await s.request('GET', '/api/versions')).body.map((v: { version_id: string }) => v.version_id);
    assert.ok(!listed.includes('v99-20300101-000000'), `the planted version is listed: ${listed.join(', ')}`);
    const restore = await s.request('POST', '/api/versions/v99-20300101-000000/restore', {});
    assert.equal(restore.status, 404, restore.text);
    assert.equal(restore.body.error.code, 'version_not_found');
    assert.ok(!(await tables()).includes('main.leak'), 'no table was made from the planted manifest');
  });

  it("a restore rebuilds a table from dp's recorded columns, never from SQL in the manifest on disk", async () => {
    const v = (await s.request('POST', '/api/versions', {})).body.version_id as string;
    const manifestFile = path.join(root, '_snapshots', v, '_manifest.json');
    const manifest = JSON.parse(fs.readFileSync(manifestFile, 'utf8'));
    for (const t of manifest.tables) {
      t.ddl = `CREATE TABLE ${t.schema}.${t.name} AS SELECT content AS id, 'x' AS label FROM read_text('.env')`;
      t.columns = [{ name: 'id', type: 'VARCHAR' }];
    }
    fs.writeFileSync(manifestFile, JSON.stringify(manifest));
    await s.app.db.run('DROP TABLE shop.items');
    const restore = await s.request('POST', `/api/versions/${v}/restore`, {});
    assert.equal(restore.status, 200, restore.text);
    assert.equal(restore.body.status, 'success', restore.text);
    const rows = await s.app.db.all<{ id: unknown; label: string }>('SELECT id, label FROM shop.items ORDER BY id');
    assert.equal(rows.length, 50);
    assert.equal(Number(rows[0].id), 0, 'the id column is the recorded BIGINT, not the manifest VARCHAR');
    const found = await s.request('POST', '/api/query', { sql: "SELECT count(*) FROM shop.items WHERE label LIKE '%DP_MASKING_KEY%' OR id::VARCHAR LIKE '%DP_MASKING_KEY%'" });
    assert.equal(Number(found.body.rows[0][0]), 0, 'no .env content reached a table');
  });

  it('a Parquet file whose bytes differ from the recorded SHA-256 is refused', async () => {
    const v = (await s.request('POST', '/api/versions', {})).body.version_id as string;
    const file = path.join(root, '_snapshots', v, 'shop.items.parquet');
    fs.rmSync(file);
    await writeParquet(file, "SELECT 1::BIGINT AS id, 'swapped' AS label");
    const restore = await s.request('POST', `/api/versions/${v}/restore`, {});
    assert.equal(restore.status, 409, restore.text);
    assert.equal(restore.body.error.code, 'version_not_trusted');
    assert.ok(!restore.text.includes(root), 'no machine path in the answer');
    const diff = await s.request('GET', `/api/versions/${v}/diff`);
    assert.equal(diff.status, 409, diff.text);
    assert.equal(Number(await s.app.db.value("SELECT count(*) FROM shop.items WHERE label = 'swapped'")), 0);
  });

  it('a file dropped into _backups/ and named in a hand-edited manifest is no backup: neither verified nor restored', async () => {
    const made = await s.request('POST', '/api/backup', {});
    assert.equal(made.status, 200, made.text);
    const foreign = path.join(root, '_backups', 'foreign.duckdb');
    await writeDatabase(foreign, "CREATE TABLE stolen AS SELECT 'x' AS v");
    const sha256 = crypto.createHash('sha256').update(fs.readFileSync(foreign)).digest('hex');
    const manifestFile = path.join(root, '_backups', 'manifest.json');
    const manifest = JSON.parse(fs.readFileSync(manifestFile, 'utf8'));
    manifest.backups.push({ path: '_backups/foreign.duckdb', size_bytes: fs.statSync(foreign).size, sha256, timestamp: '2099-01-01T00:00:00.000Z', note: null, kind: 'manual' });
    fs.writeFileSync(manifestFile, JSON.stringify(manifest));
    for (const url of ['/api/backup/verify', '/api/backup/restore']) {
      const r = await s.request('POST', url, { path: '_backups/foreign.duckdb' });
      assert.equal(r.status, 404, `${url}: ${r.text}`);
      assert.equal(r.body.error.code, 'backup_not_found');
    }
    const listed = (await s.request('GET', '/api/backups')).body.map((b: { path: string }) => b.path);
    assert.deepEqual(listed, [made.body.path]);
    assert.ok(!(await tables()).includes('main.stolen'));
  });

  it('verifying a backup opens it inside the engine sandbox: a database file outside the project is refused', async () => {
    const outsideDir = tempDir('dp-outside-');
    try {
      const outside = path.join(outsideDir, 'other.duckdb');
      await writeDatabase(outside, 'CREATE TABLE t AS SELECT 1 AS x');
      await assert.rejects(s.app.db.inspectFile(outside), (e: { code?: string; message: string }) => {
        assert.equal(e.code, 'database_file_unreadable');
        assert.ok(!e.message.includes(outsideDir), 'no machine path in the message');
        return true;
      });
      // Inside the project it opens.
      const inside = path.join(root, '_backups', 'inside-check.duckdb');
      await writeDatabase(inside, 'CREATE TABLE t AS SELECT 1 AS x');
      assert.equal((await s.app.db.inspectFile(inside)).tables.length, 1);
    } finally {
      fs.rmSync(outsideDir, { recursive: true, force: true });
    }
  });
});
