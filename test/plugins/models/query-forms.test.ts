/**
 * Every query form DuckDB accepts after CREATE TABLE ... AS is a model: it builds, its
 * dependencies come from DuckDB's parse, its lineage names the built relation's real columns
 * traced to their sources, lint reads it, and a reader sees masked values through it.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { App } from '../../../kernel/app.js';
import type { Caller, LineageService, ModelsService } from '../../../sdk/index.js';
import { bootApp, makeProject } from '../../helpers.js';

const admin: Caller = { username: 'a', role: 'admin', authenticated: true };
const viewer: Caller = { username: 'v', role: 'viewer', authenticated: true };

const FIXTURE = `CREATE SCHEMA bronze;
  CREATE TABLE bronze.orders (order_id INTEGER, customer_id INTEGER, status VARCHAR, amount DOUBLE);
  INSERT INTO bronze.orders VALUES (1, 1, 'open', 10), (2, 1, 'done', 5), (3, 2, 'open', 3);
  CREATE TABLE bronze.customers (customer_id INTEGER, email VARCHAR, q1 INTEGER, q2 INTEGER);
  INSERT INTO bronze.customers VALUES (1, 'ada@example.com', 7, 8), (2, 'alan@example.org', 1, 2);`;

const FORMS: Record<string, string> = {
  pivot: 'PIVOT bronze.orders ON status USING SUM(amount) GROUP BY customer_id',
  unpivot: 'UNPIVOT bronze.customers ON q1, q2 INTO NAME quarter VALUE sales',
  from_first: 'FROM bronze.customers SELECT customer_id, email WHERE customer_id > 0',
  bare_from: 'FROM bronze.customers',
  values: "VALUES (1, 'north'), (2, 'south')",
  set_operation: 'SELECT customer_id, email FROM bronze.customers UNION BY NAME SELECT customer_id, status AS email FROM bronze.orders',
  extensions: 'SELECT * EXCLUDE (q1, q2) REPLACE (upper(email) AS email), q1 + q2 AS total FROM bronze.customers QUALIFY row_number() OVER (PARTITION BY customer_id) = 1',
};

describe('query forms as models', () => {
  let app: App;
  let models: ModelsService;
  let lineage: LineageService;
  let root: string;
  before(async () => {
    const files: Record<string, string> = {};
    for (const [name, sql] of Object.entries(FORMS)) files[`transform/lin/${name}.sql`] = `-- @config materialized=table, schema=lin\n${sql}\n`;
    // A downstream model reading the PIVOT's data-named columns through *.
    files['transform/lin/after_pivot.sql'] = '-- @config materialized=view, schema=lin\nSELECT * FROM lin.pivot\n';
    root = makeProject(files);
    app = await bootApp(root);
    await app.db.run(FIXTURE);
    models = app.services.get<ModelsService>('models');
    lineage = app.services.get<LineageService>('lineage');
    const summary = await models.transform({});
    assert.equal(summary.status, 'success', JSON.stringify(summary.results.filter((r) => r.error)));
    await app.queries.run({ sql: `CREATE MASKING POLICY ON bronze.customers.email METHOD partial CONFIG '{"show_first": 1}'`, caller: admin, purpose: 'query' });
  });
  after(async () => app.close());

  const columnsOf = async (table: string) =>
    (await app.db.all<{ c: string }>(`SELECT column_name AS c FROM duckdb_columns() WHERE schema_name = 'lin' AND table_name = '${table}' ORDER BY column_index`)).map((r) => r.c);
  const deps = async (name: string) => (await models.get(name))!.depends_on;
  const sources = async (name: string) => {
    const l = await lineage.lineage(`lin.${name}`);
    return Object.fromEntries(Object.entries(l.columns).map(([col, s]) => [col, s.map((x) => `${x.source_table}.${x.source_column}`).sort()]));
  };
  const viewerRows = async (sql: string) => (await app.queries.run({ sql, caller: viewer, purpose: 'query' })).rows;

  it('PIVOT: builds, depends on its source, lineage has the data-named columns traced to ON and USING', async () => {
    assert.deepEqual(await columnsOf('pivot'), ['customer_id', 'done', 'open']);
    assert.deepEqual(await deps('pivot'), ['bronze.orders']);
    assert.deepEqual(await sources('pivot'), {
      customer_id: ['bronze.orders.customer_id'],
      done: ['bronze.orders.amount', 'bronze.orders.status'],
      open: ['bronze.orders.amount', 'bronze.orders.status'],
    });
    // Downstream `SELECT *` expands to the PIVOT's real columns.
    assert.deepEqual(Object.keys((await lineage.lineage('lin.after_pivot')).columns), ['customer_id', 'done', 'open']);
    assert.deepEqual((await lineage.lineage('lin.after_pivot')).columns.open, [{ source_table: 'lin.pivot', source_column: 'open' }]);
    assert.deepEqual(await app.db.all('SELECT customer_id, done, open FROM lin.pivot ORDER BY customer_id'), [
      { customer_id: 1, done: 5, open: 10 },
      { customer_id: 2, done: null, open: 3 },
    ]);
  });

  it('UNPIVOT: lineage lists the kept columns and the name/value columns from the unpivoted ones', async () => {
    assert.deepEqual(await columnsOf('unpivot'), ['customer_id', 'email', 'quarter', 'sales']);
    assert.deepEqual(await deps('unpivot'), ['bronze.customers']);
    assert.deepEqual(await sources('unpivot'), {
      customer_id: ['bronze.customers.customer_id'],
      email: ['bronze.customers.email'],
      quarter: ['bronze.customers.q1', 'bronze.customers.q2'],
      sales: ['bronze.customers.q1', 'bronze.customers.q2'],
    });
    // A reader of the model sees the masked column masked.
    assert.deepEqual(await viewerRows("SELECT email FROM lin.unpivot WHERE quarter = 'q1' ORDER BY customer_id"), [['a**************'], ['a***************']]);
  });

  it('FROM-first: builds with the selected columns', async () => {
    assert.deepEqual(await columnsOf('from_first'), ['customer_id', 'email']);
    assert.deepEqual(await deps('from_first'), ['bronze.customers']);
    assert.deepEqual(await sources('from_first'), { customer_id: ['bronze.customers.customer_id'], email: ['bronze.customers.email'] });
    assert.deepEqual(await viewerRows('SELECT email FROM lin.from_first ORDER BY customer_id'), [['a**************'], ['a***************']]);
  });

  it('bare FROM: every source column, each traced', async () => {
    assert.deepEqual(await columnsOf('bare_from'), ['customer_id', 'email', 'q1', 'q2']);
    assert.deepEqual(await deps('bare_from'), ['bronze.customers']);
    assert.deepEqual(await sources('bare_from'), {
      customer_id: ['bronze.customers.customer_id'],
      email: ['bronze.customers.email'],
      q1: ['bronze.customers.q1'],
      q2: ['bronze.customers.q2'],
    });
    assert.deepEqual(await viewerRows('SELECT email FROM lin.bare_from ORDER BY customer_id'), [['a**************'], ['a***************']]);
  });

  it('VALUES: builds, no dependencies, constant columns have no sources', async () => {
    assert.deepEqual(await columnsOf('values'), ['col0', 'col1']);
    assert.deepEqual(await deps('values'), []);
    assert.deepEqual(await sources('values'), { col0: [], col1: [] });
  });

  it('set operation (UNION BY NAME): both branches feed each column', async () => {
    assert.deepEqual(await columnsOf('set_operation'), ['customer_id', 'email']);
    assert.deepEqual((await deps('set_operation')).sort(), ['bronze.customers', 'bronze.orders']);
    assert.deepEqual(await sources('set_operation'), {
      customer_id: ['bronze.customers.customer_id', 'bronze.orders.customer_id'],
      email: ['bronze.customers.email', 'bronze.orders.status'],
    });
  });

  it('DuckDB extensions (EXCLUDE, REPLACE, QUALIFY): real columns traced', async () => {
    assert.deepEqual(await columnsOf('extensions'), ['customer_id', 'email', 'total']);
    assert.deepEqual(await sources('extensions'), {
      customer_id: ['bronze.customers.customer_id'],
      email: ['bronze.customers.email'],
      total: ['bronze.customers.q1', 'bronze.customers.q2'],
    });
  });

  it('lint reads every form without a parse error, and SELECT * in marts still counts for bare FROM only', async () => {
    const report = await runLintReport(app);
    const parseErrors = report.findings.filter((f: { rule: string }) => f.rule === 'parse-error');
    assert.deepEqual(parseErrors, []);
    assert.equal(report.files, Object.keys(FORMS).length + 1);
    fs.mkdirSync(path.join(root, 'transform/marts'), { recursive: true });
    fs.writeFileSync(path.join(root, 'transform/marts/m_pivot.sql'), '-- @config materialized=table, schema=marts\nPIVOT bronze.orders ON status USING SUM(amount) GROUP BY customer_id\n');
    fs.writeFileSync(path.join(root, 'transform/marts/m_bare.sql'), '-- @config materialized=table, schema=marts\nFROM bronze.orders\n');
    const marts = (await runLintReport(app)).findings.filter((f: { rule: string }) => f.rule === 'select-star-in-marts').map((f: { file: string }) => f.file);
    assert.deepEqual(marts, ['transform/marts/m_bare.sql']);
    fs.rmSync(path.join(root, 'transform/marts'), { recursive: true });
  });

  it('a reader running each form ad hoc over the masked table never sees a raw value', async () => {
    const adHoc = [
      'PIVOT bronze.customers ON customer_id USING first(email)',
      'PIVOT bronze.customers ON q1 IN (7, 1) USING first(email) GROUP BY customer_id',
      'UNPIVOT bronze.customers ON q1, q2 INTO NAME quarter VALUE sales',
      'FROM bronze.customers SELECT email',
      'FROM bronze.customers',
      'SELECT email FROM bronze.customers UNION ALL SELECT status FROM bronze.orders',
      'SELECT * EXCLUDE (q1) FROM bronze.customers',
      'SELECT COLUMNS(\'e.*\') FROM bronze.customers',
    ];
    for (const sql of adHoc) {
      let text: string;
      try {
        text = JSON.stringify(await viewerRows(sql));
      } catch (e: any) {
        // Refusing the query is also safe; answering with a raw address is not.
        assert.ok(e.status === 403 || e.status === 400, `${sql}: ${e.message}`);
        continue;
      }
      assert.ok(!/ada@example\.com|alan@example\.org/.test(text), `${sql} leaked a raw value: ${text}`);
    }
  });

  it('dp check binds every form', async () => {
    let report: any;
    const io = { out() {}, err() {}, progress() {}, table() {}, json(v: unknown) { report = v; }, wantsJson: true };
    await app.commands.get('check')!.handler({ _: [] } as never, io as never);
    const byModel = Object.fromEntries(report.validation.models.map((m: any) => [m.model, m]));
    for (const name of Object.keys(FORMS)) {
      assert.equal(byModel[`lin.${name}`].valid, true, JSON.stringify(byModel[`lin.${name}`]));
      assert.equal(byModel[`lin.${name}`].bound, true, JSON.stringify(byModel[`lin.${name}`]));
    }
  });

  it('DESCRIBE is refused as a model with a hint, naming the file', async () => {
    fs.writeFileSync(path.join(root, 'transform/lin/described.sql'), '-- @config materialized=table, schema=lin\nDESCRIBE bronze.orders\n');
    const s = await models.transform({ targets: ['described'] });
    assert.equal(s.status, 'error');
    assert.match(s.results[0]!.error!, /transform\/lin\/described\.sql:\d+: DESCRIBE, SHOW and SUMMARIZE cannot follow CREATE TABLE AS/);
    fs.rmSync(path.join(root, 'transform/lin/described.sql'));
  });
});

async function runLintReport(app: App): Promise<{ files: number; findings: Array<{ rule: string; file: string }> }> {
  let report: unknown;
  const io = { out() {}, err() {}, progress() {}, table() {}, json(v: unknown) { report = v; }, wantsJson: true };
  await app.commands.get('lint')!.handler({ _: [] } as never, io as never);
  return report as { files: number; findings: Array<{ rule: string; file: string }> };
}
