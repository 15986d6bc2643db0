/**
 * The mysql connector against a real MariaDB server (test/support/databases.ts), driven through
 * the dp CLI (in this process, runInProcess: the same parsing, handlers, output and exit codes):
 * `dp connect mysql` with the shortcut options, `dp connectors sync`, a high-watermark table over
 * three runs with new rows in between, `dp cdc status` and `dp cdc reset`, and the password
 * nowhere but .env. After a command or an edit changes project.yml or .env the App is booted
 * again (closeInProcessClis), as the next `dp` process would read them afresh.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
import mysql from 'mysql2/promise';
import { closeInProcessClis, makeProject, runInProcess } from '../../helpers.js';
import { startMariaDb, type RunningDatabase } from '../../support/databases.js';

describe('mysql connector (MariaDB) through the dp CLI', () => {
  let source: RunningDatabase;
  let conn: mysql.Connection;
  let root: string;

  before(async () => {
    source = await startMariaDb();
    conn = await mysql.createConnection({ host: source.host, port: source.port, user: source.user, password: source.password, database: source.database, multipleStatements: true });
    await conn.query(`
      CREATE TABLE customers (id INT UNSIGNED PRIMARY KEY, name VARCHAR(50), balance DECIMAL(14,4), big BIGINT, joined DATETIME(6), birthday DATE, attrs JSON, active TINYINT(1), photo BLOB);
      INSERT INTO customers VALUES
        (1, 'Ada', 1234.5678, 9007199254740993, '2024-03-01 10:11:12.123456', '1815-12-10', '{"tier": "gold"}', 1, X'00FF'),
        (2, 'Grace', -0.0001, NULL, '2024-03-02 00:00:00.000000', '0000-00-00', NULL, 0, NULL);
      CREATE TABLE orders (id INT PRIMARY KEY, customer_id INT, total DECIMAL(10,2), updated_at DATETIME(6) NOT NULL);
    `);
    await insertOrders(1, 500);
    root = makeProject({ 'project.yml': 'name: mytest\ndatabase:\n  path: w.duckdb\n' });
  });

  // Each test may change project.yml: the next one boots on what it left.
  afterEach(closeInProcessClis);
  after(async () => {
    await conn?.end();
    await source?.stop();
  });

  async function insertOrders(from: number, to: number) {
    const rows: unknown[][] = [];
    for (let i = from; i <= to; i++) rows.push([i, i % 7, (i * 3.5).toFixed(2), new Date(Date.UTC(2024, 0, 1) + i * 1000).toISOString().replace('T', ' ').replace('Z', '')]);
    await conn.query('INSERT INTO orders VALUES ?', [rows]);
  }

  const dp = (...args: string[]) => runInProcess([...args, '--project', root]);
  const query = async (sql: string) => JSON.parse((await dp('query', sql, '--json')).stdout);

  it('dp connect mysql tests, discovers, writes the script and project.yml; the password goes to .env only', async () => {
    const r = await dp('connect', 'mysql', '-n', 'crm', '--host', source.host, '--port', String(source.port), '--database', source.database, '--user', source.user, '--password', source.password, '-t', 'customers', '--set', 'connect_timeout_seconds=5');
    assert.equal(r.code, 0, r.stderr + r.stdout);
    assert.match(r.stdout, /Connector crm \(mysql\) set up/);
    assert.ok(!r.stdout.includes(source.password) && !r.stderr.includes(source.password));
    const yml = fs.readFileSync(path.join(root, 'project.yml'), 'utf8');
    assert.ok(!yml.includes(source.password));
    assert.match(yml, /password: \$\{CRM_PASSWORD\}/);
    assert.match(yml, /connect_timeout_seconds: 5/);
    assert.ok(fs.readFileSync(path.join(root, '.env'), 'utf8').includes(`CRM_PASSWORD=${source.password}`));
    assert.ok(!fs.readFileSync(path.join(root, 'ingest', 'connector_crm.ts'), 'utf8').includes(source.password));
    // What the next process would read: the new project.yml and .env.
    await closeInProcessClis();

    const test = await dp('connectors', 'test', 'crm');
    assert.equal(test.code, 0, test.stderr);
    assert.match(test.stdout, /ok: connected: 10\./);
    const discover = await dp('connect', 'mysql', '--discover', '--config', JSON.stringify({ host: source.host, port: source.port, database: source.database, user: source.user, password: source.password }), '--json');
    assert.equal(discover.code, 0, discover.stderr);
    const customers = JSON.parse(discover.stdout).find((t: { name: string }) => t.name === 'customers');
    assert.deepEqual(
      customers.columns.map((c: { type: string }) => c.type),
      ['BIGINT', 'VARCHAR', 'DECIMAL(14,4)', 'BIGINT', 'TIMESTAMP', 'DATE', 'VARCHAR', 'INTEGER', 'BLOB'],
    );
    const wrong = await dp('connect', 'mysql', '--test', '--host', source.host, '--port', String(source.port), '--database', source.database, '--user', source.user, '--password', 'nope');
    assert.equal(wrong.code, 1);
    assert.match(wrong.stdout, /failed: authentication failed/);
  });

  it('dp connectors sync loads exact values (BIGINT, DECIMAL, microseconds, zero dates as NULL)', async () => {
    const r = await dp('connectors', 'sync', 'crm', '--json');
    assert.equal(r.code, 0, r.stderr + r.stdout);
    const results = JSON.parse(r.stdout);
    assert.equal(results[0].status, 'success');
    assert.equal(results[0].rows_synced, 2);
    const rows = await query('SELECT id, name, balance::VARCHAR, big::VARCHAR, joined::VARCHAR, birthday::VARCHAR, attrs, active, hex(photo) FROM landing.customers ORDER BY id');
    assert.deepEqual(rows.rows, [
      [1, 'Ada', '1234.5678', '9007199254740993', '2024-03-01 10:11:12.123456', '1815-12-10', '{"tier": "gold"}', 1, '00FF'],
      [2, 'Grace', '-0.0001', null, '2024-03-02 00:00:00', null, null, 0, null],
    ]);
  });

  it('high watermark over three runs with new rows in between; cdc status and reset through the CLI', async () => {
    const yml = fs.readFileSync(path.join(root, 'project.yml'), 'utf8');
    fs.writeFileSync(path.join(root, 'project.yml'), yml.replace(/(\n {6}- name: customers\n {8}cdc_mode: full_refresh\n)/, '$1      - name: orders\n        cdc_mode: high_watermark\n        cdc_column: updated_at\n'));
    const first = await dp('connectors', 'sync', 'crm', '--table', 'orders', '--json');
    assert.equal(first.code, 0, first.stderr + first.stdout);
    assert.equal(JSON.parse(first.stdout)[0].rows_synced, 500);
    for (let run = 0; run < 3; run++) {
      await insertOrders(501 + run * 50, 550 + run * 50);
      const r = await dp('connectors', 'sync', 'crm', '--table', 'orders', '--json');
      assert.equal(r.code, 0, r.stderr);
      const [res] = JSON.parse(r.stdout);
      assert.equal(res.rows_synced, 50, `run ${run}`);
      assert.equal(res.watermark_after, new Date(Date.UTC(2024, 0, 1) + (550 + run * 50) * 1000).toISOString().replace('T', ' ').replace('Z', '').replace('.000', '.000000'));
    }
    assert.deepEqual((await query('SELECT count(*), count(DISTINCT id), max(id) FROM landing.orders')).rows, [[650, 650, 650]]);

    const status = await dp('cdc', 'status', '--connector', 'crm', '--json');
    assert.equal(status.code, 0, status.stderr);
    const orders = JSON.parse(status.stdout).find((x: { table_name: string }) => x.table_name === 'orders');
    assert.equal(orders.cdc_mode, 'high_watermark');
    assert.equal(orders.watermark_value, '2024-01-01 00:10:50.000000');
    assert.equal(orders.rows_synced, 50);

    const reset = await dp('cdc', 'reset', '--connector', 'crm', '--table', 'orders');
    assert.equal(reset.code, 0, reset.stderr);
    assert.match(reset.stdout, /Reset 1 table state of crm/);
    const full = await dp('connectors', 'sync', 'crm', '--table', 'orders', '--json');
    assert.equal(JSON.parse(full.stdout)[0].rows_synced, 650);
    assert.deepEqual((await query('SELECT count(*), count(DISTINCT id) FROM landing.orders')).rows, [[650, 650]]);

    const health = await dp('connectors', 'health', '--json');
    assert.equal(JSON.parse(health.stdout)[0].status, 'success');
    const list = await dp('connectors', 'list');
    assert.match(list.stdout, /crm\s+mysql\s+2\s+landing/);
    const bad = await dp('cdc', 'reset', '--connector', 'nope');
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /no connector 'nope'/);
  });
});
