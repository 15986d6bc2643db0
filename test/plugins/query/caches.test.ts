/**
 * Issue 21: what /api/query keeps per SQL text (read-only validation, the page appended to the
 * text, masking's rewrite) and per token must never outlive what it was derived from: a write
 * to the catalog, a new masking policy, a revoked token all apply to the very next request of
 * the same text.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { makeProject, startServer, type TestServer } from '../../helpers.js';

describe('/api/query caches follow the catalog, the policies and the tokens', () => {
  let s: TestServer;
  let admin: string;
  let viewer: string;
  before(async () => {
    s = await startServer(makeProject({ 'project.yml': 'name: caches\ndatabase:\n  path: c.duckdb\n', 'data.csv': 'secret\nfrom-the-file\n' }), { auth: true });
    await s.app.auth.users.create({ username: 'root', password: 'root-pass', role: 'admin' });
    await s.app.auth.users.create({ username: 'vera', password: 'vera-pass', role: 'viewer' });
    admin = (await s.app.auth.users.issueToken('root')).token;
    viewer = (await s.app.auth.users.issueToken('vera')).token;
  });
  after(async () => {
    await s.close();
  });

  const query = (sql: string, token: string, extra: Record<string, unknown> = {}) => s.request('POST', '/api/query', { sql, ...extra }, { token });

  it('a validation kept for a table name is dropped when the table goes: the name then reads no file', async () => {
    // A table named like the project's CSV file: the query is a table read while the table exists.
    await s.app.db.run(`CREATE TABLE "data.csv" AS SELECT 'from-the-table' AS secret`);
    const sql = 'SELECT * FROM "data.csv"';
    for (let i = 0; i < 3; i++) {
      const r = await query(sql, admin);
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.body.rows, [['from-the-table']]);
    }
    await s.app.db.run(`DROP TABLE "data.csv"`);
    assert.ok(fs.existsSync(path.join(s.app.project.root, 'data.csv')));
    // Without the table DuckDB would bind the name as a replacement scan of the file.
    const refused = await query(sql, admin);
    assert.equal(refused.status, 400, refused.text);
    assert.equal(refused.body.error.code, 'read_only_violation');
    assert.equal(refused.body.error.details.kind, 'catalog');
  });

  it('a validation kept for a macro call is dropped when the macro is replaced by one that reads a file', async () => {
    await s.app.db.run('CREATE OR REPLACE MACRO answer() AS 42');
    const sql = 'SELECT answer() AS a';
    for (let i = 0; i < 3; i++) assert.deepEqual((await query(sql, viewer)).body.rows, [[42]]);
    // The engine's sandbox lets a macro read the project's own files; the validation must not.
    const file = path.join(s.app.project.root, 'data.csv').replace(/'/g, "''");
    await s.app.db.run(`CREATE OR REPLACE MACRO answer() AS (SELECT count(*) FROM read_csv('${file}'))`);
    const refused = await query(sql, viewer);
    assert.equal(refused.status, 400, refused.text);
    assert.equal(refused.body.error.code, 'read_only_violation');
    assert.match(refused.body.error.message, /macro 'answer'/);
  });

  it('a repeated query is masked from the first request after a policy is created, and unmasked after it is deleted', async () => {
    await s.app.db.run(`CREATE TABLE people AS SELECT i AS id, 'user' || i || '@example.com' AS email FROM range(5) t(i)`);
    const sql = 'SELECT id, email FROM people ORDER BY id';
    for (let i = 0; i < 3; i++) assert.equal((await query(sql, viewer)).body.rows[1][1], 'user1@example.com');
    const created = await s.request('POST', '/api/masking/policies', { schema_name: 'main', table_name: 'people', column_name: 'email', method: 'email' }, { token: admin });
    assert.equal(created.status, 201, created.text);
    for (let i = 0; i < 3; i++) assert.equal((await query(sql, viewer)).body.rows[1][1], '***@example.com');
    // The exempt admin's kept answer for the same text stays raw.
    assert.equal((await query(sql, admin)).body.rows[1][1], 'user1@example.com');
    const deleted = await s.request('DELETE', `/api/masking/policies/${created.body.id}`, undefined, { token: admin });
    assert.ok(deleted.status < 300, deleted.text);
    assert.equal((await query(sql, viewer)).body.rows[1][1], 'user1@example.com');
  });

  it('a token resolved (and kept) for earlier requests is refused on the very next request after logout', async () => {
    const { token } = await s.app.auth.users.issueToken('vera');
    for (let i = 0; i < 3; i++) assert.equal((await query('SELECT 1 AS one', token)).status, 200);
    const out = await s.request('POST', '/api/auth/logout', undefined, { token });
    assert.ok(out.status < 300, out.text);
    const after = await query('SELECT 1 AS one', token);
    assert.equal(after.status, 401, after.text);
    // Another token of the same user still works.
    assert.equal((await query('SELECT 1 AS one', viewer)).status, 200);
  });

  it('the first page asked in SQL returns the same rows, truncation and names as the next pages', async () => {
    await s.app.db.run('CREATE TABLE nums AS SELECT i AS id, i AS id_1 FROM range(25) t(i)');
    const sql = 'SELECT id, id AS id, id_1 FROM nums ORDER BY id -- trailing comment';
    const first = await query(sql, viewer, { limit: 10 });
    assert.equal(first.status, 200, first.text);
    assert.deepEqual(first.body.columns, ['id', 'id', 'id_1']);
    assert.equal(first.body.truncated, true);
    assert.deepEqual(first.body.rows.map((r: number[]) => r[0]), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    const third = await query(sql, viewer, { limit: 10, offset: 20 });
    assert.deepEqual(third.body.rows.map((r: number[]) => r[0]), [20, 21, 22, 23, 24]);
    assert.equal(third.body.truncated, false);
    // Exactly `limit` rows: not truncated (the page asks one row more than it returns).
    const exact = await query('SELECT id FROM nums WHERE id < 10 ORDER BY id', viewer, { limit: 10 });
    assert.equal(exact.body.rows.length, 10);
    assert.equal(exact.body.truncated, false);
    // A LIMIT of the query's own is kept as written (the page cannot be appended to it).
    const own = await query('SELECT id FROM nums ORDER BY id LIMIT 3', viewer, { limit: 2 });
    assert.deepEqual(own.body.rows, [[0], [1]]);
    assert.equal(own.body.truncated, true);
  });
});
