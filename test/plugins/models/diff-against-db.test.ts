import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DuckDBInstance } from '@duckdb/node-api';
import { makeProject, startServer, type TestServer } from '../../helpers.js';

describe('POST /api/diff with against_db (another build of the project)', () => {
  let s: TestServer;
  let root: string;
  before(async () => {
    root = makeProject({
      'transform/marts/scores.sql': '-- @config materialized=table, schema=marts, unique_key=id\nSELECT range AS id, range * 10 AS score FROM range(5)\n',
    });
    // The "base" build: ids 0-3 with score 0-30 except id 2 (99), and an id 7 this build lacks.
    const base = await DuckDBInstance.create(path.join(root, 'base.duckdb'));
    const c = await base.connect();
    await c.run('CREATE SCHEMA marts; CREATE TABLE marts.scores AS SELECT id::BIGINT AS id, score::BIGINT AS score FROM (VALUES (0, 0), (1, 10), (2, 99), (3, 30), (7, 70)) AS v(id, score)');
    c.closeSync();
    base.closeSync();
    s = await startServer(root);
    const built = await s.request('POST', '/api/transform', {});
    assert.equal(built.status, 200, built.text);
  });
  after(async () => s.close());

  it('compares each model with the same relation in the other file, row by row', async () => {
    const r = await s.request('POST', '/api/diff', { against_db: 'base.duckdb', full: true });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.against_db, 'base.duckdb');
    const d = r.body.models[0];
    assert.equal(d.model, 'marts.scores');
    assert.equal(d.compared_with, 'base.duckdb:marts.scores');
    assert.equal(d.status, 'changed');
    assert.deepEqual([d.rows_before, d.rows_after, d.added, d.removed, d.modified], [5, 5, 1, 1, 1]);
    assert.deepEqual(d.samples.added, [[4, 40]]);
    assert.deepEqual(d.samples.removed, [[7, 70]]);
    assert.deepEqual(d.samples.modified, [[2, 20]]);
    // Against its own build (no other file) the same model is unchanged: the file, not this database, was "before".
    const self = await s.request('POST', '/api/diff', {});
    assert.equal(self.body.models[0].status, 'unchanged');
  });

  it('refuses a path outside the project, a missing file and the project database itself', async () => {
    const outside = await s.request('POST', '/api/diff', { against_db: '../base.duckdb' });
    assert.equal(outside.status, 400);
    assert.equal(outside.body.error.code, 'path_outside_project');
    const missing = await s.request('POST', '/api/diff', { against_db: 'none.duckdb' });
    assert.equal(missing.status, 400);
    assert.equal(missing.body.error.code, 'base_database_not_found');
    const own = await s.request('POST', '/api/diff', { against_db: 'test.duckdb' });
    assert.equal(own.status, 400);
    assert.equal(own.body.error.code, 'base_database_is_current');
    assert.doesNotMatch(JSON.stringify([outside.body, missing.body, own.body]), new RegExp(root.replace(/[/\\]/g, '.')));
  });
});
