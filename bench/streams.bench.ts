/**
 * A script loading 1,000,000 generated rows through `ctx.db.bulkLoad` (the streams plugin's
 * script runner: esbuild-compiled module, guarded db, kernel appender in column chunks) against
 * the same rows through @duckdb/node-api's appender driven directly (data chunks of 2048 rows,
 * values handed over as they are). Target: the script reaches at least 0.9 of the direct rate.
 * Both generate the same values in the same 10,000-row batches, so the ratio is dp's overhead.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { BIGINT, DOUBLE, DuckDBDataChunk, DuckDBInstance, VARCHAR } from '@duckdb/node-api';
import { App } from '../kernel/app.js';
import type { ScriptsService } from '../sdk/index.js';
import type { BenchResult } from './util.js';

const ROWS = 1_000_000;
const BATCH = 10_000;
const CHUNK = 2048;

const SCRIPT = `
export default async (ctx: any) => {
  const total = ${ROWS}, batch = ${BATCH};
  await ctx.db.bulkLoad(
    { table: 'bench_rows', mode: 'replace', columns: [{ name: 'id', type: 'BIGINT' }, { name: 'amount', type: 'DOUBLE' }, { name: 'label', type: 'VARCHAR' }] },
    async (w: any) => {
      for (let start = 0; start < total; start += batch) {
        const ids = new Array(batch), amounts = new Array(batch), labels = new Array(batch);
        for (let i = 0; i < batch; i++) { ids[i] = start + i; amounts[i] = (start + i) * 0.5; labels[i] = 'row' + ((start + i) % 100); }
        await w.appendColumns([ids, amounts, labels]);
      }
    },
  );
};
`;

async function direct(file: string): Promise<number> {
  const instance = await DuckDBInstance.create(file);
  const conn = await instance.connect();
  await conn.run('CREATE OR REPLACE TABLE bench_rows (id BIGINT, amount DOUBLE, label VARCHAR)');
  const t0 = performance.now();
  const appender = await conn.createAppender('bench_rows');
  const types = [BIGINT, DOUBLE, VARCHAR];
  for (let start = 0; start < ROWS; start += BATCH) {
    const ids = new Array(BATCH);
    const amounts = new Array(BATCH);
    const labels = new Array(BATCH);
    for (let i = 0; i < BATCH; i++) {
      ids[i] = BigInt(start + i);
      amounts[i] = (start + i) * 0.5;
      labels[i] = 'row' + ((start + i) % 100);
    }
    for (let at = 0; at < BATCH; at += CHUNK) {
      const size = Math.min(CHUNK, BATCH - at);
      const chunk = DuckDBDataChunk.create(types, size);
      chunk.setColumns([ids.slice(at, at + size), amounts.slice(at, at + size), labels.slice(at, at + size)]);
      appender.appendDataChunk(chunk);
    }
  }
  appender.flushSync();
  appender.closeSync();
  const seconds = (performance.now() - t0) / 1000;
  const n = Number((await conn.runAndReadAll('SELECT count(*) FROM bench_rows')).getRows()[0][0]);
  if (n !== ROWS) throw new Error(`direct load wrote ${n} rows`);
  conn.closeSync();
  instance.closeSync();
  return ROWS / seconds;
}

async function throughScript(root: string): Promise<number[]> {
  const app = await App.boot({ projectRoot: root });
  await app.start();
  try {
    const scripts = app.services.get<ScriptsService>('scripts');
    const rates: number[] = [];
    // The first run compiles the script (esbuild) and warms the module cache, like any later run of an unchanged script.
    for (let i = 0; i < 4; i++) {
      const t0 = performance.now();
      const r = await scripts.run('ingest/bench_load.ts', { trigger: 'bench' });
      const seconds = (performance.now() - t0) / 1000;
      if (r.status !== 'success') throw new Error(`script ${r.status}: ${r.error}`);
      if (i > 0) rates.push(ROWS / seconds);
    }
    const n = Number(await app.db.value('SELECT count(*) FROM bench_rows'));
    if (n !== ROWS) throw new Error(`script load wrote ${n} rows`);
    return rates;
  } finally {
    await app.close();
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

export default async function run(): Promise<BenchResult[]> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dp-bench-streams-'));
  try {
    fs.writeFileSync(path.join(dir, 'project.yml'), 'name: bench\ndatabase:\n  path: script.duckdb\n');
    fs.mkdirSync(path.join(dir, 'ingest'));
    fs.writeFileSync(path.join(dir, 'ingest', 'bench_load.ts'), SCRIPT);
    const directRates: number[] = [];
    for (let i = 0; i < 3; i++) directRates.push(await direct(path.join(dir, `direct${i}.duckdb`)));
    const scriptRates = await throughScript(dir);
    const d = median(directRates);
    const s = median(scriptRates);
    const ratio = s / d;
    return [
      { name: 'appender directly (@duckdb/node-api data chunks), 1M rows × 3 columns', value: d, unit: 'rows/s' },
      { name: 'script through ctx.db.bulkLoad (dp run), 1M rows × 3 columns', value: s, unit: 'rows/s' },
      { name: 'script / direct', value: ratio, unit: 'ratio', target: '>= 0.9', ok: ratio >= 0.9 },
    ];
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
