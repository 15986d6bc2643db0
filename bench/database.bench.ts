/**
 * The database port's seams: what the catalog-changed check costs per statement (the guarded
 * runner's reads on /api/query never pay it: readUntil is not observed), a pooled read with and
 * without the observer, and bulk-load throughput through the appender.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { DuckDatabase } from '../kernel/database.js';
import { statementKind } from '../kernel/statement-kind.js';
import { timePerCall, type BenchResult } from './util.js';

const SAMPLES = [
  'SELECT id, name, amount FROM bench_t WHERE id < 20 ORDER BY id',
  "SELECT column_name FROM information_schema.columns WHERE table_schema = 'main'",
  'WITH a AS (SELECT 1 AS x) SELECT * FROM a',
  'CREATE OR REPLACE TABLE analytics.orders AS\nSELECT * FROM staging.orders\n',
];

export default async function run(): Promise<BenchResult[]> {
  const n = 200_000;
  const t0 = performance.now();
  for (let i = 0; i < n; i++) statementKind(SAMPLES[i % SAMPLES.length]);
  const classifyUs = ((performance.now() - t0) * 1000) / n;

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dp-bench-db-'));
  const observed = new DuckDatabase(path.join(dir, 'a.duckdb'), { onWrite: () => {} });
  const plain = new DuckDatabase(path.join(dir, 'b.duckdb'));
  const withObserver: number[] = [];
  const without: number[] = [];
  for (let i = 0; i < 3; i++) {
    without.push(await timePerCall(() => plain.value(SAMPLES[1]), 700));
    withObserver.push(await timePerCall(() => observed.value(SAMPLES[1]), 700));
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[1];

  const rows = 200_000;
  const t1 = performance.now();
  await plain.bulkLoad(
    { table: 'bulk', mode: 'replace', columns: [{ name: 'id', type: 'BIGINT' }, { name: 'name', type: 'VARCHAR' }, { name: 'at', type: 'TIMESTAMP' }, { name: 'amount', type: 'DECIMAL(18,2)' }] },
    async (w) => {
      for (let s = 0; s < rows; s += 10_000) {
        const batch = [];
        for (let i = s; i < s + 10_000; i++) batch.push([i, `name ${i}`, new Date(1_700_000_000_000 + i * 1000), `${i}.25`]);
        await w.appendRows(batch);
      }
    },
  );
  const bulkRowsPerSec = rows / ((performance.now() - t1) / 1000);
  observed.close();
  plain.close();
  return [
    { name: 'catalog-change classification per statement', value: classifyUs, unit: 'µs', target: '< 5', ok: classifyUs < 5 },
    { name: 'pooled read, no observer', value: median(without), unit: 'ms/call' },
    { name: 'pooled read, catalog observer', value: median(withObserver), unit: 'ms/call' },
    { name: 'bulk load (appender, 4 typed columns)', value: bulkRowsPerSec, unit: 'rows/s', target: '> 100000', ok: bulkRowsPerSec > 100_000 },
  ];
}
