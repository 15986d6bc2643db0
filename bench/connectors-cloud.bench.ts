/**
 * Remote connector types: rows per second through the streaming readers, and the process's
 * peak RSS growth while reading (the local fakes run in the same process, so it is an upper
 * bound for the reader). The batch bound is what keeps it flat: 1,000,000 rows must not cost
 * memory in proportion.
 */
import { performance } from 'node:perf_hooks';
import type { ConnectorType } from '../sdk/index.js';
import { restApiType } from '../plugins/connectors-cloud/rest-api.js';
import { warehouseAType } from '../plugins/connectors-cloud/warehouse-arrow.js';
import { warehouseCType } from '../plugins/connectors-cloud/warehouse-pg.js';
import { startFakeWarehouse } from '../test/plugins/connectors-cloud/fakes/arrow-warehouse.js';
import { startFakeSaas } from '../test/plugins/connectors-cloud/fakes/saas.js';
import { startPostgres } from '../test/plugins/connectors-cloud/support/postgres.js';
import type { BenchResult } from './util.js';

async function measure(type: ConnectorType, config: Record<string, unknown>, table: string, cursor?: { column: string; after: unknown }): Promise<{ rows: number; seconds: number; peakMb: number }> {
  global.gc?.();
  const base = process.memoryUsage().rss;
  let peak = base;
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
  const t0 = performance.now();
  let rows = 0;
  for await (const batch of type.read(config, { table, batchRows: 10_000, signal: AbortSignal.timeout(600_000), ...(cursor ? { cursor } : {}) })) {
    rows += batch.rows.length;
    peak = Math.max(peak, process.memoryUsage().rss);
  }
  const seconds = (performance.now() - t0) / 1000;
  clearInterval(timer);
  return { rows, seconds, peakMb: (peak - base) / 1024 / 1024 };
}

export default async function (): Promise<BenchResult[]> {
  const out: BenchResult[] = [];
  const memTarget = 400;

  const wh = await startFakeWarehouse();
  try {
    await wh.db.run("CREATE TABLE main.events AS SELECT i::BIGINT AS id, 'user_' || (i % 1000) AS name, (i * 0.25)::DECIMAL(18,2) AS amount, TIMESTAMP '2024-01-01' + to_seconds(i) AS at FROM range(1000000) t(i)");
    const r = await measure(warehouseAType, { url: wh.url, token: wh.token, database: 'd', schema: 'main' }, 'events');
    out.push({ name: 'cloud_warehouse_a: 1,000,000 rows (Arrow over HTTP)', value: r.rows / r.seconds, unit: 'rows/s' });
    out.push({ name: 'cloud_warehouse_a: peak RSS growth', value: r.peakMb, unit: 'MB', target: `< ${memTarget}`, ok: r.peakMb < memTarget && r.rows === 1_000_000 });
  } finally {
    await wh.close();
  }

  const pg = await startPostgres();
  try {
    await pg.query("CREATE TABLE events AS SELECT i::bigint AS id, 'user_' || (i % 1000) AS name, (i * 0.25)::numeric(18,2) AS amount, TIMESTAMP '2024-01-01' + i * INTERVAL '1 second' AS at FROM generate_series(1, 1000000) i");
    const r = await measure(warehouseCType, { host: pg.host, port: pg.port, database: pg.database, user: pg.user, password: pg.password, ssl: false }, 'events');
    out.push({ name: 'cloud_warehouse_c: 1,000,000 rows (pg server-side cursor)', value: r.rows / r.seconds, unit: 'rows/s' });
    out.push({ name: 'cloud_warehouse_c: peak RSS growth', value: r.peakMb, unit: 'MB', target: `< ${memTarget}`, ok: r.peakMb < memTarget && r.rows === 1_000_000 });
  } finally {
    await pg.stop();
  }

  const api = await startFakeSaas();
  try {
    api.data.set('orders', Array.from({ length: 200_000 }, (_, i) => ({ id: i, customer: `c${i % 97}`, amount: i + 0.5, updated_at: new Date(Date.UTC(2024, 0, 1) + i * 1000).toISOString() })));
    const config = { url: api.url, token: api.token, resources: [{ name: 'orders', path: '/api/paged/orders', records_path: 'data.items', pagination: { style: 'page', size_param: 'per_page', page_size: 1000 } }] };
    const full = await measure(restApiType, config, 'orders');
    out.push({ name: 'rest_api: 200,000 records, 200 pages', value: full.rows / full.seconds, unit: 'rows/s' });
    const inc = await measure(restApiType, config, 'orders', { column: 'updated_at', after: null });
    out.push({ name: 'rest_api: same, incremental (sorted by cursor through DuckDB)', value: inc.rows / inc.seconds, unit: 'rows/s' });
  } finally {
    await api.close();
  }
  return out;
}
