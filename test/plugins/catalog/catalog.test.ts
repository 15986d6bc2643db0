import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
import { closeInProcessClis, copyShop, runInProcess, SHOP_EXAMPLE, startServer, type TestServer } from '../../helpers.js';

// The CLI's App holds the project's database: closed after each test, before another opens it.
afterEach(closeInProcessClis);

const BI_TOKEN = 'bi_token_5e3f9a7c1d';
const CRM_TOKEN = 'crm_token_77aa31bd';

/** examples/shop plus a model reading the declared source, and an exposure whose URL holds a secret. */
function shopWithCatalog(): string {
  const yml = fs.readFileSync(path.join(SHOP_EXAMPLE, 'project.yml'), 'utf8').replace(
    'exposures:\n',
    `exposures:
  - name: customer_board
    description: Customer board (key \${BI_TOKEN})
    owner: sales@example.com
    type: dashboard
    url: https://bi.example.com/board?key=\${BI_TOKEN}
    depends_on: [marts.customer_orders, marts.nope]
`,
  );
  return copyShop({
    'project.yml': yml,
    '.env': `BI_TOKEN=${BI_TOKEN}\nCRM_API_TOKEN=${CRM_TOKEN}\n`,
    'transform/staging/stg_events.sql': '-- Page views per event.\n-- @config materialized=view\nSELECT event_id, customer_id, page FROM landing.events\n',
  });
}

describe('catalog: sources, exposures, overview, full DAG', () => {
  let s: TestServer;
  before(async () => {
    s = await startServer(shopWithCatalog());
    await s.app.db.run(`CREATE SCHEMA landing;
      CREATE TABLE landing.events AS SELECT i AS event_id, 1 + i % 10 AS customer_id, 'page_' || (i % 7) AS page, TIMESTAMP '2024-05-01' + to_minutes(i) AS received_at FROM range(1, 43) t(i)`);
    assert.equal((await s.request('POST', '/api/seeds', {})).status, 200);
    const t = await s.request('POST', '/api/transform', {});
    assert.equal(t.status, 200, t.text);
    assert.equal(t.body.status, 'success', t.text);
  });
  after(async () => s?.close());

  it('lists sources with each table in the warehouse and its row count', async () => {
    const r = await s.request('GET', '/api/sources');
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.length, 1);
    const src = r.body[0];
    assert.equal(src.name, 'raw_events');
    assert.equal(src.schema, 'landing');
    assert.equal(src.freshness_hours, 24);
    assert.deepEqual(src.tables, [
      {
        name: 'events',
        description: 'One row per page view',
        loaded_at_column: 'received_at',
        columns: [{ name: 'event_id', description: 'Unique event id' }],
        exists: true,
        type: 'table',
        rows: 42,
      },
    ]);
  });

  it('lists exposures with undefined dependencies, secrets shown as their reference', async () => {
    const r = await s.request('GET', '/api/exposures');
    assert.equal(r.status, 200, r.text);
    assert.ok(!r.text.includes(BI_TOKEN), 'the .env value leaked');
    const board = r.body.find((e: { name: string }) => e.name === 'customer_board');
    assert.equal(board.url, 'https://bi.example.com/board?key=${BI_TOKEN}');
    assert.equal(board.description, 'Customer board (key ${BI_TOKEN})');
    assert.deepEqual(board.unknown_dependencies, ['marts.nope']);
    const revenue = r.body.find((e: { name: string }) => e.name === 'revenue_dashboard');
    assert.deepEqual(revenue, {
      name: 'revenue_dashboard',
      description: 'Weekly revenue dashboard for the finance team',
      owner: 'finance@example.com',
      type: 'dashboard',
      url: 'http://localhost:3000/#/dashboards/revenue',
      depends_on: ['marts.revenue_by_month'],
      unknown_dependencies: [],
    });
  });

  it('shows declared sources as source nodes of the full DAG, with their edges', async () => {
    const r = await s.request('GET', '/api/dag/full');
    assert.equal(r.status, 200, r.text);
    assert.ok(!r.text.includes(BI_TOKEN));
    const node = r.body.nodes.find((n: { id: string }) => n.id === 'landing.events');
    assert.deepEqual(
      { type: node.type, source: node.source, declared: node.declared, loaded_at_column: node.loaded_at_column, freshness_hours: node.freshness_hours, description: node.description },
      { type: 'source', source: 'raw_events', declared: true, loaded_at_column: 'received_at', freshness_hours: 24, description: 'One row per page view' },
    );
    const edges = r.body.edges.map((e: { source: string; target: string }) => `${e.source} -> ${e.target}`);
    for (const e of ['ingest/events.ts -> landing.events', 'landing.events -> staging.stg_events', 'marts.customer_orders -> exposure:customer_board', 'marts.nope -> exposure:customer_board']) {
      assert.ok(edges.includes(e), `missing ${e} in ${edges.join(', ')}`);
    }
    // A relation nothing defines is still a source node, marked undeclared.
    assert.equal(r.body.nodes.find((n: { id: string }) => n.id === 'marts.nope').declared, false);
  });

  it('answers the overview: schemas, tables with row counts, recent runs, connectors (names and types only)', async () => {
    const r = await s.request('GET', '/api/overview');
    assert.equal(r.status, 200, r.text);
    assert.ok(!r.text.includes(CRM_TOKEN), 'a connection secret leaked');
    assert.equal(r.body.project, 'shop');
    const tables = await s.request('GET', '/api/tables');
    assert.deepEqual(
      r.body.tables.map((t: { schema: string; name: string }) => `${t.schema}.${t.name}`),
      tables.body.map((t: { schema: string; name: string }) => `${t.schema}.${t.name}`),
    );
    for (const t of r.body.tables as Array<{ schema: string; name: string; type: string; rows: number | null }>) {
      if (t.type === 'view') {
        assert.equal(t.rows, null);
        continue;
      }
      const counted = await s.request('POST', '/api/query', { sql: `SELECT count(*) AS n FROM "${t.schema}"."${t.name}"` });
      assert.equal(t.rows, counted.body.rows[0][0], `${t.schema}.${t.name}`);
    }
    const seeds = r.body.schemas.find((x: { name: string }) => x.name === 'seeds');
    assert.deepEqual(seeds, { name: 'seeds', tables: 3, views: 0, rows: 10 + 120 + 108 });
    assert.equal(r.body.totals.models, 6);
    assert.equal(r.body.totals.metrics, 4);
    assert.equal(r.body.totals.exposures, 2);
    assert.equal(r.body.totals.rows, r.body.schemas.reduce((n: number, x: { rows: number }) => n + x.rows, 0));
    assert.ok(r.body.recent_runs.length >= 1);
    assert.equal(r.body.recent_runs[0].status, 'success');
    assert.deepEqual(r.body.connectors, [{ name: 'crm_api', type: 'rest_api' }]);
  });
});

describe('catalog: generated documentation of examples/shop', () => {
  let s: TestServer;
  let root: string;
  before(async () => {
    root = shopWithCatalog();
    s = await startServer(root);
    await s.app.db.run(`CREATE SCHEMA landing; CREATE TABLE landing.events (event_id BIGINT, customer_id INTEGER, page VARCHAR, received_at TIMESTAMP)`);
    await s.request('POST', '/api/seeds', {});
    const t = await s.request('POST', '/api/transform', {});
    assert.equal(t.body.status, 'success', t.text);
  });
  after(async () => s?.close());

  it('holds every model and metric, columns with types and lineage, sources, exposures and contracts', async () => {
    const docs = await s.request('GET', '/api/docs/structured');
    assert.equal(docs.status, 200, docs.text);
    const models = (await s.request('GET', '/api/models')).body.map((m: { full_name: string }) => m.full_name).sort();
    assert.equal(models.length, 6);
    assert.deepEqual(docs.body.models.map((m: { full_name: string }) => m.full_name).sort(), models);
    const metrics = (await s.request('GET', '/api/semantic/metrics')).body.metrics.map((m: { name: string }) => m.name);
    assert.deepEqual(metrics, ['total_revenue', 'active_customers', 'order_count', 'average_order_value']);
    assert.deepEqual(docs.body.metrics.map((m: { name: string }) => m.name), metrics);
    assert.deepEqual(docs.body.metric_errors, []);

    const co = docs.body.models.find((m: { full_name: string }) => m.full_name === 'marts.customer_orders');
    assert.equal(co.description, 'One row per customer: contact details, number of orders, lifetime value\nand first and last order dates (returned orders left out).');
    assert.equal(co.materialized, 'table');
    assert.equal(co.built, true);
    assert.deepEqual(co.contracts, ['customer_orders_contract']);
    assert.deepEqual(co.metrics, ['active_customers']);
    assert.deepEqual(co.exposures, ['customer_board']);
    assert.deepEqual(co.assertions, ['row_count > 0', 'unique(customer_id)']);
    const email = co.columns.find((c: { name: string }) => c.name === 'email');
    assert.deepEqual(email, { name: 'email', type: 'VARCHAR', nullable: true, lineage: [{ source_table: 'staging.stg_customers', source_column: 'email' }] });
    assert.deepEqual(co.columns.find((c: { name: string }) => c.name === 'order_count').lineage, []);
    const orders = docs.body.models.find((m: { full_name: string }) => m.full_name === 'staging.stg_orders');
    assert.deepEqual(orders.used_by.sort(), ['marts.customer_orders', 'marts.revenue_by_month']);

    assert.deepEqual(docs.body.contracts.map((c: { name: string }) => c.name), ['customer_orders_contract', 'revenue_contract']);
    assert.equal(docs.body.sources[0].tables[0].name, 'events');
    assert.deepEqual(docs.body.exposures.map((e: { name: string }) => e.name), ['customer_board', 'revenue_dashboard']);
    assert.deepEqual(docs.body.counts, { models: 6, seeds: 3, sources: 1, exposures: 2, metrics: 4, contracts: 2 });
    assert.ok(!docs.text.includes(BI_TOKEN));
  });

  it('renders the same as one markdown document', async () => {
    const r = await s.request('GET', '/api/docs/markdown');
    assert.equal(r.status, 200);
    assert.match(r.headers.get('content-type') ?? '', /^text\/markdown/);
    const md = r.text;
    assert.ok(!md.includes(BI_TOKEN), 'the .env value leaked into the docs');
    assert.match(md, /^# shop\n/);
    for (const m of ['staging.stg_customers', 'staging.stg_orders', 'staging.stg_payments', 'staging.stg_events', 'marts.customer_orders', 'marts.revenue_by_month']) {
      assert.ok(md.includes(`\n### ${m}\n`), `model ${m} missing`);
    }
    for (const m of ['total_revenue', 'active_customers', 'order_count', 'average_order_value']) assert.ok(md.includes(`\n### ${m}\n`), `metric ${m} missing`);
    assert.ok(md.includes('| email | VARCHAR | staging.stg_customers.email |'));
    assert.ok(md.includes('| order_count | BIGINT | computed |'));
    assert.ok(md.includes('- Measure: `count(DISTINCT order_id)`'));
    assert.ok(md.includes('- URL: https://bi.example.com/board?key=${BI_TOKEN}'));
    assert.ok(md.includes('- Not defined in the project: `marts.nope`'));
    assert.ok(md.includes('### customer_orders_contract'));
    assert.ok(md.includes('| events | One row per page view | received_at | 0 |'));
  });

  it('writes it with dp docs --out, inside the project only', async () => {
    await s.close();
    s = undefined as unknown as TestServer;
    const out = await runInProcess(['docs', '--out', 'docs/project.md'], { cwd: root });
    assert.equal(out.code, 0, out.stderr);
    assert.match(out.stderr, /wrote docs\/project\.md \(6 models, 4 metrics, 2 contracts\)/);
    const written = fs.readFileSync(path.join(root, 'docs', 'project.md'), 'utf8');
    assert.ok(written.includes('\n### marts.customer_orders\n'));
    const stdout = await runInProcess(['docs', '--project', root]);
    assert.equal(stdout.code, 0, stdout.stderr);
    assert.equal(stdout.stdout, written);
    const outside = await runInProcess(['docs', '--out', '../outside.md'], { cwd: root });
    assert.equal(outside.code, 1);
    assert.ok(!fs.existsSync(path.join(root, '..', 'outside.md')));
  });
});

describe('catalog: a trimmed deployment (lineage, tables and semantic disabled)', () => {
  it('still answers sources, exposures, overview and docs', async () => {
    const yml = fs.readFileSync(path.join(SHOP_EXAMPLE, 'project.yml'), 'utf8') + '\nplugins:\n  disable: [lineage, tables, semantic]\n';
    const s = await startServer(copyShop({ 'project.yml': yml }));
    try {
      assert.deepEqual((await s.request('GET', '/api/exposures')).body, []);
      const sources = await s.request('GET', '/api/sources');
      assert.equal(sources.body[0].tables[0].exists, false);
      const overview = await s.request('GET', '/api/overview');
      assert.equal(overview.status, 200, overview.text);
      assert.deepEqual(overview.body.tables, []);
      // Each plugin's part is absent with it: no exposures, no metric count.
      assert.equal(overview.body.totals.exposures, 0);
      assert.ok(!('metrics' in overview.body.totals), JSON.stringify(overview.body.totals));
      const docs = await s.request('GET', '/api/docs/structured');
      assert.equal(docs.status, 200, docs.text);
      assert.equal(docs.body.models[0].lineage_error, 'the lineage plugin is disabled');
      assert.equal((await s.request('GET', '/api/dag/full')).status, 404);
    } finally {
      await s.close();
    }
  });
});
