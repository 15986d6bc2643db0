import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { makeProject, startServer, type TestServer } from '../../helpers.js';

/** Every statement kind the read-only validator must refuse, each with a reason to exist. */
const REFUSED: Array<[string, string]> = [
  ['insert', 'INSERT INTO t VALUES (1)'],
  ['update', "UPDATE t SET a = 2"],
  ['delete', 'DELETE FROM t'],
  ['create table', 'CREATE TABLE x (a INT)'],
  ['create table as', 'CREATE TABLE x AS SELECT 1'],
  ['create view', 'CREATE VIEW v AS SELECT 1'],
  ['drop', 'DROP TABLE t'],
  ['alter', 'ALTER TABLE t ADD COLUMN b INT'],
  ['truncate', 'TRUNCATE t'],
  ['copy to', "COPY t TO '/tmp/dp-leak.csv'"],
  ['copy from', "COPY t FROM '/etc/hosts'"],
  ['attach', "ATTACH '/tmp/other.duckdb' AS other"],
  ['detach', 'DETACH other'],
  ['install', 'INSTALL httpfs'],
  ['load', 'LOAD json'],
  ['pragma', 'PRAGMA database_list'],
  ['set', "SET threads = 1"],
  ['reset', 'RESET threads'],
  ['call', 'CALL pragma_version()'],
  ['export database', "EXPORT DATABASE '/tmp/dp-export'"],
  ['import database', "IMPORT DATABASE '/tmp/dp-export'"],
  ['checkpoint', 'CHECKPOINT'],
  ['vacuum', 'VACUUM'],
  ['begin', 'BEGIN TRANSACTION'],
  ['create secret', "CREATE SECRET s (TYPE s3, KEY_ID 'a', SECRET 'b')"],
  ['explain analyze', 'EXPLAIN ANALYZE SELECT 1'],
  ['two statements', 'SELECT 1; DROP TABLE t'],
  ['read_csv', "SELECT * FROM read_csv('/etc/passwd')"],
  ['read_csv_auto', "SELECT * FROM read_csv_auto('/etc/passwd')"],
  ['read_parquet', "SELECT * FROM read_parquet('/tmp/x.parquet')"],
  ['parquet_scan', "SELECT * FROM parquet_scan('/tmp/x.parquet')"],
  ['read_json', "SELECT * FROM read_json('/tmp/x.json')"],
  ['read_json_auto', "SELECT * FROM read_json_auto('/tmp/x.json')"],
  ['read_ndjson', "SELECT * FROM read_ndjson_objects('/tmp/x.json')"],
  ['read_text', "SELECT * FROM read_text('/etc/hostname')"],
  ['read_blob', "SELECT * FROM read_blob('/etc/hostname')"],
  ['glob', "SELECT * FROM glob('/etc/*')"],
  ['query()', "SELECT * FROM query('SELECT 1')"],
  ['query_table()', "SELECT * FROM query_table('t')"],
  ['replacement scan', "SELECT * FROM '/etc/passwd'"],
  ['replacement scan csv', "SELECT * FROM 'data.csv'"],
  ['file in subquery', "SELECT (SELECT count(*) FROM read_text('/etc/hostname')) AS n"],
  ['file in cte', "WITH f AS (SELECT * FROM read_csv('/etc/passwd')) SELECT * FROM f"],
  ['file in join', "SELECT * FROM t JOIN read_csv('/etc/passwd') ON true"],
  ['nextval', "SELECT nextval('seq')"],
  ['duckdb_secrets', 'SELECT * FROM duckdb_secrets()'],
  ['credential table', 'SELECT * FROM _service.users'],
  // Macros a writer defined expand after validation: their bodies are checked too.
  ['macro reading a file', 'SELECT rd()'],
  ['qualified macro through another macro', 'SELECT s.outer1() + 1'],
  ['macro in a WHERE clause', 'SELECT a FROM t WHERE a < rd()'],
  ['macro calling nextval', 'SELECT nx()'],
  ['macro reading credentials', 'SELECT creds()'],
];

describe('read-only validation of /api/query', () => {
  let s: TestServer;
  before(async () => {
    s = await startServer(makeProject());
    await s.app.db.run(`CREATE TABLE t AS SELECT 1 AS a; CREATE SEQUENCE seq; CREATE SCHEMA s;
      CREATE MACRO rd() AS (SELECT count(*) FROM read_csv('${s.app.project.root}/project.yml', columns = {'line': 'VARCHAR'}, delim = '\x01'));
      CREATE MACRO s.outer1() AS rd() * 2;
      CREATE MACRO nx() AS nextval('seq');
      CREATE TABLE IF NOT EXISTS _service.users (username VARCHAR); -- as earlier versions kept it in every database
      CREATE MACRO creds() AS (SELECT count(*) FROM _service.users);
      CREATE MACRO add1(x) AS x + 1;
      CREATE MACRO loop_a(x) AS CASE WHEN x > 0 THEN add1(x) ELSE 0 END;`);
  });
  after(async () => s.close());

  for (const [name, sql] of REFUSED) {
    it(`refuses ${name}`, async () => {
      const r = await s.request('POST', '/api/query', { sql });
      assert.ok([400, 403].includes(r.status), `${sql} → ${r.status} ${r.text}`);
      assert.ok(['read_only_violation', 'internal_table'].includes(r.body.error.code), r.text);
      assert.equal(typeof r.body.error.message, 'string');
    });
  }

  it('leaves the database untouched after the refusals', async () => {
    const r = await s.request('POST', '/api/query', { sql: 'SELECT a FROM t' });
    assert.deepEqual(r.body.rows, [[1]]);
    const tables = await s.app.db.all("SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main' ORDER BY 1");
    assert.deepEqual(tables, [{ table_name: 't' }]);
  });

  it('allows catalog and generator table functions and SHOW/DESCRIBE', async () => {
    for (const sql of ['SELECT * FROM range(3)', 'SELECT count(*) FROM duckdb_tables()', 'DESCRIBE t', 'SHOW TABLES', 'SUMMARIZE t', 'SELECT * FROM generate_series(1, 2)']) {
      const r = await s.request('POST', '/api/query', { sql });
      assert.equal(r.status, 200, `${sql}: ${r.text}`);
    }
  });

  it('allows macros whose bodies are read-only, and names the macro when one is not', async () => {
    const ok = await s.request('POST', '/api/query', { sql: 'SELECT add1(a) AS b, loop_a(2) AS c FROM t' });
    assert.equal(ok.status, 200, ok.text);
    assert.deepEqual(ok.body.rows, [[2, 3]]);
    const bad = await s.request('POST', '/api/query', { sql: 'SELECT s.outer1()' });
    assert.equal(bad.body.error.code, 'read_only_violation');
    assert.match(bad.body.error.message, /macro 's\.outer1'/);
    assert.match(bad.body.error.message, /read_csv/);
  });

  it('reports syntax errors as 400 sql_error', async () => {
    const r = await s.request('POST', '/api/query', { sql: 'SELEC 1' });
    assert.equal(r.status, 400);
    assert.equal(r.body.error.code, 'sql_error');
  });
});
