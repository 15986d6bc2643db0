import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { App } from '../../../kernel/app.js';
import { runCommand, startTestServer, type PluginTestServer } from '../../../sdk/testing.js';
import { bootApp, builtShop, closeInProcessClis, copyShop, makeProject, runInProcess, startServer, type TestServer } from '../../helpers.js';

const GRAINS = ['hour', 'day', 'week', 'month', 'quarter', 'year'] as const;

/** 400 sales over 2024, every 22 hours: a region, a channel and an amount each. */
const SALES_SQL = `CREATE SCHEMA m;
CREATE TABLE m.sales AS
  SELECT TIMESTAMP '2024-01-01 00:00:00' + to_hours(i * 22) AS sold_at,
         ['north', 'south'][i % 2 + 1] AS region,
         ['web', 'shop', 'phone'][i % 3 + 1] AS channel,
         CAST(i AS DOUBLE) AS amount
  FROM range(400) t(i);`;

const VALID = `metrics:
  - name: revenue
    description: Sales amount outside the phone channel
    model: m.sales
    measure: sum(amount)
    dimensions: [region, channel]
    time_dimension: sold_at
    filters: ["channel <> 'phone'"]
  - name: sales_count
    model: m.sales
    measure: count(*)
    dimensions: [region]
`;

/** Each entry is refused with a reason; the valid one among them still loads. */
const MIXED = `metrics:
  - name: big_sales
    model: m.sales
    measure: count(*) FILTER (WHERE amount > 300)
    time_dimension: sold_at
  - name: two_statements
    model: m.sales
    measure: "sum(amount); DROP TABLE m.sales"
  - name: from_smuggled
    model: m.sales
    measure: "sum(amount) FROM m.other --"
  - name: subquery_measure
    model: m.sales
    measure: "(SELECT sum(amount) FROM m.sales)"
  - name: not_aggregate
    model: m.sales
    measure: amount * 2
  - name: aliased
    model: m.sales
    measure: sum(amount) AS total
  - name: windowed
    model: m.sales
    measure: sum(amount) OVER ()
  - name: grouped_filter
    model: m.sales
    measure: sum(amount)
    filters: ["region = 'north' GROUP BY region"]
  - name: escaping_filter
    model: m.sales
    measure: sum(amount)
    filters: ["region = 'north') OR (1 = 1"]
  - name: commented_filter
    model: m.sales
    measure: sum(amount)
    filters: ["region = 'north' --"]
  - name: aggregate_filter
    model: m.sales
    measure: sum(amount)
    filters: ["sum(amount) > 0"]
  - name: subquery_filter
    model: m.sales
    measure: sum(amount)
    filters: ["region IN (SELECT region FROM m.sales)"]
  - name: parameterised
    model: m.sales
    measure: sum(amount)
    filters: ["sold_at >= $start"]
  - name: bad name
    model: m.sales
    measure: sum(amount)
  - name: no_schema
    model: sales
    measure: sum(amount)
  - name: revenue
    model: m.sales
    measure: max(amount)
  - model: m.sales
    measure: sum(amount)
`;

describe('semantic: metrics', () => {
  let s: PluginTestServer;
  before(async () => {
    s = await startTestServer({
      plugins: [],
      builtIn: ['models', 'query', 'semantic'],
      files: {
        'metrics/core.yml': VALID,
        'metrics/mixed.yml': MIXED,
        'metrics/broken.yml': 'metrics:\n  - name: x\n    model: [unclosed\n',
        'metrics/empty.yaml': 'nothing: here\n',
      },
    });
    await s.db.run(SALES_SQL);
  });
  after(async () => s?.close());

  /** The same question asked in hand-written SQL through POST /api/query (same JSON values). */
  async function expected(sql: string) {
    const r = await s.request('POST', '/api/query', { sql, limit: 10000 });
    assert.equal(r.status, 200, r.text);
    return r.body.rows;
  }

  it('lists valid metrics beside the load errors (file, metric, reason)', async () => {
    const r = await s.request('GET', '/api/semantic/metrics');
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.metrics.map((m: { name: string }) => m.name).sort(), ['big_sales', 'commented_filter', 'revenue', 'sales_count']);
    const revenue = r.body.metrics.find((m: { name: string }) => m.name === 'revenue');
    assert.deepEqual(revenue, {
      name: 'revenue',
      model: 'm.sales',
      measure: 'sum(amount)',
      description: 'Sales amount outside the phone channel',
      dimensions: ['region', 'channel'],
      time_dimension: 'sold_at',
      filters: ["channel <> 'phone'"],
      file: 'metrics/core.yml',
    });
    const reason = (metric: string) => {
      const hit = r.body.errors.find((e: { metric: string | null }) => e.metric === metric);
      assert.ok(hit, `no load error for ${metric}: ${JSON.stringify(r.body.errors)}`);
      assert.equal(hit.file, 'metrics/mixed.yml');
      return hit.reason as string;
    };
    assert.match(reason('two_statements'), /'measure' does not parse|more than one statement/);
    assert.match(reason('from_smuggled'), /'measure' holds a FROM or JOIN clause/);
    assert.match(reason('subquery_measure'), /'measure' holds a subquery/);
    assert.match(reason('not_aggregate'), /'measure' is not an aggregate expression/);
    assert.match(reason('aliased'), /'measure' gives itself an alias/);
    assert.match(reason('windowed'), /'measure' holds a window function/);
    assert.match(reason('grouped_filter'), /'filters\[0\]' holds a GROUP BY clause/);
    assert.match(reason('escaping_filter'), /'filters\[0\]' does not parse/);
    assert.match(reason('aggregate_filter'), /'filters\[0\]' uses an aggregate function/);
    assert.match(reason('subquery_filter'), /'filters\[0\]' holds a subquery/);
    assert.match(reason('parameterised'), /'filters\[0\]' holds a \$parameter/);
    assert.match(reason('bad name'), /'name' must be letters, digits and underscores/);
    assert.match(reason('no_schema'), /'model' must be schema\.table/);
    assert.match(reason('revenue'), /already defined in metrics\/core\.yml/);
    const unnamed = r.body.errors.find((e: { metric: string | null; index?: number; file: string }) => e.metric === null && e.file === 'metrics/mixed.yml');
    assert.equal(unnamed.index, 16);
    assert.match(unnamed.reason, /'name'/);
    assert.match(r.body.errors.find((e: { file: string }) => e.file === 'metrics/broken.yml').reason, /YAML syntax error/);
    assert.match(r.body.errors.find((e: { file: string }) => e.file === 'metrics/empty.yaml').reason, /top-level 'metrics:' list/);
  });

  it('keeps a trailing comment inside its own filter (the text is never spliced)', async () => {
    // `region = 'north' --` parses as one predicate; spliced as text it would comment out the bounds.
    const errors = (await s.request('GET', '/api/semantic/metrics')).body.errors as Array<{ metric: string }>;
    assert.ok(!errors.some((e) => e.metric === 'commented_filter'));
    const r = await s.request('POST', '/api/semantic/compile', { metric: 'commented_filter' });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.sql, `SELECT sum(amount) AS commented_filter FROM m.sales WHERE (region = 'north')`);
  });

  it('compiles the documented shape: bucket named by the grain, dimensions, measure as the metric, filters, bounds as parameters, positional GROUP/ORDER BY', async () => {
    const r = await s.request('POST', '/api/semantic/compile', { metric: 'revenue', dimensions: ['region'], grain: 'month', start: '2024-03-01', end: '2024-06-01' });
    assert.equal(r.status, 200, r.text);
    assert.equal(
      r.body.sql,
      `SELECT date_trunc('month', sold_at) AS "month", region, sum(amount) AS revenue FROM m.sales ` +
        `WHERE ((channel != 'phone') AND (sold_at >= CAST($start AS TIMESTAMP)) AND (sold_at < CAST($end AS TIMESTAMP))) GROUP BY 1, 2 ORDER BY 1, 2`,
    );
    assert.deepEqual(r.body.params, { start: '2024-03-01', end: '2024-06-01' });
    assert.ok(!r.body.sql.includes('2024'), 'bounds are parameters, never in the text');
  });

  for (const grain of GRAINS) {
    it(`queries per ${grain}: with and without dimensions and bounds`, async () => {
      const bucket = `date_trunc('${grain}', sold_at)`;
      const cases = [
        { body: { dimensions: [] }, where: '', dims: '' },
        { body: { dimensions: ['region'] }, where: '', dims: ', region' },
        { body: { dimensions: ['channel', 'region'], start: '2024-02-10', end: '2024-08-01T12:00:00' }, where: ` AND sold_at >= TIMESTAMP '2024-02-10' AND sold_at < TIMESTAMP '2024-08-01 12:00:00'`, dims: ', channel, region' },
        { body: { dimensions: [], start: '2024-05-01' }, where: ` AND sold_at >= TIMESTAMP '2024-05-01'`, dims: '' },
      ];
      for (const c of cases) {
        const r = await s.request('POST', '/api/semantic/query', { metric: 'revenue', grain, ...c.body });
        assert.equal(r.status, 200, r.text);
        assert.deepEqual(r.body.columns, [grain, ...(c.body.dimensions as string[]), 'revenue']);
        assert.match(r.body.sql, new RegExp(`^SELECT date_trunc\\('${grain}', sold_at\\) AS "?${grain}"?`));
        const n = 1 + c.body.dimensions.length;
        assert.match(r.body.sql, new RegExp(`GROUP BY ${Array.from({ length: n }, (_, i) => i + 1).join(', ')} ORDER BY`));
        const rows = await expected(`SELECT ${bucket}${c.dims}, sum(amount) FROM m.sales WHERE channel <> 'phone'${c.where} GROUP BY ALL ORDER BY ALL`);
        assert.ok(rows.length > 0);
        assert.deepEqual(r.body.rows, rows, `${grain} ${JSON.stringify(c.body)}`);
      }
    });
  }

  it('queries without a grain: dimensions only, or one total row', async () => {
    const byRegion = await s.request('POST', '/api/semantic/query', { metric: 'sales_count', dimensions: ['region'] });
    assert.equal(byRegion.status, 200, byRegion.text);
    assert.equal(byRegion.body.sql, 'SELECT region, count_star() AS sales_count FROM m.sales GROUP BY 1 ORDER BY 1');
    assert.deepEqual(byRegion.body.rows, [['north', 200], ['south', 200]]);
    const total = await s.request('POST', '/api/semantic/query', { metric: 'revenue', start: '2024-01-01', end: '2025-01-01' });
    assert.equal(total.status, 200, total.text);
    assert.doesNotMatch(total.body.sql, /GROUP BY|ORDER BY/);
    assert.deepEqual(total.body.rows, await expected(`SELECT sum(amount) FROM m.sales WHERE channel <> 'phone' AND sold_at < TIMESTAMP '2025-01-01'`));
    const limited = await s.request('POST', '/api/semantic/query', { metric: 'revenue', grain: 'day', limit: 5 });
    assert.equal(limited.body.rows.length, 5);
    assert.equal(limited.body.truncated, true);
  });

  it('refuses undeclared dimensions, grains outside the list, bad bounds and unknown metrics before any SQL', async () => {
    for (const route of ['/api/semantic/compile', '/api/semantic/query']) {
      const refused = async (body: Record<string, unknown>, status: number, code: string) => {
        const r = await s.request('POST', route, body);
        assert.equal(r.status, status, `${route} ${JSON.stringify(body)}: ${r.text}`);
        assert.equal(r.body.error.code, code);
        assert.equal(r.body.sql, undefined);
        return r.body.error;
      };
      const dim = await refused({ metric: 'revenue', dimensions: ['amount'] }, 400, 'unknown_dimension');
      assert.deepEqual(dim.details.declared, ['region', 'channel']);
      await refused({ metric: 'revenue', dimensions: ['region"; DROP TABLE m.sales; --'] }, 400, 'unknown_dimension');
      await refused({ metric: 'revenue', dimensions: ['region', 'REGION'] }, 400, 'duplicate_dimension');
      const grain = await refused({ metric: 'revenue', grain: 'minute' }, 400, 'invalid_grain');
      assert.deepEqual(grain.details.allowed, [...GRAINS]);
      await refused({ metric: 'revenue', grain: "month', sold_at) --" }, 400, 'invalid_grain');
      await refused({ metric: 'sales_count', grain: 'day' }, 400, 'no_time_dimension');
      await refused({ metric: 'sales_count', start: '2024-01-01' }, 400, 'no_time_dimension');
      await refused({ metric: 'revenue', start: "2024-01-01' OR 1=1 --" }, 400, 'invalid_time_bound');
      await refused({ metric: 'revenue', end: '2024-13-45' }, 400, 'invalid_time_bound');
      await refused({ metric: 'nope' }, 404, 'metric_not_found');
      const invalid = await refused({ metric: 'not_aggregate' }, 400, 'metric_invalid');
      assert.equal(invalid.details.file, 'metrics/mixed.yml');
      await refused({ metric: 'revenue', extra: 1 }, 400, 'invalid_request');
    }
    assert.equal(await s.db.value('SELECT count(*) FROM m.sales'), 400);
  });
});

describe('semantic: results go through the guarded runner', () => {
  let s: PluginTestServer;
  before(async () => {
    s = await startTestServer({
      plugins: [],
      builtIn: ['models', 'query', 'masking', 'semantic'],
      auth: true,
      projectYml: 'query:\n  timeout_seconds:\n    viewer: 1\n',
      files: {
        'metrics/core.yml': `${VALID}  - name: north_revenue
    model: m.sales
    measure: sum(amount)
    filters: ["region = 'north'"]
  - name: slow_total
    model: m.slow
    measure: sum(i)
`,
      },
    });
    await s.db.run(SALES_SQL);
    await s.db.run('CREATE VIEW m.slow AS SELECT i FROM range(10000000000000) t(i)');
    const admin = await s.caller('admin');
    const policy = await admin.request('POST', '/api/masking/policies', { schema_name: 'm', table_name: 'sales', column_name: 'region', method: 'redact' });
    assert.equal(policy.status, 201, policy.text);
  });
  after(async () => s?.close());

  it('applies the masking rules: a viewer may not group by a masked dimension, the admin sees it', async () => {
    const body = { metric: 'sales_count', dimensions: ['region'] };
    const admin = await (await s.caller('admin')).request('POST', '/api/semantic/query', body);
    assert.equal(admin.status, 200, admin.text);
    assert.deepEqual(admin.body.rows.map((r: unknown[]) => r[0]), ['north', 'south']);
    const viewer = await (await s.caller('viewer')).request('POST', '/api/semantic/query', body);
    assert.equal(viewer.status, 403, viewer.text);
    assert.equal(viewer.body.error.code, 'masked_column_in_predicate');
    assert.equal(viewer.body.error.details.clause, 'GROUP BY');
    const unmasked = await (await s.caller('viewer')).request('POST', '/api/semantic/query', { metric: 'sales_count' });
    assert.equal(unmasked.status, 200, unmasked.text);
    assert.deepEqual(unmasked.body.rows, [[400]]);
  });

  it('refuses a filter on a masked column for a viewer (403), as any query', async () => {
    const viewer = await (await s.caller('viewer')).request('POST', '/api/semantic/query', { metric: 'north_revenue' });
    assert.equal(viewer.status, 403, viewer.text);
    const admin = await (await s.caller('admin')).request('POST', '/api/semantic/query', { metric: 'north_revenue' });
    assert.equal(admin.status, 200, admin.text);
  });

  it("stops a metric query at the viewer's timeout (408)", async () => {
    const viewer = await (await s.caller('viewer')).request('POST', '/api/semantic/query', { metric: 'slow_total' });
    assert.equal(viewer.status, 408, viewer.text);
    assert.equal(viewer.body.error.code, 'query_timeout');
  });

  it('needs a signed-in caller', async () => {
    const anonymous = await s.request('GET', '/api/semantic/metrics');
    assert.equal(anonymous.status, 401);
    const viewer = await (await s.caller('viewer')).request('GET', '/api/semantic/metrics');
    assert.equal(viewer.status, 200);
  });
});

/** The built copy of examples/shop both groups below use (the second after the first closed its app). */
let root: string;

describe('semantic: dp metrics on examples/shop', () => {
  let app: App;
  // The commands run in this process (sdk/testing runCommand); the ones after a file changed spawn dp.
  const dp = (args: string[]) => runCommand(app, args);
  before(async () => {
    root = await builtShop();
    app = await bootApp(root);
  });
  after(async () => app?.close());

  it('lists the shop metrics with no load errors', async () => {
    const r = await dp(['metrics', '--json']);
    assert.equal(r.code, 0, r.stderr);
    const body = JSON.parse(r.stdout);
    assert.deepEqual(body.errors, []);
    assert.deepEqual(body.metrics.map((m: { name: string }) => m.name), ['total_revenue', 'active_customers', 'order_count', 'average_order_value']);
    const text = await dp(['metrics']);
    assert.match(text.stdout, /total_revenue\s+marts\.revenue_by_month\s+sum\(revenue\)/);
  });

  it('prints the SQL and runs a metric by grain, dimensions and bounds', async () => {
    const sql = await dp(['metrics', 'sql', 'order_count', '--grain', 'month', '--dimensions', 'status', '--start', '2024-01-01']);
    assert.equal(sql.code, 0, sql.stderr);
    assert.match(sql.stdout, /^SELECT date_trunc\('month', order_date\) AS "month", status, count\(DISTINCT order_id\) AS order_count FROM staging\.stg_orders WHERE/);
    assert.match(sql.stderr, /\$start = '2024-01-01'/);
    const q = await dp(['metrics', 'query', 'order_count', '--grain', 'quarter', '--dimensions', 'status', '--start', '2024-01-01', '--end', '2025-01-01', '--json']);
    assert.equal(q.code, 0, q.stderr);
    const body = JSON.parse(q.stdout);
    assert.deepEqual(body.columns, ['quarter', 'status', 'order_count']);
    assert.ok(body.rows.length > 0);
    assert.ok(body.rows.every((r: unknown[]) => r[1] !== 'returned'));
    const text = await dp(['metrics', 'query', 'total_revenue', '--dimensions', 'payment_method']);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /payment_method\s+total_revenue/);
  });

  it('refuses an undeclared dimension and a missing metric name with exit code 1', async () => {
    const dim = await dp(['metrics', 'query', 'total_revenue', '--dimensions', 'email']);
    assert.equal(dim.code, 1);
    assert.match(dim.stderr, /has no dimension 'email'/);
    const noName = await dp(['metrics', 'sql']);
    assert.equal(noName.code, 1);
    assert.match(noName.stderr, /needs a metric name/);
    const grain = await dp(['metrics', 'query', 'total_revenue', '--grain', 'minute']);
    assert.equal(grain.code, 1);
  });
});

// A fresh App per run (as a new `dp` process) reads the definitions as they are on disk after each edit.
describe('semantic: dp metrics on examples/shop after a definition changed', () => {
  const fresh = async (args: string[]) => {
    const r = await runInProcess(args);
    await closeInProcessClis();
    return r;
  };

  it('reports a broken definition through dp validate, with its file and line', async () => {
    fs.writeFileSync(path.join(root, 'metrics', 'broken.yml'), 'metrics:\n  - name: broken\n    model: marts.customer_orders\n    measure: lifetime_value\n');
    try {
      const r = await fresh(['validate', '--project', root]);
      assert.equal(r.code, 1);
      assert.match(r.stdout + r.stderr, /metrics\/broken\.yml:2: metric 'broken': 'measure' is not an aggregate expression/);
    } finally {
      fs.rmSync(path.join(root, 'metrics', 'broken.yml'));
    }
    const clean = await fresh(['validate', '--project', root]);
    assert.equal(clean.code, 0, clean.stdout + clean.stderr);
  });

  it('exits 1 when a definition does not load, still listing the valid ones', async () => {
    fs.writeFileSync(path.join(root, 'metrics', 'broken.yml'), 'metrics:\n  - name: broken\n    model: marts.customer_orders\n    measure: lifetime_value\n');
    try {
      const r = await fresh(['metrics', '--project', root]);
      assert.equal(r.code, 1);
      assert.match(r.stdout, /total_revenue/);
      assert.match(r.stderr, /metrics\/broken\.yml metric 'broken': 'measure' is not an aggregate expression/);
    } finally {
      fs.rmSync(path.join(root, 'metrics', 'broken.yml'));
    }
  });
});

// makeProject/startServer keep the plain-project path covered too (no sdk/testing).
describe('semantic: a project without metrics', () => {
  let s: TestServer;
  before(async () => {
    s = await startServer(makeProject());
  });
  after(async () => s?.close());
  it('answers an empty list', async () => {
    const r = await s.request('GET', '/api/semantic/metrics');
    assert.deepEqual(r.body, { metrics: [], errors: [] });
  });
});

describe('semantic: the metrics validator (dp validate)', () => {
  it('reports load errors with file and line, and metrics reading relations the project does not define', async () => {
    const { SEMANTIC_SERVICE } = await import('../../../sdk/index.js');
    type Semantic = import('../../../sdk/index.js').SemanticService;
    const s = await startServer(
      copyShop({
        'metrics/extra.yml': 'metrics:\n  - name: ghost\n    model: marts.ghost\n    measure: count(*)\n  - name: bad\n    model: marts.customer_orders\n    measure: lifetime_value\n  - name: seeded\n    model: seeds.orders\n    measure: sum(amount)\n',
      }),
    );
    try {
      const problems = await s.app.services.get<Semantic>(SEMANTIC_SERVICE).validate();
      assert.deepEqual(problems, [
        { file: 'metrics/extra.yml', line: 5, message: "metric 'bad': 'measure' is not an aggregate expression (no aggregate function such as sum or count)" },
        { file: 'metrics/extra.yml', message: "metric 'ghost' reads 'marts.ghost', which is not a model, seed or declared source of this project" },
      ]);
    } finally {
      await s.close();
    }
  });
});

describe('semantic: .env values never leave the server', () => {
  it('shows a value .env holds as its ${NAME} reference in definitions and compiled SQL', async () => {
    const s = await startServer(
      copyShop({
        '.env': 'PARTNER_CODE=partner_7f3a9c\n',
        'metrics/partner.yml': "metrics:\n  - name: partner_orders\n    model: staging.stg_orders\n    measure: count(*)\n    filters: [\"status <> 'partner_7f3a9c'\"]\n",
      }),
    );
    try {
      const list = await s.request('GET', '/api/semantic/metrics');
      assert.ok(!list.text.includes('partner_7f3a9c'), list.text);
      assert.ok(list.text.includes('${PARTNER_CODE}'));
      const compiled = await s.request('POST', '/api/semantic/compile', { metric: 'partner_orders' });
      assert.equal(compiled.status, 200, compiled.text);
      assert.ok(!compiled.text.includes('partner_7f3a9c'), compiled.text);
      assert.match(compiled.body.sql, /status != '\$\{PARTNER_CODE\}'/);
    } finally {
      await s.close();
    }
  });
});
