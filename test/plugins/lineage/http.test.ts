import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
import { closeInProcessClis, makeProject, runInProcess, startServer, type TestServer } from '../../helpers.js';

// The CLI's App holds the project's database: closed after each test, before another opens it.
afterEach(closeInProcessClis);

const src = (source_table: string, source_column: string) => ({ source_table, source_column });

const PROJECT: Record<string, string> = {
  'project.yml': `name: lineage_test
database:
  path: test.duckdb
sources:
  - name: raw_events
    schema: landing
    tables:
      - name: events
exposures:
  - name: country_dashboard
    type: dashboard
    owner: bi@example.com
    depends_on: [marts.country_report]
`,
  'seeds/orders.csv': 'order_id,customer_id,amount,status\n1,1,10.5,completed\n2,1,20,shipped\n3,2,7,returned\n',
  'seeds/customers.csv': 'customer_id,name,country\n1,Ann,NL\n2,Bob,DE\n',
  'ingest/events.ts': `export default async (ctx) => {
  await ctx.db.run('CREATE TABLE IF NOT EXISTS landing.events (event_id BIGINT, customer_id INTEGER)');
  await ctx.db.run('INSERT INTO landing.events VALUES (1, 1)');
};
`,
  'transform/staging/stg_orders.sql': `-- @config materialized=view
SELECT order_id, customer_id, CAST(amount AS DECIMAL(10, 2)) AS amount, status FROM seeds.orders
`,
  'transform/staging/stg_customers.sql': `-- @config materialized=view
SELECT * FROM seeds.customers
`,
  'transform/marts/customer_revenue.sql': `-- @config materialized=table
SELECT customer_id, c.country, sum(o.amount) AS revenue, now() AS computed_at
FROM staging.stg_customers c JOIN staging.stg_orders o USING (customer_id)
GROUP BY ALL
`,
  'transform/marts/country_report.sql': `-- @config materialized=table
SELECT country, sum(revenue) AS total_revenue, count(*) AS customers FROM marts.customer_revenue GROUP BY ALL
`,
  'transform/marts/order_status.sql': `-- @config materialized=view
SELECT status, count(*) AS orders FROM staging.stg_orders GROUP BY ALL
`,
};

describe('lineage over HTTP and the CLI', () => {
  let s: TestServer;
  let root: string;
  before(async () => {
    root = makeProject(PROJECT);
    s = await startServer(root);
  });
  after(async () => s?.close());

  it('attributes SELECT * to the first dependency before seeds exist, and expands it after', async () => {
    const before = await s.request('GET', '/api/lineage/staging.stg_customers');
    assert.equal(before.status, 200, before.text);
    assert.deepEqual(before.body, {
      model: 'staging.stg_customers',
      columns: { '*': [src('seeds.customers', '*')] },
      depends_on: ['seeds.customers'],
      method: 'parser',
    });
    const seeded = await s.request('POST', '/api/seeds', { force: true });
    assert.equal(seeded.status, 200, seeded.text);
    const after = await s.request('GET', '/api/lineage/stg_customers');
    assert.deepEqual(after.body.columns, {
      customer_id: [src('seeds.customers', 'customer_id')],
      name: [src('seeds.customers', 'name')],
      country: [src('seeds.customers', 'country')],
    });
  });

  it('traces columns through two levels of models after a transform', async () => {
    const built = await s.request('POST', '/api/transform', { targets: null, force: true });
    assert.equal(built.status, 200, built.text);
    const r = await s.request('GET', '/api/lineage/marts.customer_revenue');
    assert.deepEqual(r.body.columns, {
      customer_id: [src('staging.stg_customers', 'customer_id'), src('staging.stg_orders', 'customer_id')],
      country: [src('staging.stg_customers', 'country')],
      revenue: [src('staging.stg_orders', 'amount')],
      computed_at: [],
    });
    assert.deepEqual(r.body.depends_on.sort(), ['staging.stg_customers', 'staging.stg_orders']);
    const all = await s.request('GET', '/api/lineage');
    assert.equal(all.status, 200);
    assert.deepEqual(
      all.body.map((l: { model: string }) => l.model).sort(),
      ['marts.country_report', 'marts.customer_revenue', 'marts.order_status', 'staging.stg_customers', 'staging.stg_orders'],
    );
    assert.deepEqual(all.body.find((l: { model: string }) => l.model === 'marts.country_report').columns, {
      country: [src('marts.customer_revenue', 'country')],
      total_revenue: [src('marts.customer_revenue', 'revenue')],
      customers: [],
    });
  });

  it('answers impact through two levels, narrowed by column', async () => {
    const all = await s.request('GET', '/api/impact/staging.stg_orders');
    assert.equal(all.status, 200, all.text);
    assert.equal('column' in all.body, false);
    assert.deepEqual(new Set(all.body.downstream_models), new Set(['marts.customer_revenue', 'marts.order_status', 'marts.country_report']));
    assert.deepEqual(all.body.impact_chain['marts.customer_revenue'], ['marts.country_report']);
    assert.deepEqual(new Set(all.body.impact_chain['staging.stg_orders']), new Set(['marts.customer_revenue', 'marts.order_status']));

    const amount = await s.request('GET', '/api/impact/staging.stg_orders?column=amount');
    assert.equal(amount.body.column, 'amount');
    assert.deepEqual(amount.body.affected_columns, [
      { model: 'marts.customer_revenue', column: 'revenue' },
      { model: 'marts.country_report', column: 'total_revenue' },
    ]);
    const status = await s.request('GET', '/api/impact/stg_orders?column=status');
    assert.deepEqual(status.body.affected_columns, [{ model: 'marts.order_status', column: 'status' }]);
    // A seed is a valid root too: its columns flow through the staging model.
    const seed = await s.request('GET', '/api/impact/seeds.orders?column=AMOUNT');
    assert.equal(seed.status, 200, seed.text);
    assert.equal(seed.body.column, 'amount');
    assert.deepEqual(seed.body.affected_columns, [
      { model: 'staging.stg_orders', column: 'amount' },
      { model: 'marts.customer_revenue', column: 'revenue' },
      { model: 'marts.country_report', column: 'total_revenue' },
    ]);
  });

  it('answers 404 for an unknown model or column', async () => {
    const model = await s.request('GET', '/api/lineage/staging.nope');
    assert.equal(model.status, 404);
    assert.equal(model.body.error.code, 'model_not_found');
    assert.equal((await s.request('GET', '/api/impact/nope')).status, 404);
    const column = await s.request('GET', '/api/impact/staging.stg_orders?column=nope');
    assert.equal(column.status, 404);
    assert.equal(column.body.error.code, 'column_not_found');
  });

  it('recomputes a model whose file changed', async () => {
    const file = path.join(root, 'transform/marts/order_status.sql');
    const original = fs.readFileSync(file, 'utf8');
    fs.writeFileSync(file, `-- @config materialized=view\nSELECT status AS order_status, count(order_id) AS orders FROM staging.stg_orders GROUP BY ALL\n`);
    try {
      const r = await s.request('GET', '/api/lineage/marts.order_status');
      assert.deepEqual(r.body.columns, { order_status: [src('staging.stg_orders', 'status')], orders: [src('staging.stg_orders', 'order_id')] });
    } finally {
      fs.writeFileSync(file, original);
    }
    const back = await s.request('GET', '/api/lineage/marts.order_status');
    assert.deepEqual(Object.keys(back.body.columns), ['status', 'orders']);
  });

  it('serves the full DAG with every node type', async () => {
    await s.app.db.run('CREATE SCHEMA IF NOT EXISTS imports; CREATE OR REPLACE TABLE imports.budget (country VARCHAR, amount DOUBLE)');
    const r = await s.request('GET', '/api/dag/full');
    assert.equal(r.status, 200, r.text);
    const type = (id: string) => r.body.nodes.find((n: { id: string }) => n.id === id)?.type;
    assert.equal(type('landing.events'), 'source');
    assert.equal(type('seeds.orders'), 'seed');
    assert.equal(type('ingest/events.ts'), 'ingest');
    assert.equal(type('imports.budget'), 'import');
    assert.equal(type('staging.stg_orders'), 'view');
    assert.equal(type('marts.customer_revenue'), 'table');
    assert.equal(type('exposure:country_dashboard'), 'exposure');
    const edges = r.body.edges.map((e: { source: string; target: string }) => `${e.source} -> ${e.target}`);
    for (const e of [
      'ingest/events.ts -> landing.events',
      'seeds.orders -> staging.stg_orders',
      'staging.stg_orders -> marts.customer_revenue',
      'marts.customer_revenue -> marts.country_report',
      'marts.country_report -> exposure:country_dashboard',
    ]) {
      assert.ok(edges.includes(e), `missing edge ${e} in ${edges.join(', ')}`);
    }
  });

  it('prints lineage and impact from the CLI (text and --json)', async () => {
    await s.close();
    s = undefined as unknown as TestServer;
    const json = await runInProcess(['lineage', 'marts.country_report', '--json', '--project', root]);
    assert.equal(json.code, 0, json.stderr);
    assert.deepEqual(JSON.parse(json.stdout).columns.total_revenue, [src('marts.customer_revenue', 'revenue')]);
    const text = await runInProcess(['lineage', 'country_report', '--project', root]);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /total_revenue\s+marts\.customer_revenue\.revenue/);
    const impact = await runInProcess(['impact', 'staging.stg_orders', '--column', 'amount', '--json', '--project', root]);
    assert.equal(impact.code, 0, impact.stderr);
    assert.deepEqual(JSON.parse(impact.stdout).affected_columns, [
      { model: 'marts.customer_revenue', column: 'revenue' },
      { model: 'marts.country_report', column: 'total_revenue' },
    ]);
    const impactText = await runInProcess(['impact', 'staging.stg_orders', '--project', root]);
    assert.equal(impactText.code, 0, impactText.stderr);
    assert.match(impactText.stdout, /└─ marts\.country_report/);
    const missing = await runInProcess(['impact', 'nope', '--project', root]);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /No model named 'nope'/);
  });
});

describe('lineage fallback for SQL the parser rejects', () => {
  let s: TestServer;
  before(async () => {
    s = await startServer(
      makeProject({
        'seeds/orders.csv': 'order_id,amount,status\n1,10,completed\n',
        'transform/staging/templated.sql': `-- @config materialized=view
-- @depends_on seeds.orders
SELECT o.order_id, o.amount AS total, status FROM seeds.orders o WHERE o.status = {{ wanted_status }}
`,
      }),
    );
  });
  after(async () => s.close());

  it('says it used the regex method', async () => {
    const r = await s.request('GET', '/api/lineage/staging.templated');
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body, {
      model: 'staging.templated',
      columns: { order_id: [src('seeds.orders', 'order_id')], total: [src('seeds.orders', 'amount')], status: [src('seeds.orders', 'status')] },
      depends_on: ['seeds.orders'],
      method: 'regex',
    });
  });
});
