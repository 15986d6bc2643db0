/**
 * Deeply nested values and types never reach the engine (issue 38 point 1). Each query and
 * upload below killed the server process with SIGSEGV (or bound for minutes) before: the server
 * in this test runs in the test's own process, so a regression fails the whole file.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { jsonNestingDepth, MAX_NESTING_DEPTH } from '../../sdk/nesting.js';
import { makeProject, startServer, type TestServer } from '../helpers.js';

const DEEP = 10_000;
const deepArray = `${'['.repeat(DEEP)}1${']'.repeat(DEEP)}`;
const deepType = `${'['.repeat(DEEP)}"BIGINT"${']'.repeat(DEEP)}`;
const lit = (s: string) => `'${s.replace(/'/g, "''")}'`;

describe('nesting the engine is not trusted with', () => {
  let s: TestServer;
  before(async () => {
    s = await startServer(makeProject());
  });
  after(() => s.close());

  const query = (sql: string) => s.request('POST', '/api/query', { sql });
  const refused = async (sql: string, code: string) => {
    const r = await query(sql);
    assert.equal(r.status, 400, `${sql.slice(0, 60)}: ${r.text.slice(0, 200)}`);
    assert.equal(r.body.error.code, code, r.text.slice(0, 200));
    return r.body.error;
  };

  it('refuses the reported query: a computed JSON structure cannot be checked, so it is not run', async () => {
    await refused(`SELECT json_transform(repeat('[',${DEEP})||'1'||repeat(']',${DEEP}), repeat('[',${DEEP})||'"BIGINT"'||repeat(']',${DEEP}))`, 'json_structure_not_literal');
    await refused(`SELECT from_json('1', json_structure(${lit(deepArray)}))`, 'json_structure_not_literal');
  });

  it('refuses a literal JSON structure nested too deeply, for each function that turns one into a type', async () => {
    for (const fn of ['json_transform', 'json_transform_strict', 'from_json', 'from_json_strict']) {
      const error = await refused(`SELECT ${fn}(${lit(deepArray)}, ${lit(deepType)})`, 'nesting_too_deep');
      assert.deepEqual(error.details, { depth: DEEP, limit: MAX_NESTING_DEPTH });
    }
    const objects = `${'{"a":'.repeat(DEEP)}"INTEGER"${'}'.repeat(DEEP)}`;
    await refused(`SELECT json_transform('{}', ${lit(objects)}::JSON)`, 'nesting_too_deep');
  });

  it('refuses nested constructors and CAST types past the limit, inside macros of the query too', async () => {
    const n = MAX_NESTING_DEPTH + 1;
    await refused(`SELECT ${'['.repeat(n)}1${']'.repeat(n)}`, 'nesting_too_deep');
    await refused(`SELECT ${"{'a':".repeat(n)}1${'}'.repeat(n)}`, 'nesting_too_deep');
    await refused(`SELECT ${'list_value('.repeat(n)}1${')'.repeat(n)}`, 'nesting_too_deep');
    await refused(`SELECT CAST(NULL AS INTEGER${'[]'.repeat(n)})`, 'nesting_too_deep');
    await refused(`SELECT * FROM (SELECT 1 AS x) WHERE x IN (SELECT ${'['.repeat(n)}1${']'.repeat(n)})`, 'nesting_too_deep');
  });

  it('still runs nesting at the limit, and deeply nested JSON values with a shallow structure', async () => {
    const n = MAX_NESTING_DEPTH;
    const ok = async (sql: string) => {
      const r = await query(sql);
      assert.equal(r.status, 200, r.text.slice(0, 200));
      return r.body.rows;
    };
    assert.deepEqual(await ok(`SELECT json_transform('[[1]]', '[["INTEGER"]]') AS v`), [[[[1]]]]);
    await ok(`SELECT json_transform(${lit(`${'['.repeat(n)}1${']'.repeat(n)}`)}, ${lit(`${'['.repeat(n)}"BIGINT"${']'.repeat(n)}`)}) IS NULL`);
    await ok(`SELECT CAST(NULL AS INTEGER${'[]'.repeat(n)}) IS NULL`);
    // The value's depth is no danger when the structure is shallow: DuckDB reads it without recursing into it.
    assert.deepEqual(await ok(`SELECT json_transform(${lit(deepArray)}, '"BIGINT"') AS v`), [[null]]);
  });

  it('refuses a JSON upload nested too deeply before DuckDB reads it (preview and import, .json and .ndjson)', async () => {
    const upload = (name: string, data: string, preview: boolean) => {
      const form = new FormData();
      if (preview) form.append('preview', 'true');
      form.append('file', new Blob([data]), name);
      return fetch(`${s.url}/api/import`, { method: 'POST', body: form });
    };
    for (const [name, data] of [
      ['deep.json', deepArray],
      ['deep.ndjson', `{"a": 1}\n{"b": ${deepArray}}\n`],
    ] as const) {
      for (const preview of [true, false]) {
        const r = await upload(name, data, preview);
        const body = (await r.json()) as { error: { code: string; message: string } };
        assert.equal(r.status, 400, JSON.stringify(body).slice(0, 200));
        assert.equal(body.error.code, 'nesting_too_deep');
        assert.match(body.error.message, new RegExp(`'${name.replace('.', '\\.')}' is nested`));
      }
    }
    // Brackets inside strings are text, not nesting.
    const text = JSON.stringify([{ note: '['.repeat(DEEP) }]);
    assert.equal(jsonNestingDepth(text), 2);
    const r = await upload('notes.json', text, true);
    assert.equal(r.status, 200, await r.text());
  });

  it('the server still answers', async () => {
    assert.equal((await s.request('GET', '/api/health')).body.status, 'ok');
  });
});
