/**
 * Issue 10 point 14: non-finite DOUBLE/FLOAT values serialize as the strings "Infinity",
 * "-Infinity" and "NaN", in JSON and CSV alike, also inside LIST, STRUCT and MAP values.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { closeInProcessClis, makeProject, runInProcess, startServer, type TestServer } from '../../helpers.js';

const SQL =
  "SELECT 1e999 AS inf, -1e999 AS neg, 'nan'::DOUBLE AS nan, 'inf'::FLOAT AS f, [1e999, 1.5] AS l, {'x': -1e999} AS s, MAP {'k': 'nan'::DOUBLE} AS m";

describe('non-finite numbers', () => {
  let s: TestServer;
  before(async () => {
    s = await startServer(makeProject({ 'project.yml': 'name: nf\ndatabase:\n  path: nf.duckdb\n' }));
  });
  after(async () => s.close());
  after(closeInProcessClis);

  it('answer as "Infinity", "-Infinity" and "NaN" in /api/query, nested values too', async () => {
    const r = await s.request('POST', '/api/query', { sql: SQL });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.rows, [['Infinity', '-Infinity', 'NaN', 'Infinity', ['Infinity', 1.5], { x: '-Infinity' }, [{ key: 'k', value: 'NaN' }]]]);
    assert.deepEqual(r.body.column_types.slice(0, 4), ['DOUBLE', 'DOUBLE', 'DOUBLE', 'FLOAT']);
    const plain = await s.request('POST', '/api/query', { sql: 'SELECT 1e999' });
    assert.equal(plain.status, 200, plain.text);
    const filtered = await s.request('POST', '/api/query', { sql: 'SELECT x FROM (VALUES (1.0), (2.0)) v(x) WHERE x < 1e999 ORDER BY x', limit: 1, offset: 1 });
    assert.deepEqual(filtered.body.rows, [[2]]);
  });

  it('export the same words to CSV', async () => {
    const r = await s.request('POST', '/api/query/export-csv', { sql: SQL });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.text, 'inf,neg,nan,f,l,s,m\r\nInfinity,-Infinity,NaN,Infinity,"[""Infinity"",1.5]","{""x"":""-Infinity""}","[{""key"":""k"",""value"":""NaN""}]"\r\n');
  });

  it('explain a query with a non-finite constant', async () => {
    const r = await s.request('POST', '/api/query/explain', { sql: 'SELECT 1e999 AS x' });
    assert.equal(r.status, 200, r.text);
  });

  it('print from dp query --json and --csv', async () => {
    // A project of its own: the server above holds its database file.
    const cli = makeProject({ 'project.yml': 'name: nfcli\ndatabase:\n  path: c.duckdb\n' });
    const json = await runInProcess(['query', 'SELECT 1e999 AS x, -1e999 AS y', '--json', '--project', cli]);
    assert.equal(json.code, 0, json.stderr);
    assert.deepEqual(JSON.parse(json.stdout).rows, [['Infinity', '-Infinity']]);
    const csv = await runInProcess(['query', 'SELECT 1e999 AS x, -1e999 AS y', '--csv', '--project', cli]);
    assert.equal(csv.code, 0, csv.stderr);
    assert.equal(csv.stdout, 'x,y\r\nInfinity,-Infinity\r\n');
  });
});
