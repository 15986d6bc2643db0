import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { closeInProcessClis, makeProject, runInProcess, startServer, type TestServer } from '../../helpers.js';

// The CLI's App holds the project's database: closed after each test, before another opens it.
afterEach(closeInProcessClis);

describe('tables plugin', () => {
  let s: TestServer;
  let root: string;
  before(async () => {
    root = makeProject();
    s = await startServer(root);
    await s.app.db.run(`CREATE SCHEMA shop;
      CREATE TABLE shop.customers (id INTEGER NOT NULL, name VARCHAR, score DOUBLE);
      INSERT INTO shop.customers SELECT i, 'c' || i, i / 2 FROM range(250) t(i);
      CREATE VIEW shop.top AS SELECT * FROM shop.customers WHERE score > 100`);
  });
  after(async () => s.close());

  it('lists tables and views, hiding the _service schema', async () => {
    const r = await s.request('GET', '/api/tables');
    assert.equal(r.status, 200);
    assert.deepEqual(
      r.body.filter((t: { schema: string }) => t.schema === 'shop'),
      [
        { schema: 'shop', name: 'customers', type: 'table' },
        { schema: 'shop', name: 'top', type: 'view' },
      ],
    );
    assert.ok(!r.body.some((t: { schema: string }) => t.schema === '_service'));
    const only = await s.request('GET', '/api/tables?schema=main');
    assert.deepEqual(only.body, []);
  });

  it('describes columns with types and nullability', async () => {
    const r = await s.request('GET', '/api/tables/shop/customers');
    assert.equal(r.status, 200);
    assert.deepEqual(r.body.columns, [
      { name: 'id', type: 'INTEGER', nullable: false },
      { name: 'name', type: 'VARCHAR', nullable: true },
      { name: 'score', type: 'DOUBLE', nullable: true },
    ]);
  });

  it('samples with limit and offset (default 100)', async () => {
    const r = await s.request('GET', '/api/tables/shop/customers/sample');
    assert.equal(r.status, 200);
    assert.equal(r.body.rows.length, 100);
    assert.equal(r.body.limit, 100);
    assert.equal(r.body.offset, 0);
    assert.deepEqual(r.body.columns, ['id', 'name', 'score']);
    const page = await s.request('GET', '/api/tables/shop/customers/sample?limit=2&offset=10');
    assert.deepEqual(page.body.rows, [
      [10, 'c10', 5],
      [11, 'c11', 5.5],
    ]);
  });

  it('answers 404 for unknown tables, including injection attempts in the path', async () => {
    for (const p of ['/api/tables/shop/nope', '/api/tables/shop/customers%22%3B%20DROP%20TABLE%20x/sample', '/api/tables/_service/users/sample']) {
      const r = await s.request('GET', p);
      assert.equal(r.status, 404, p);
      assert.equal(r.body.error.code, 'table_not_found');
    }
  });

  it('validates sample parameters', async () => {
    const r = await s.request('GET', '/api/tables/shop/customers/sample?limit=0');
    assert.equal(r.status, 400);
    assert.equal(r.body.error.code, 'invalid_request');
  });

  it('serves autocomplete with tables, columns and keywords', async () => {
    const r = await s.request('GET', '/api/autocomplete');
    const customers = r.body.tables.find((t: { name: string }) => t.name === 'customers');
    assert.deepEqual(
      customers.columns.map((c: { name: string }) => c.name),
      ['id', 'name', 'score'],
    );
    assert.ok(r.body.keywords.includes('SELECT'));
    assert.ok(r.body.schemas.includes('shop'));
  });
});

describe('dp tables', () => {
  it('prints the listing with row counts and --json', async () => {
    const root = makeProject();
    const q = await runInProcess(['query', 'SELECT 1', '--project', root]);
    assert.equal(q.code, 0);
    await closeInProcessClis(); // the App below opens the same file
    const { bootApp } = await import('../../helpers.js');
    const app = await bootApp(root);
    await app.db.run(`CREATE SCHEMA s; CREATE TABLE s.a (x INT); CREATE TABLE "s"."odd name" AS SELECT * FROM range(3); CREATE VIEW s.v AS SELECT 1 AS y`);
    await app.close();
    const out = await runInProcess(['tables', '--project', root]);
    assert.equal(out.code, 0, out.stderr);
    assert.match(out.stdout, /schema\s+name\s+type\s+rows/);
    assert.match(out.stdout, /s\s+a\s+table\s+0/);
    assert.match(out.stdout, /s\s+odd name\s+table\s+3/);
    const json = await runInProcess(['tables', '--json', '--schema', 's', '--project', root]);
    assert.deepEqual(JSON.parse(json.stdout), [
      { schema: 's', name: 'a', type: 'table', rows: 0 },
      { schema: 's', name: 'odd name', type: 'table', rows: 3 },
      { schema: 's', name: 'v', type: 'view', rows: null },
    ]);
  });
});
