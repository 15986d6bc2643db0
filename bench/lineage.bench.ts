/**
 * Lineage of every model of a generated 1,000-model project (GET /api/lineage): the first
 * request of a fresh server (model discovery, every model parsed and analysed) and warm
 * requests (answered from the content-hash cache).
 * Target: cold under 2 s.
 */
import fs from 'node:fs';
import { performance } from 'node:perf_hooks';
import { makeProject, startServer } from '../test/helpers.js';
import type { BenchResult } from './util.js';

const MODELS = 1000;
const SCHEMAS = 10;

/** A mix of the constructs lineage traces: CTE chains, joins, windows, UNION ALL, CASE, stars. */
function modelSql(i: number, upstream: (k: number) => string): string {
  if (i < 50) {
    return `SELECT order_id, customer_id, amount * ${1 + (i % 5) / 10} AS amount, status, order_date FROM seeds.orders WHERE order_id % ${i + 2} = 0`;
  }
  const a = upstream(i - 1 - (i % 37));
  const b = upstream(i - 1 - (i % 23));
  switch (i % 5) {
    case 0:
      return `WITH base AS (SELECT order_id, customer_id, amount FROM ${a}),
  scaled AS (SELECT order_id, customer_id, amount * 2 AS amount FROM base),
  final AS (SELECT s.order_id, s.customer_id, s.amount, c.country FROM scaled s JOIN seeds.customers c USING (customer_id))
SELECT order_id, customer_id, amount, 'x' AS status, current_date AS order_date FROM final`;
    case 1:
      return `SELECT a.order_id, a.customer_id,
  sum(a.amount) OVER (PARTITION BY a.customer_id ORDER BY a.order_date) AS amount,
  CASE WHEN b.status = 'completed' THEN a.status ELSE b.status END AS status, a.order_date
FROM ${a} a JOIN ${b} b ON a.order_id = b.order_id`;
    case 2:
      return `SELECT * FROM ${a}`;
    case 3:
      return `SELECT order_id, customer_id, amount, status, order_date FROM ${a}
UNION ALL SELECT order_id, customer_id, amount, status, order_date FROM ${b}`;
    default:
      return `SELECT * EXCLUDE (status) REPLACE (amount + 1 AS amount), upper(status) AS status FROM ${a}`;
  }
}

export default async function bench(): Promise<BenchResult[]> {
  const files: Record<string, string> = {
    'seeds/orders.csv': 'order_id,customer_id,amount,status,order_date\n1,1,10.5,completed,2024-01-01\n2,2,20,shipped,2024-01-02\n',
    'seeds/customers.csv': 'customer_id,name,country\n1,Ann,NL\n2,Bob,DE\n',
  };
  const name = (k: number) => `m_${String(k).padStart(4, '0')}`;
  const full = (k: number) => `s${k % SCHEMAS}.${name(k)}`;
  for (let i = 0; i < MODELS; i++) {
    files[`transform/s${i % SCHEMAS}/${name(i)}.sql`] = `-- @config materialized=view\n${modelSql(i, full)}\n`;
  }
  const root = makeProject(files);
  let server = await startServer(root);
  try {
    const seeded = await server.request('POST', '/api/seeds', { force: true });
    if (seeded.status !== 200) throw new Error(`seed load answered ${seeded.status}: ${seeded.text.slice(0, 200)}`);
    // A fresh process: nothing parsed or discovered yet, the seeds are in the database file.
    await server.close();
    server = await startServer(root);

    let start = performance.now();
    const cold = await server.request('GET', '/api/lineage');
    const coldMs = performance.now() - start;
    if (cold.status !== 200 || cold.body.length !== MODELS) throw new Error(`lineage answered ${cold.status}: ${cold.text.slice(0, 200)}`);
    const parsed = cold.body.filter((l: { method: string }) => l.method === 'parser').length;
    const starsLeft = cold.body.filter((l: { columns: Record<string, unknown> }) => '*' in l.columns).length;

    const warmRuns = 5;
    start = performance.now();
    for (let i = 0; i < warmRuns; i++) await server.request('GET', '/api/lineage');
    const warmMs = (performance.now() - start) / warmRuns;

    return [
      { name: `all-model lineage, first request after start (${MODELS} models, includes model discovery)`, value: coldMs, unit: 'ms', target: '< 2000', ok: coldMs < 2000 },
      { name: 'all-model lineage, warm (cache hit)', value: warmMs, unit: 'ms' },
      { name: 'models traced by the parser', value: parsed, unit: 'models', target: String(MODELS), ok: parsed === MODELS },
      { name: 'models with an unexpanded *', value: starsLeft, unit: 'models', target: '0', ok: starsLeft === 0 },
    ];
  } finally {
    await server.close();
    fs.rmSync(root, { recursive: true, force: true });
  }
}
