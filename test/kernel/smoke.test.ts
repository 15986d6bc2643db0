import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { makeProject, startServer, type TestServer } from '../helpers.js';

describe('server smoke', () => {
  let s: TestServer;
  before(async () => {
    s = await startServer(makeProject());
  });
  after(async () => s.close());

  it('answers a query and the health route', async () => {
    const r = await s.request('POST', '/api/query', { sql: 'SELECT 1 AS one' });
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.rows, [[1]]);
    const h = await s.request('GET', '/api/health');
    assert.equal(h.body.status, 'ok');
  });
});
