/**
 * PostgreSQL → DuckDB: a 1,000,000-row table synced by the postgres connector (server-side
 * cursor, batches through the appender, one transaction with the CDC state), against the
 * fastest path the same machine offers without the connector: `COPY … TO STDOUT` (psql) into a
 * CSV file that DuckDB's CSV reader loads, in the same run. Peak memory: the process's RSS and JS
 * heap, sampled every 20 ms during the sync, over their values before (the heap stays flat with
 * table size: one batch; RSS also holds DuckDB's buffer pool, which caches the written blocks).
 *
 * Starts its own PostgreSQL (test/support/databases.ts). `npm run bench -- connectors`.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { DuckDBInstance } from '@duckdb/node-api';
import pg from 'pg';
import { makeProject, startServer } from '../test/helpers.js';
import { PG_BIN, startPostgres } from '../test/support/databases.js';
import type { BenchResult } from './util.js';

const ROWS = Number(process.env.DP_BENCH_CONNECTOR_ROWS ?? 1_000_000);
const TABLE_SQL = `CREATE TABLE public.orders AS
  SELECT i::BIGINT AS id, 'customer ' || (i % 5000) AS customer, (i % 100000) / 100.0 :: NUMERIC(12,2) AS amount,
         TIMESTAMP '2024-01-01' + i * INTERVAL '1 second' AS updated_at, (ARRAY['new','paid','shipped'])[1 + i % 3] AS status
  FROM generate_series(1, ${ROWS}) i`;

function copyToFile(db: { host: string; port: number; user: string; password: string; database: string }, file: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const out = fs.createWriteStream(file);
    const child = spawn(path.join(PG_BIN, 'psql'), ['-h', db.host, '-p', String(db.port), '-U', db.user, '-d', db.database, '-X', '-q', '-c', 'COPY public.orders TO STDOUT WITH (FORMAT csv, HEADER true)'], {
      env: { ...process.env, PGPASSWORD: db.password },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let err = '';
    child.stderr.on('data', (c) => (err += c));
    child.stdout.pipe(out);
    let code: number | null = null;
    child.on('exit', (c) => (code = c));
    // 'finish' of the file comes after the pipe wrote everything psql sent (its 'exit' may come first).
    out.on('finish', () => (code === 0 || code === null ? resolve() : reject(new Error(`psql COPY failed: ${err}`))));
    child.on('close', (c) => {
      if (c !== 0) reject(new Error(`psql COPY failed: ${err}`));
    });
  });
}

export default async function run(): Promise<BenchResult[]> {
  const source = await startPostgres();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dp-bench-conn-'));
  try {
    const c = new pg.Client({ host: source.host, port: source.port, user: source.user, password: source.password, database: source.database });
    await c.connect();
    await c.query(TABLE_SQL);
    await c.query('ANALYZE public.orders');
    await c.end();

    // Baseline: COPY TO STDOUT into a file, then DuckDB's CSV reader.
    const csv = path.join(dir, 'orders.csv');
    const b0 = performance.now();
    await copyToFile(source, csv);
    const inst = await DuckDBInstance.create(path.join(dir, 'baseline.duckdb'));
    const conn = await inst.connect();
    await conn.run(`CREATE TABLE orders AS SELECT * FROM read_csv('${csv}', header = true)`);
    const baselineMs = performance.now() - b0;
    conn.closeSync();
    inst.closeSync();

    // The connector, through the real server and its HTTP route.
    const root = makeProject({
      'project.yml': `name: bench\ndatabase:\n  path: w.duckdb\nconnections:\n  src:\n    type: postgres\n    host: ${source.host}\n    port: ${source.port}\n    database: ${source.database}\n    user: ${source.user}\n    password: \${SRC_PASSWORD}\nconnectors:\n  src:\n    type: postgres\n    tables:\n      - name: public.orders\n        cdc_mode: high_watermark\n        cdc_column: updated_at\n`,
      '.env': `SRC_PASSWORD=${source.password}\n`,
    });
    const s = await startServer(root);
    let peak = 0;
    let peakHeap = 0;
    let rowsSynced = 0;
    let connectorMs = 0;
    let cpuSeconds = 0;
    global.gc?.();
    const rssBefore = process.memoryUsage().rss;
    const heapBefore = process.memoryUsage().heapUsed;
    try {
      const timer = setInterval(() => {
        const m = process.memoryUsage();
        peak = Math.max(peak, m.rss);
        peakHeap = Math.max(peakHeap, m.heapUsed);
      }, 20);
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      const r = await s.request('POST', '/api/connectors/sync/src');
      connectorMs = performance.now() - t0;
      const cpu = process.cpuUsage(cpu0);
      cpuSeconds = (cpu.user + cpu.system) / 1e6;
      clearInterval(timer);
      if (r.body?.status !== 'success') throw new Error(`sync failed: ${r.text}`);
      rowsSynced = r.body.results[0].rows_synced;
    } finally {
      await s.close();
    }
    const connectorRate = rowsSynced / (connectorMs / 1000);
    const baselineRate = ROWS / (baselineMs / 1000);
    const ratio = connectorRate / baselineRate;
    return [
      { name: `postgres → DuckDB, ${ROWS.toLocaleString('en')} rows (connector sync)`, value: connectorRate, unit: 'rows/s', target: '>= 200000', ok: connectorRate >= 200_000 && rowsSynced === ROWS },
      { name: 'connector rows per CPU second of the dp process (JS + DuckDB threads; PostgreSQL excluded)', value: rowsSynced / cpuSeconds, unit: 'rows/cpu-s' },
      { name: 'COPY TO STDOUT → file → read_csv (baseline, same run)', value: baselineRate, unit: 'rows/s' },
      { name: 'connector / baseline', value: ratio, unit: '×', target: '>= 1', ok: ratio >= 1 },
      { name: 'peak RSS during the sync', value: peak / 1024 / 1024, unit: 'MB' },
      { name: "peak RSS over the RSS before the sync (includes DuckDB's buffer pool)", value: (peak - rssBefore) / 1024 / 1024, unit: 'MB' },
      { name: 'peak JS heap over the heap before the sync', value: (peakHeap - heapBefore) / 1024 / 1024, unit: 'MB' },
    ];
  } finally {
    await source.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
