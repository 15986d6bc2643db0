import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DuckDatabase } from '../../../kernel/database.js';
import { columnLineage, UnparseableSql, type LineageEnv } from '../../../plugins/lineage/columns.js';
import { regexLineage } from '../../../plugins/lineage/regex-fallback.js';

const src = (source_table: string, source_column: string) => ({ source_table, source_column });

describe('column lineage from the DuckDB parse tree', () => {
  // The kernel's own database port on an in-memory DuckDB: the same parse/deparse a plugin gets as ctx.db.
  const db = new DuckDatabase(':memory:');
  let live: Map<string, string[]>;
  const DEPS = ['raw.orders', 'raw.customers', 'raw.payments'];

  const env = (withLive: boolean): LineageEnv => ({
    parse: (sql) => db.parse(sql),
    deparse: (tree) => db.deparse(tree),
    describe: async (sql) => (await db.all<{ column_name: string }>(`DESCRIBE ${sql}`)).map((r) => r.column_name),
    relationColumns: (rel) => (withLive ? live.get(rel.toLowerCase()) : undefined),
  });
  const lineage = async (sql: string, withLive = true) => (await columnLineage(sql, DEPS, env(withLive))).columns;

  before(async () => {
    await db.run(`CREATE SCHEMA raw;
      CREATE TABLE raw.orders (order_id INT, customer_id INT, amount DECIMAL(10,2), status VARCHAR, order_date DATE);
      CREATE TABLE raw.customers (customer_id INT, name VARCHAR, country VARCHAR);
      CREATE TABLE raw.payments (payment_id INT, order_id INT, amount DECIMAL(10,2), method VARCHAR)`);
    live = new Map();
    for (const r of await db.all<{ s: string; t: string; c: string }>(
      `SELECT schema_name AS s, table_name AS t, column_name AS c FROM duckdb_columns() WHERE schema_name = 'raw' ORDER BY s, t, column_index`,
    )) {
      const k = `${r.s}.${r.t}`;
      live.set(k, [...(live.get(k) ?? []), r.c]);
    }
  });
  after(() => db.close());

  it('traces direct references and aliases; literals and now() map to []', async () => {
    assert.deepEqual(await lineage(`SELECT order_id, o.amount AS total, o.status state, 1 AS one, now() AS loaded_at, current_date AS today FROM raw.orders AS o`), {
      order_id: [src('raw.orders', 'order_id')],
      total: [src('raw.orders', 'amount')],
      state: [src('raw.orders', 'status')],
      one: [],
      loaded_at: [],
      today: [],
    });
  });

  it('names unaliased expressions the way DuckDB does and reuses select-list aliases', async () => {
    assert.deepEqual(await lineage(`SELECT amount * 2 AS doubled, doubled + 1 AS plus_one, upper(status) FROM raw.orders`), {
      doubled: [src('raw.orders', 'amount')],
      plus_one: [src('raw.orders', 'amount')],
      'upper(status)': [src('raw.orders', 'status')],
    });
  });

  it('follows a three-level CTE chain', async () => {
    const sql = `
      WITH base AS (SELECT order_id, customer_id, amount FROM raw.orders),
           enriched AS (SELECT b.order_id, b.amount * 1.2 AS gross, c.country FROM base b JOIN raw.customers c ON c.customer_id = b.customer_id),
           summary AS (SELECT country, sum(gross) AS revenue, count(order_id) AS orders FROM enriched GROUP BY country)
      SELECT country AS market, revenue, orders FROM summary`;
    assert.deepEqual(await lineage(sql), {
      market: [src('raw.customers', 'country')],
      revenue: [src('raw.orders', 'amount')],
      orders: [src('raw.orders', 'order_id')],
    });
  });

  it('follows nested CTEs and subqueries (FROM, scalar, correlated)', async () => {
    const sql = `
      WITH outer_cte AS (
        WITH inner_cte AS (SELECT customer_id, name FROM raw.customers)
        SELECT customer_id, upper(name) AS name_uc FROM inner_cte
      )
      SELECT s.customer_id, s.name_uc,
             (SELECT max(p.amount) FROM raw.payments p JOIN raw.orders o2 ON o2.order_id = p.order_id WHERE o2.customer_id = s.customer_id) AS biggest_payment
      FROM (SELECT * FROM outer_cte) AS s`;
    assert.deepEqual(await lineage(sql), {
      customer_id: [src('raw.customers', 'customer_id')],
      name_uc: [src('raw.customers', 'name')],
      biggest_payment: [src('raw.payments', 'amount')],
    });
  });

  it('takes window function arguments plus PARTITION BY / ORDER BY columns, over a join', async () => {
    const sql = `
      SELECT o.order_id,
             row_number() OVER (PARTITION BY c.country ORDER BY o.order_date) AS rank_in_country,
             sum(p.amount) OVER (PARTITION BY o.customer_id) AS customer_paid
      FROM raw.orders o
      JOIN raw.customers c ON c.customer_id = o.customer_id
      JOIN raw.payments p ON p.order_id = o.order_id`;
    assert.deepEqual(await lineage(sql), {
      order_id: [src('raw.orders', 'order_id')],
      rank_in_country: [src('raw.customers', 'country'), src('raw.orders', 'order_date')],
      customer_paid: [src('raw.payments', 'amount'), src('raw.orders', 'customer_id')],
    });
  });

  it('takes CASE conditions and branches', async () => {
    assert.deepEqual(
      await lineage(`SELECT CASE WHEN status = 'returned' THEN -amount WHEN status IS NULL THEN 0 ELSE amount END AS net, CASE WHEN 1 = 1 THEN 'x' END AS flag FROM raw.orders`),
      { net: [src('raw.orders', 'status'), src('raw.orders', 'amount')], flag: [] },
    );
  });

  it('merges all branches of a UNION ALL by position, named by the first branch', async () => {
    const sql = `
      SELECT order_id AS id, amount AS value, 'order' AS kind FROM raw.orders
      UNION ALL SELECT payment_id, amount, method FROM raw.payments
      UNION ALL SELECT customer_id, NULL, country FROM raw.customers`;
    assert.deepEqual(await lineage(sql), {
      id: [src('raw.orders', 'order_id'), src('raw.payments', 'payment_id'), src('raw.customers', 'customer_id')],
      value: [src('raw.orders', 'amount'), src('raw.payments', 'amount')],
      kind: [src('raw.payments', 'method'), src('raw.customers', 'country')],
    });
  });

  it('resolves a USING join column to both sides and GROUP BY ALL aggregates', async () => {
    const sql = `SELECT customer_id, country, count(*) AS orders, sum(amount) AS total FROM raw.orders JOIN raw.customers USING (customer_id) GROUP BY ALL`;
    assert.deepEqual(await lineage(sql), {
      customer_id: [src('raw.orders', 'customer_id'), src('raw.customers', 'customer_id')],
      country: [src('raw.customers', 'country')],
      orders: [],
      total: [src('raw.orders', 'amount')],
    });
  });

  it('expands SELECT * over a join with the live database (duplicates named like CREATE TABLE AS)', async () => {
    assert.deepEqual(await lineage(`SELECT * FROM raw.orders o JOIN raw.customers c ON c.customer_id = o.customer_id`), {
      order_id: [src('raw.orders', 'order_id')],
      customer_id: [src('raw.orders', 'customer_id')],
      amount: [src('raw.orders', 'amount')],
      status: [src('raw.orders', 'status')],
      order_date: [src('raw.orders', 'order_date')],
      customer_id_1: [src('raw.customers', 'customer_id')],
      name: [src('raw.customers', 'name')],
      country: [src('raw.customers', 'country')],
    });
    assert.deepEqual(Object.keys(await lineage(`SELECT * FROM raw.orders JOIN raw.customers USING (customer_id)`)), [
      'order_id', 'customer_id', 'amount', 'status', 'order_date', 'name', 'country',
    ]);
  });

  it('attributes SELECT * over a join to the first upstream dependency without a live database', async () => {
    const sql = `SELECT * FROM raw.orders o JOIN raw.customers c ON c.customer_id = o.customer_id`;
    assert.deepEqual(await lineage(sql, false), { '*': [src('raw.orders', '*')] });
    const r = await columnLineage(sql, DEPS, env(false));
    assert.equal(r.complete, false);
    // Named columns still resolve through the unknown relation they are qualified with.
    assert.deepEqual(await lineage(`SELECT c.country, o.* FROM raw.orders o JOIN raw.customers c USING (customer_id)`, false), {
      country: [src('raw.customers', 'country')],
      '*': [src('raw.orders', '*')],
    });
  });

  it('expands t.*, * EXCLUDE, * REPLACE and * RENAME', async () => {
    assert.deepEqual(await lineage(`SELECT c.* EXCLUDE (name), o.* EXCLUDE (status, order_date, customer_id) REPLACE (o.amount * 100 AS amount) FROM raw.customers c JOIN raw.orders o USING (customer_id)`), {
      customer_id: [src('raw.customers', 'customer_id')],
      country: [src('raw.customers', 'country')],
      order_id: [src('raw.orders', 'order_id')],
      amount: [src('raw.orders', 'amount')],
    });
    assert.deepEqual(await lineage(`SELECT * RENAME (name AS customer_name) FROM raw.customers`), {
      customer_id: [src('raw.customers', 'customer_id')],
      customer_name: [src('raw.customers', 'name')],
      country: [src('raw.customers', 'country')],
    });
  });

  it('expands COLUMNS(regex) and COLUMNS(lambda) through the live database', async () => {
    assert.deepEqual(await lineage(`SELECT COLUMNS('^(order|customer)_id$') FROM raw.orders`), {
      order_id: [src('raw.orders', 'order_id')],
      customer_id: [src('raw.orders', 'customer_id')],
    });
    assert.deepEqual(await lineage(`SELECT max(COLUMNS(c -> c LIKE '%amount%' OR c = 'method')) FROM raw.payments`), {
      amount: [src('raw.payments', 'amount')],
      method: [src('raw.payments', 'method')],
    });
    assert.deepEqual(await lineage(`SELECT COLUMNS('amount') FROM raw.orders`, false), { '*': [src('raw.orders', '*')] });
  });

  it('resolves unqualified names through depends_on and reads through an unknown star', async () => {
    const r = await columnLineage(`WITH x AS (SELECT * FROM orders) SELECT x.status, amount + 1 AS a1 FROM x`, ['raw.orders'], env(false));
    assert.deepEqual(r.columns, { status: [src('raw.orders', 'status')], a1: [src('raw.orders', 'amount')] });
    assert.deepEqual(r.relations, ['raw.orders']);
  });

  it('rejects SQL the parser cannot read, and the regex fallback extracts what it can', async () => {
    const sql = `-- templated
      SELECT o.order_id, o.amount AS total, c.country, status
      FROM raw.orders AS o JOIN raw.customers c ON c.customer_id = o.customer_id
      WHERE o.order_date > {{ start_date }}`;
    await assert.rejects(columnLineage(sql, DEPS, env(true)), UnparseableSql);
    const r = regexLineage(sql, DEPS);
    assert.deepEqual(r.columns, {
      order_id: [src('raw.orders', 'order_id')],
      total: [src('raw.orders', 'amount')],
      country: [src('raw.customers', 'country')],
      status: [src('raw.orders', 'status')],
    });
    assert.deepEqual(r.relations, ['raw.orders', 'raw.customers']);
  });
});
