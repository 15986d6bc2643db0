import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { copyShop, startServer, type TestServer } from '../../helpers.js';

describe('models HTTP endpoints', () => {
  let s: TestServer;
  let root: string;
  before(async () => {
    root = copyShop();
    s = await startServer(root);
  });
  after(async () => s.close());

  it('lists and loads seeds, then transforms', async () => {
    const list = await s.request('GET', '/api/seeds');
    assert.equal(list.status, 200);
    assert.deepEqual(list.body.map((x: { full_name: string }) => x.full_name), ['seeds.customers', 'seeds.orders', 'seeds.payments']);
    const load = await s.request('POST', '/api/seeds', { force: false });
    assert.equal(load.status, 200);
    assert.deepEqual(load.body.results.map((r: { status: string }) => r.status), ['built', 'built', 'built']);
    const t = await s.request('POST', '/api/transform', { targets: null, force: false });
    assert.equal(t.status, 200);
    assert.equal(t.body.status, 'success');
    assert.equal(t.body.results.length, 5);
    assert.ok(t.body.results.every((r: { status: string }) => r.status === 'built'), JSON.stringify(t.body.results));
    const bad = await s.request('POST', '/api/transform', { targets: ['nope'] });
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.code, 'unknown_model');
    const runs = await s.request('GET', '/api/transform/runs?limit=5');
    assert.equal(runs.status, 200);
    assert.equal(runs.body[0].run_id, t.body.run_id);
  });

  it('lists models with the spec fields and the models-only DAG', async () => {
    const r = await s.request('GET', '/api/models');
    assert.equal(r.status, 200);
    const co = r.body.find((m: { full_name: string }) => m.full_name === 'marts.customer_orders');
    assert.deepEqual(Object.keys(co).sort(), ['content_hash', 'depends_on', 'full_name', 'kind', 'materialized', 'name', 'path', 'schema']);
    assert.deepEqual([...co.depends_on].sort(), ['staging.stg_customers', 'staging.stg_orders']);
    const dag = await s.request('GET', '/api/dag');
    assert.equal(dag.body.nodes.length, 5);
    assert.deepEqual(
      dag.body.edges.map((e: { source: string; target: string }) => `${e.source}>${e.target}`).sort(),
      ['staging.stg_customers>marts.customer_orders', 'staging.stg_orders>marts.customer_orders', 'staging.stg_orders>marts.revenue_by_month', 'staging.stg_payments>marts.revenue_by_month'],
    );
  });

  it('creates a model file with directives; 409 when it exists; names are validated', async () => {
    const body = { name: 'big_customers', schema_name: 'marts', materialized: 'view', sql: 'SELECT * FROM marts.customer_orders WHERE order_count > 1' };
    const r = await s.request('POST', '/api/models/create', body);
    assert.equal(r.status, 201, r.text);
    assert.equal(r.body.path, 'transform/marts/big_customers.sql');
    assert.equal(fs.readFileSync(path.join(root, r.body.path), 'utf8'), `-- @config materialized=view, schema=marts\n${body.sql}\n`);
    assert.equal((await s.request('POST', '/api/models/create', body)).status, 409);
    const badName = await s.request('POST', '/api/models/create', { ...body, name: '../x' });
    assert.equal(badName.status, 400);
    const badSql = await s.request('POST', '/api/models/create', { ...body, name: 'other', sql: 'DROP TABLE x' });
    assert.equal(badSql.status, 400);
    assert.equal(badSql.body.error.code, 'invalid_sql');
    const models = await s.request('GET', '/api/models');
    assert.ok(models.body.some((m: { full_name: string }) => m.full_name === 'marts.big_customers'));
  });

  it('serves the notebook view: SQL, sample rows, lineage, upstream and downstream', async () => {
    const r = await s.request('GET', '/api/models/customer_orders/notebook-view');
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.model, 'marts.customer_orders');
    assert.match(r.body.sql, /@config materialized=table/);
    assert.ok(r.body.sample.rows.length > 0);
    assert.ok(r.body.sample.columns.includes('customer_id'));
    assert.deepEqual([...r.body.upstream].sort(), ['staging.stg_customers', 'staging.stg_orders']);
    assert.deepEqual(r.body.downstream, ['marts.big_customers']);
    assert.ok(r.body.lineage === null ? typeof r.body.lineage_error === 'string' : typeof r.body.lineage.columns === 'object');
    assert.equal((await s.request('GET', '/api/models/nope/notebook-view')).status, 404);
  });

  it('checks models', async () => {
    const r = await s.request('POST', '/api/check', {});
    assert.equal(r.status, 200);
    assert.equal(r.body.status, 'pass', JSON.stringify(r.body.validation));
    assert.equal(r.body.exit_code, 0);
    assert.equal(r.body.validation.failed, 0);
  });

  it('diffs model SQL against the materialized tables by key and by full row', async () => {
    const same = await s.request('POST', '/api/diff', { targets: ['customer_orders'], target_schema: null, full: false });
    assert.equal(same.status, 200);
    assert.equal(same.body.models[0].status, 'unchanged');
    const file = path.join(root, 'transform/marts/customer_orders.sql');
    fs.writeFileSync(file, fs.readFileSync(file, 'utf8').replace('ON c.customer_id = t.customer_id', 'ON c.customer_id = t.customer_id\nWHERE c.customer_id > 2').replace('c.country,', "lower(c.country) AS country,\n    1 AS extra,"));
    const changed = await s.request('POST', '/api/diff', { targets: ['customer_orders'], full: true });
    const d = changed.body.models[0];
    assert.equal(d.status, 'changed');
    assert.deepEqual(d.key, ['customer_id']);
    assert.equal(d.rows_before, 10);
    assert.equal(d.rows_after, 8);
    assert.equal(d.removed, 2);
    assert.equal(d.added, 0);
    assert.ok(d.modified > 0);
    assert.deepEqual(d.schema_change.added.map((c: { name: string }) => c.name), ['extra']);
    assert.equal(d.samples.removed.length, 2);
    const rev = await s.request('POST', '/api/diff', { targets: ['revenue_by_month'] });
    assert.equal(rev.body.models[0].key, null);
    assert.equal(rev.body.models[0].modified, null);
    assert.equal((await s.request('POST', '/api/diff', { against: 'main' })).body.error.code, 'not_a_git_repository');
  });

  it('lints with file, line and rule, and fixes keeping directives at the top', async () => {
    const messy = '-- @config materialized=table, schema=marts\n-- @assert row_count > 0\nwith unused as (select 1 as x), used as (select customer_id from marts.customer_orders)   \nselect customer_id,\n    count(*) from used\n\tgroup by customer_id\n';
    fs.writeFileSync(path.join(root, 'transform/marts/messy.sql'), messy);
    const r = await s.request('POST', '/api/lint', { fix: false });
    assert.equal(r.status, 200);
    const rules = (file: string) => r.body.findings.filter((f: { file: string }) => f.file === file).map((f: { rule: string; line: number }) => `${f.line}:${f.rule}`);
    assert.deepEqual(rules('transform/marts/messy.sql'), [
      '3:keyword-case',
      '3:trailing-whitespace',
      '3:unused-cte',
      '4:keyword-case',
      '5:implicit-column-alias',
      '5:keyword-case',
      '6:inconsistent-indentation',
      '6:keyword-case',
    ]);
    assert.deepEqual(rules('transform/marts/big_customers.sql'), ['2:select-star-in-marts']);
    assert.deepEqual(rules('transform/staging/stg_orders.sql'), []);
    const fixed = await s.request('POST', '/api/lint', { fix: true });
    assert.ok(fixed.body.fixed.includes('transform/marts/messy.sql'));
    const text = fs.readFileSync(path.join(root, 'transform/marts/messy.sql'), 'utf8');
    assert.ok(text.startsWith('-- @config materialized=table, schema=marts\n-- @assert row_count > 0\nWITH'), text);
    const after = fixed.body.findings.filter((f: { file: string }) => f.file === 'transform/marts/messy.sql').map((f: { rule: string }) => f.rule);
    assert.deepEqual(after.sort(), ['implicit-column-alias', 'unused-cte']);
  });
});
