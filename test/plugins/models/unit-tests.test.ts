import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { closeInProcessClis, makeProject, runInProcess, startServer, type TestServer } from '../../helpers.js';

const REVENUE = `-- @config materialized=table, schema=marts
SELECT c.name, sum(o.amount) AS revenue, count(*) AS orders
FROM staging.stg_orders AS o JOIN seeds.customers AS c USING (customer_id)
WHERE o.status = 'paid'
GROUP BY c.name
`;

const PASSING = `tests:
  - name: revenue_counts_paid_orders_only
    model: marts.revenue
    given:
      - input: staging.stg_orders
        columns: {order_id: INTEGER, customer_id: INTEGER, status: VARCHAR, amount: DOUBLE}
        rows:
          - {order_id: 1, customer_id: 1, status: paid, amount: 10}
          - [2, 1, refunded, 99]
          - [3, 2, paid, 4.5]
          - [4, 1, paid, 2.5]
      - input: seeds.customers
        csv: |
          customer_id,name
          1,Ada
          2,Alan
    expect:
      rows:
        - {name: Alan, revenue: 4.5, orders: 1}
        - {name: Ada, revenue: 12.5, orders: 2}
`;

const FAILING = `tests:
  - name: revenue_wrong_expectation
    model: revenue
    given:
      - input: staging.stg_orders
        rows:
          - {order_id: 1, customer_id: 1, status: paid, amount: 10}
      - input: customers
        rows:
          - {customer_id: 1, name: Ada}
    expect:
      rows:
        - {name: Ada, revenue: 11}
        - {name: Bob, revenue: 1}
`;

const MISSING_MOCK = `tests:
  - name: revenue_without_customers
    model: marts.revenue
    given:
      - input: staging.stg_orders
        rows:
          - {order_id: 1, customer_id: 1, status: paid, amount: 10}
    expect:
      rows: []
`;

describe('model unit tests', () => {
  let server: TestServer;
  let root: string;
  before(async () => {
    root = makeProject({
      'seeds/customers.csv': 'customer_id,name\n1,Warehouse Ada\n',
      'transform/staging/stg_orders.sql': "-- @config materialized=view, schema=staging\nSELECT 1 AS order_id, 1 AS customer_id, 'paid' AS status, 1000.0 AS amount\n",
      'transform/marts/revenue.sql': REVENUE,
      'tests/unit/revenue.yml': PASSING,
    });
    server = await startServer(root);
  });
  after(async () => server.close());

  it('passes on mock rows given as mappings, lists and CSV, without reading the warehouse (nothing is built)', async () => {
    const listed = await server.request('GET', '/api/unit-tests');
    assert.equal(listed.status, 200);
    assert.deepEqual(listed.body.tests, [
      { name: 'revenue_counts_paid_orders_only', model: 'marts.revenue', description: null, file: 'tests/unit/revenue.yml', line: 2, inputs: ['staging.stg_orders', 'seeds.customers'] },
    ]);
    const run = await server.request('POST', '/api/unit-tests/run', {});
    assert.equal(run.status, 200, run.text);
    assert.equal(run.body.passed, 1, JSON.stringify(run.body));
    assert.deepEqual(run.body.results[0].missing, []);
    assert.deepEqual(run.body.results[0].unexpected, []);
    // The warehouse was never touched: no seed loaded, no model built.
    assert.equal(await server.app.db.value("SELECT count(*)::INTEGER FROM duckdb_tables() WHERE schema_name IN ('seeds', 'marts')"), 0);
  });

  it('fails with the expected-but-missing and produced-but-unexpected rows', async () => {
    fs.writeFileSync(path.join(root, 'tests/unit/wrong.yml'), FAILING);
    const run = await server.request('POST', '/api/unit-tests/run', { names: ['revenue_wrong_expectation'] });
    assert.equal(run.status, 200);
    const r = run.body.results[0];
    assert.equal(r.status, 'fail');
    assert.equal(r.model, 'marts.revenue');
    assert.deepEqual(r.missing.sort((a: any, b: any) => a.name.localeCompare(b.name)), [
      { name: 'Ada', revenue: 11 },
      { name: 'Bob', revenue: 1 },
    ]);
    assert.deepEqual(r.unexpected, [{ name: 'Ada', revenue: 10 }]);
    fs.rmSync(path.join(root, 'tests/unit/wrong.yml'));
  });

  it('rewrites the model to read its mocks: a database-qualified reference and its table-name qualifier are bound to the mock', async () => {
    // The project's database is attached as catalog "test": the model names it. The scratch
    // database has no such catalog, so only a rewrite of the reference (not a mock created under
    // the same name) can run this model on the mock rows.
    fs.writeFileSync(
      path.join(root, 'transform/marts/paid_total.sql'),
      "-- @config materialized=table, schema=marts\nWITH paid AS (SELECT * FROM test.staging.stg_orders WHERE stg_orders.status = 'paid')\nSELECT count(*) AS n, sum(paid.amount) AS total FROM paid\n",
    );
    fs.writeFileSync(
      path.join(root, 'tests/unit/paid_total.yml'),
      'tests:\n  - name: paid_total_on_mock\n    model: marts.paid_total\n    given:\n      - input: staging.stg_orders\n        rows:\n          - {status: paid, amount: 3}\n          - {status: paid, amount: 4}\n          - {status: open, amount: 100}\n    expect:\n      rows:\n        - {n: 2, total: 7}\n',
    );
    try {
      const run = await server.request('POST', '/api/unit-tests/run', { names: ['paid_total_on_mock'] });
      assert.equal(run.status, 200, run.text);
      assert.equal(run.body.results[0].status, 'pass', JSON.stringify(run.body.results[0]));
      // A wrong expectation fails with the rows the mock produced, so the mock (not the view's 1000.0) was read.
      fs.writeFileSync(path.join(root, 'tests/unit/paid_total.yml'), fs.readFileSync(path.join(root, 'tests/unit/paid_total.yml'), 'utf8').replace('total: 7', 'total: 1000'));
      const failing = await server.request('POST', '/api/unit-tests/run', { names: ['paid_total_on_mock'] });
      assert.equal(failing.body.results[0].status, 'fail');
      assert.deepEqual(failing.body.results[0].unexpected, [{ n: 2, total: 7 }]);
    } finally {
      fs.rmSync(path.join(root, 'transform/marts/paid_total.sql'));
      fs.rmSync(path.join(root, 'tests/unit/paid_total.yml'));
    }
  });

  it('an upstream without a mock is an error; bad files name file and line; dp check includes unit tests', async () => {
    fs.writeFileSync(path.join(root, 'tests/unit/missing.yml'), MISSING_MOCK);
    const run = await server.request('POST', '/api/unit-tests/run', { model: 'revenue' });
    const r = run.body.results.find((x: any) => x.name === 'revenue_without_customers');
    assert.equal(r.status, 'error');
    assert.match(r.error, /tests\/unit\/missing\.yml line 2: marts\.revenue reads seeds\.customers, which has no mock in given/);
    fs.rmSync(path.join(root, 'tests/unit/missing.yml'));

    fs.writeFileSync(path.join(root, 'tests/unit/bad.yml'), 'tests:\n  - name: x\n    model: marts.revenue\n    given: []\n    expect:\n      rowz: []\n');
    const listed = await server.request('GET', '/api/unit-tests');
    assert.deepEqual(listed.body.errors, [{ file: 'tests/unit/bad.yml', line: 6, message: "tests/unit/bad.yml line 6: unknown property 'rowz'" }]);
    fs.rmSync(path.join(root, 'tests/unit/bad.yml'));

    const bad = await server.request('POST', '/api/unit-tests/run', { model: 'nope' });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.code, 'unknown_model');
    const extra = await server.request('POST', '/api/unit-tests/run', { sneaky: true });
    assert.equal(extra.status, 400);

  });
});

describe('dp test and dp check (CLI)', () => {
  after(closeInProcessClis);
  it('reports failures with their rows, filters by model and name, and fails dp check', async () => {
    const root = makeProject({
      'seeds/customers.csv': 'customer_id,name\n1,Warehouse Ada\n',
      'transform/staging/stg_orders.sql': "-- @config materialized=view, schema=staging\nSELECT 1 AS order_id, 1 AS customer_id, 'paid' AS status, 1000.0 AS amount\n",
      'transform/marts/revenue.sql': REVENUE,
      'tests/unit/revenue.yml': PASSING,
      'tests/unit/wrong.yml': FAILING,
    });
    const failing = await runInProcess(['test', '--project', root, '--name', 'revenue_wrong_expectation']);
    assert.equal(failing.code, 1, failing.stderr);
    assert.match(failing.stdout, /FAIL  revenue_wrong_expectation \(marts\.revenue\)/);
    assert.match(failing.stdout, /- missing {4}\{"name":"Bob","revenue":1\}/);
    assert.match(failing.stdout, /\+ unexpected \{"name":"Ada","revenue":10\}/);
    assert.match(failing.stdout, /0 passed, 1 failed, 0 errors/);
    const passing = await runInProcess(['test', '--project', root, '--name', 'revenue_counts_paid_orders_only']);
    assert.equal(passing.code, 0, passing.stdout + passing.stderr);
    assert.match(passing.stdout, /PASS  revenue_counts_paid_orders_only \(marts\.revenue\)/);
    const check = await runInProcess(['check', '--project', root]);
    assert.equal(check.code, 1);
    assert.match(check.stdout, /unit tests: 1 passed, 1 failed, 0 errors/);
    fs.rmSync(path.join(root, 'tests/unit/wrong.yml'));
    const byModel = await runInProcess(['test', '--project', root, '--model', 'revenue']);
    assert.equal(byModel.code, 0, byModel.stdout + byModel.stderr);
    assert.match(byModel.stdout, /1 passed, 0 failed, 0 errors/);
  });
});
