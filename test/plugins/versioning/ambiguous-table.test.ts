/**
 * A bare table name held by two schemas (issue 33 point 16): the version timeline answers 400
 * ambiguous_table with both candidates instead of an empty timeline; a qualified or unique bare
 * name still works.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { makeProject, startServer, type TestServer } from '../../helpers.js';

describe('the version timeline of a bare name', () => {
  let s: TestServer;
  before(async () => {
    s = await startServer(makeProject());
    await s.app.db.run('CREATE SCHEMA a; CREATE SCHEMA b; CREATE TABLE a.orders AS SELECT 1 AS id; CREATE TABLE b.orders AS SELECT 2 AS id; CREATE TABLE a.only_here AS SELECT 3 AS id');
    const v = await s.request('POST', '/api/versions', {});
    assert.ok(v.status < 300, v.text);
  });
  after(async () => s.close());

  it('answers 400 with both candidates when two schemas hold the name', async () => {
    const r = await s.request('GET', '/api/versions/timeline/orders');
    assert.equal(r.status, 400, r.text);
    assert.equal(r.body.error.code, 'ambiguous_table');
    assert.deepEqual([...r.body.error.details.candidates].sort(), ['a.orders', 'b.orders']);
  });

  it('answers a qualified name and a unique bare name', async () => {
    const q = await s.request('GET', '/api/versions/timeline/b.orders');
    assert.equal(q.status, 200, q.text);
    assert.equal(q.body.length, 1);
    const bare = await s.request('GET', '/api/versions/timeline/only_here');
    assert.equal(bare.body.length, 1);
  });
});
