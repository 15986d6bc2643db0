/**
 * Files read through SQL (issue 10 points 1 and 7): every variant of a replacement scan or a
 * file function, for every role, is refused, and the engine's own sandbox refuses file access
 * even for SQL that no validator saw.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { makeProject, startServer, type TestServer } from '../helpers.js';

const SECRET = 'hunter2-dotenv-secret';
const ROLES = ['viewer', 'editor', 'admin'] as const;

describe('files through user SQL', () => {
  let s: TestServer;
  let root: string;
  const tokens: Record<string, string> = {};

  before(async () => {
    root = makeProject({ '.env': `API_KEY=${SECRET}\n`, 'seeds/people.csv': `id,name\n1,${SECRET}\n`, 'notes.txt': `${SECRET}\n` });
    s = await startServer(root, { auth: true });
    tokens.admin = (await s.request('POST', '/api/auth/setup', { username: 'root', password: 'secret1' })).body.token;
    for (const role of ['viewer', 'editor'] as const) {
      await s.request('POST', '/api/users', { username: role, password: 'secret1', role }, { token: tokens.admin });
      tokens[role] = (await s.request('POST', '/api/auth/login', { username: role, password: 'secret1' })).body.token;
    }
    await s.app.db.run('CREATE TABLE people AS SELECT 1 AS id');
  });
  after(async () => s.close());

  // Paths are absolute (the server's working directory is not the project) and relative.
  const variants = (): Array<[string, string]> => {
    const env = `${root}/.en[.csv?v]`;
    return [
      ['the reported replacement scan', `SELECT * FROM '.en[.csv?v]'`],
      ['replacement scan, absolute glob', `SELECT * FROM '${env}'`],
      ['replacement scan, double-quoted', `SELECT * FROM "${env}"`],
      ['replacement scan, FROM first', `FROM '${env}'`],
      ['replacement scan, schema-qualified', `SELECT * FROM main."${env}"`],
      ['replacement scan, catalog-qualified', `SELECT * FROM test.main."${env}"`],
      ['replacement scan, json glob', `SELECT * FROM '${root}/.en[.json?v]'`],
      ['replacement scan, parquet glob', `SELECT * FROM '${root}/.en[.parquet?v]'`],
      ['replacement scan, tsv glob', `SELECT * FROM '${root}/.en[.tsv?v]'`],
      ['replacement scan of a plain seed', `SELECT * FROM '${root}/seeds/people.csv'`],
      ['replacement scan with alias and column names', `SELECT * FROM '${env}' AS t(a)`],
      ['replacement scan in a scalar subquery', `SELECT (SELECT string_agg(column0, ',') FROM '${env}')`],
      ['replacement scan in EXISTS', `SELECT 1 WHERE EXISTS (SELECT * FROM '${env}')`],
      ['replacement scan in a UNION', `SELECT 'x' UNION ALL SELECT * FROM '${env}'`],
      ['replacement scan in a join', `SELECT * FROM people JOIN '${env}' ON true`],
      ['replacement scan under a lateral subquery', `SELECT * FROM people, LATERAL (SELECT * FROM '${env}')`],
      ['replacement scan in a CTE', `WITH x AS (SELECT * FROM '${env}') SELECT * FROM x`],
      ['CTE reading itself (not recursive: the inner name is a file)', `WITH "${env}" AS (SELECT * FROM "${env}") SELECT * FROM "${env}"`],
      ['CTE reading a later CTE of the same name', `WITH x AS (SELECT * FROM "${env}"), "${env}" AS (SELECT 1) SELECT * FROM x`],
      ['CTE out of scope', `SELECT * FROM (WITH "${env}" AS (SELECT 1) SELECT 1), "${env}"`],
      ['DESCRIBE a file', `DESCRIBE "${env}"`],
      ['SUMMARIZE a file', `SUMMARIZE "${env}"`],
      ['replacement scan of the database file', `SELECT * FROM '${root}/test.duckdb'`],
      ['replacement scan with a double quote in the name', `SELECT * FROM "${root}/.en[.csv?v]"".csv"`],
      ['replacement scan in a schema with a double quote', `SELECT * FROM "Odd ""S"""."${env}"`],
      ['read_text', `SELECT * FROM read_text('${root}/.env')`],
      ['read_csv of .env', `SELECT * FROM read_csv('${root}/.env')`],
      ['read_blob of the database', `SELECT * FROM read_blob('${root}/test.duckdb')`],
      ['read_text of the host', `SELECT * FROM read_text('/etc/passwd')`],
      ['glob', `SELECT * FROM glob('${root}/*')`],
      ['query_table of a file', `SELECT * FROM query_table('${env}')`],
      ['query() of a file read', `SELECT * FROM query('SELECT * FROM read_text(''/etc/passwd'')')`],
      ['sniff_csv', `SELECT * FROM sniff_csv('${root}/.env')`],
      ['parquet_metadata', `SELECT * FROM parquet_metadata('${root}/.env')`],
    ];
  };

  it('refuses every variant for every role, and no answer shows the file', async () => {
    for (const [name, sql] of variants()) {
      for (const role of ROLES) {
        const r = await s.request('POST', '/api/query', { sql }, { token: tokens[role] });
        assert.ok([400, 403].includes(r.status), `${role}, ${name}: ${sql} → ${r.status} ${r.text}`);
        assert.ok(r.body?.error?.code, `${role}, ${name}: dp's error shape`);
        assert.ok(!r.text.includes(SECRET), `${role}, ${name}: leaked the file`);
      }
    }
  });

  it('still answers tables, views, CTEs and recursive CTEs whose names look like files', async () => {
    await s.app.db.run(`CREATE TABLE "data.csv" AS SELECT 42 AS v; CREATE VIEW "v.parquet" AS SELECT 7 AS v;
      CREATE SCHEMA "Odd ""S"""; CREATE TABLE "Odd ""S"""."t ü" AS SELECT 3 AS v`);
    const ok: Array<[string, unknown]> = [
      [`SELECT v FROM 'data.csv'`, [[42]]],
      [`SELECT v FROM main."data.csv"`, [[42]]],
      [`SELECT v FROM "V.PARQUET"`, [[7]]],
      [`WITH "x.csv" AS (SELECT 5 AS v) SELECT v FROM "x.csv"`, [[5]]],
      [`WITH "X.CSV" AS (SELECT 5 AS v) SELECT (SELECT v FROM "x.csv")`, [[5]]],
      [`WITH RECURSIVE "r.csv"(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM "r.csv" WHERE n < 3) SELECT count(*) FROM "r.csv"`, [[3]]],
      [`SELECT v FROM "Odd ""S"""."t ü"`, [[3]]],
      [`SELECT count(*) > 0 FROM information_schema.tables`, [[true]]],
      [`SELECT count(*) >= 0 FROM duckdb_tables`, [[true]]],
      [`DESCRIBE people`, undefined],
    ];
    for (const [sql, rows] of ok) {
      const r = await s.request('POST', '/api/query', { sql }, { token: tokens.viewer });
      assert.equal(r.status, 200, `${sql}: ${r.text}`);
      if (rows !== undefined) assert.deepEqual(r.body.rows, rows, sql);
    }
  });

  it('answers a missing table as a missing table, and a missing file-like name as a catalog error', async () => {
    const r = await s.request('POST', '/api/query', { sql: 'SELECT * FROM no_such_table' }, { token: tokens.viewer });
    assert.equal(r.status, 404, r.text);
    assert.equal(r.body.error.code, 'table_not_found');
    assert.equal(r.body.error.details.table, 'no_such_table');
    const file = await s.request('POST', '/api/query', { sql: 'SELECT * FROM "people.csv"' }, { token: tokens.viewer });
    assert.equal(file.status, 400);
    assert.equal(file.body.error.code, 'read_only_violation');
    assert.equal(file.body.error.details.kind, 'catalog');
    assert.match(file.body.error.message, /not a table or view/);
  });
});

describe('the engine sandbox (SQL that no validator saw)', () => {
  let s: TestServer;
  let root = '';
  before(async () => {
    root = makeProject({ '.env': `API_KEY=${SECRET}\n`, 'seeds/people.csv': 'id,name\n1,ann\n' });
    s = await startServer(root);
  });
  after(async () => s.close());

  const refused: Array<[string, string]> = [
    ['read_text of the host', `SELECT * FROM read_text('/etc/passwd')`],
    ['read_csv of the host', `SELECT * FROM read_csv('/etc/passwd')`],
    ['replacement scan of the host', `SELECT * FROM '/etc/passw[d.csv?]'`],
    ['a path escaping the project with ..', `SELECT * FROM read_text('${root}/../../etc/passwd')`],
    ['a sibling folder with the project as prefix', `SELECT * FROM read_text('${root}x/file')`],
    ['glob of the host', `SELECT * FROM glob('/etc/*')`],
    ['COPY out of the project', `COPY (SELECT 1) TO '/tmp/dp-sandbox-escape.csv'`],
    ['ATTACH outside the project', `ATTACH '/tmp/dp-sandbox-escape.duckdb' AS esc`],
  ];
  for (const [name, sql] of refused) {
    it(`refuses ${name} on the engine itself, answered 400`, async () => {
      await assert.rejects(s.app.db.all(sql), (e: { status?: number; code?: string; message?: string }) => {
        assert.equal(e.status, 400, String(e.message));
        assert.ok(!String(e.message).includes('/etc/passwd'), 'no path in the message');
        return true;
      });
    });
  }

  it('cannot be switched off or widened: the configuration is locked', async () => {
    for (const sql of ['SET enable_external_access = true', 'RESET enable_external_access', "SET allowed_directories = ['/']", 'SET lock_configuration = false', "SET memory_limit = '100TB'"]) {
      await assert.rejects(s.app.db.run(sql), /locked|Cannot change/, sql);
    }
    assert.equal(await s.app.db.value("SELECT current_setting('enable_external_access')"), false);
  });

  it('keeps what the server needs: seeds inside the project, COPY inside the project, spilling to disk', async () => {
    assert.deepEqual(await s.app.db.all(`SELECT name FROM read_csv('${root}/seeds/people.csv')`), [{ name: 'ann' }]);
    await s.app.db.run(`COPY (SELECT 1 AS a) TO '${root}/export.csv'`);
    assert.equal(Number(await s.app.db.value(`SELECT count(*) FROM read_csv('${root}/export.csv')`)), 1);
  });

});
