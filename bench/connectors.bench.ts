/**
 * PostgreSQL → DuckDB: a 1,000,000-row table synced by the postgres connector (`COPY … TO
 * STDOUT` through a named pipe into DuckDB's CSV reader, one transaction with the CDC state),
 * against the fastest path the same machine offers without the connector: `COPY … TO STDOUT`
 * (psql) into a CSV file that DuckDB's CSV reader loads. Both run in the same process, in
 * alternating rounds (baseline, connector; DP_BENCH_CONNECTOR_ROUNDS, default 3), so a load
 * change on the shared machine hits both; the numbers are medians, the ratio the median of the
 * rounds' ratios. Peak memory: the process's RSS and JS heap, sampled every 20 ms during the
 * syncs, over their values before (the heap stays flat with table size; RSS also holds DuckDB's
 * buffer pool, which caches the written blocks).
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
const ROUNDS = Math.max(1, Number(process.env.DP_BENCH_CONNECTOR_ROUNDS ?? 3));
const median = (xs: number[]) => {
  const v = [...xs].sort((a, b) => a - b);
  return v.length % 2 ? v[(v.length - 1) / 2]! : (v[v.length / 2 - 1]! + v[v.length / 2]!) / 2;
};
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

    // Baseline: COPY TO STDOUT into a file, then DuckDB's CSV reader (a fresh database each round).
    const baseline = async (round: number): Promise<number> => {
      const csv = path.join(dir, 'orders.csv');
      const b0 = performance.now();
      await copyToFile(source, csv);
      const inst = await DuckDBInstance.create(path.join(dir, `baseline-${round}.duckdb`));
      const conn = await inst.connect();
      await conn.run(`CREATE TABLE orders AS SELECT * FROM read_csv('${csv}', header = true)`);
      const ms = performance.now() - b0;
      conn.closeSync();
      inst.closeSync();
      fs.rmSync(csv, { force: true });
      return ms;
    };

    // The connector, through the real server and its HTTP route.
    const root = makeProject({
      'project.yml': `name: bench\ndatabase:\n  path: w.duckdb\nconnections:\n  src:\n    type: postgres\n    host: ${source.host}\n    port: ${source.port}\n    database: ${source.database}\n    user: ${source.user}\n    password: \${SRC_PASSWORD}\nconnectors:\n  src:\n    type: postgres\n    tables:\n      - name: public.orders\n        cdc_mode: high_watermark\n        cdc_column: updated_at\n`,
      '.env': `SRC_PASSWORD=${source.password}\n`,
    });
    const s = await startServer(root);
    let peak = 0;
    let peakHeap = 0;
    const baselineRates: number[] = [];
    const connectorRates: number[] = [];
    const ratios: number[] = [];
    const cpuRates: number[] = [];
    let allRows = true;
    global.gc?.();
    const rssBefore = process.memoryUsage().rss;
    const heapBefore = process.memoryUsage().heapUsed;
    try {
      for (let round = 0; round < ROUNDS; round++) {
        const baselineRate = ROWS / ((await baseline(round)) / 1000);
        // Each round's sync is a full one: the reset (not timed) forgets the watermark.
        const reset = await s.request('POST', '/api/cdc/src/reset');
        if (reset.status !== 200) throw new Error(`reset failed: ${reset.text}`);
        const timer = setInterval(() => {
          const m = process.memoryUsage();
          peak = Math.max(peak, m.rss);
          peakHeap = Math.max(peakHeap, m.heapUsed);
        }, 20);
        const cpu0 = process.cpuUsage();
        const t0 = performance.now();
        const r = await s.request('POST', '/api/connectors/sync/src');
        const connectorMs = performance.now() - t0;
        const cpu = process.cpuUsage(cpu0);
        clearInterval(timer);
        if (r.body?.status !== 'success') throw new Error(`sync failed: ${r.text}`);
        const rowsSynced = r.body.results[0].rows_synced as number;
        allRows &&= rowsSynced === ROWS;
        const connectorRate = rowsSynced / (connectorMs / 1000);
        baselineRates.push(baselineRate);
        connectorRates.push(connectorRate);
        ratios.push(connectorRate / baselineRate);
        cpuRates.push(rowsSynced / ((cpu.user + cpu.system) / 1e6));
      }
    } finally {
      await s.close();
    }
    const connectorRate = median(connectorRates);
    const baselineRate = median(baselineRates);
    const ratio = median(ratios);
    const range = (xs: number[], f: (v: number) => string) => `${f(Math.min(...xs))}–${f(Math.max(...xs))}`;
    const k = (v: number) => `${Math.round(v / 1000)}k`;
    return [
      { name: `postgres → DuckDB, ${ROWS.toLocaleString('en')} rows (connector sync, median of ${ROUNDS}: ${range(connectorRates, k)})`, value: connectorRate, unit: 'rows/s', target: '>= 200000', ok: connectorRate >= 200_000 && allRows },
      { name: 'connector rows per CPU second of the dp process (JS + DuckDB threads; PostgreSQL excluded)', value: median(cpuRates), unit: 'rows/cpu-s' },
      { name: `COPY TO STDOUT → file → read_csv (baseline, same rounds: ${range(baselineRates, k)})`, value: baselineRate, unit: 'rows/s' },
      { name: `connector / baseline (median of the rounds' ratios: ${range(ratios, (v) => v.toFixed(2))})`, value: ratio, unit: '×', target: '>= 1', ok: ratio >= 1 },
      { name: 'peak RSS during the syncs', value: peak / 1024 / 1024, unit: 'MB' },
      { name: "peak RSS over the RSS before the sync (includes DuckDB's buffer pool)", value: (peak - rssBefore) / 1024 / 1024, unit: 'MB' },
      { name: 'peak JS heap over the heap before the sync', value: (peakHeap - heapBefore) / 1024 / 1024, unit: 'MB' },
    ];
  } finally {
    await source.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
