/**
 * A missing table is said to be missing (issue 33 point 3): `table_not_found` with its name and
 * the closest existing names, on /api/query, /api/query/explain, a notebook's SQL cell and
 * `dp query`; a name that could be a file is still refused as one.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { makeProject, runCli, startServer, type TestServer } from '../../helpers.js';

describe('a query naming a table that does not exist', () => {
  let s: TestServer;
  let root: string;
  before(async () => {
    root = makeProject({ 'notebooks/look.dpnb': JSON.stringify({ cells: [{ type: 'sql', source: 'SELECT * FROM marts.order' }] }) });
    s = await startServer(root);
    await s.app.db.run('CREATE SCHEMA marts; CREATE TABLE marts.orders AS SELECT 1 AS id; CREATE VIEW marts.order_items AS SELECT 2 AS id; CREATE TABLE main.customers AS SELECT 3 AS id');
  });
  after(async () => s.close());

  const expectMissing = (r: { status: number; body: any; text: string }, name: string) => {
    assert.equal(r.status, 404, r.text);
    assert.equal(r.body.error.code, 'table_not_found');
    assert.equal(r.body.error.details.table, name);
    assert.match(r.body.error.message, new RegExp(`'${name.replace('.', '\\.')}' does not exist`));
  };

  it('answers /api/query with the name and the closest existing tables and views', async () => {
    const r = await s.request('POST', '/api/query', { sql: 'SELECT * FROM marts.order' });
    expectMissing(r, 'marts.order');
    assert.deepEqual(r.body.error.details.closest, ['marts.orders', 'marts.order_items']);
    assert.match(r.body.error.message, /did you mean marts\.orders/);
    const bare = await s.request('POST', '/api/query', { sql: 'SELECT * FROM customer' });
    expectMissing(bare, 'customer');
    assert.equal(bare.body.error.details.closest[0], 'main.customers');
  });

  it('answers the same on explain and in a notebook SQL cell', async () => {
    expectMissing(await s.request('POST', '/api/query/explain', { sql: 'SELECT * FROM marts.order' }), 'marts.order');
    expectMissing(await s.request('POST', '/api/notebooks/notebooks/look.dpnb/execute', { cell_index: 0 }), 'marts.order');
  });

  it('still refuses a name that could be a file as a catalog error', async () => {
    const r = await s.request('POST', '/api/query', { sql: 'SELECT * FROM "orders.csv"' });
    assert.equal(r.status, 400);
    assert.equal(r.body.error.code, 'read_only_violation');
  });

  it('dp query says the table does not exist', async () => {
    await s.close();
    const r = runCli(['query', 'SELECT * FROM marts.ordrs', '--project', root]);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /table 'marts\.ordrs' does not exist; did you mean marts\.orders/);
    assert.doesNotMatch(r.stderr, /read-only/);
    s = await startServer(root);
  });
});
