/**
 * /api/query throughput for a small query, against a bare Fastify route that calls DuckDB
 * directly, in the same run and process (target: at least 0.8 of the baseline).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import Fastify from 'fastify';
import { App } from '../kernel/app.js';
import { createServer } from '../kernel/http.js';
import { throughput, type BenchResult } from './util.js';

const SQL = 'SELECT id, name, amount FROM bench_t WHERE id < 20 ORDER BY id';
const SETUP = "CREATE TABLE bench_t AS SELECT i AS id, 'name ' || i AS name, i * 1.5 AS amount FROM range(10000) t(i)";

export default async function run(): Promise<BenchResult[]> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'dp-bench-query-'));
  fs.writeFileSync(path.join(root, 'project.yml'), 'name: bench\ndatabase:\n  path: bench.duckdb\n');
  const app = await App.boot({ projectRoot: root, serving: true });
  await app.start();
  await app.db.run(SETUP);
  const server = await createServer(app);
  await server.listen({ port: 0, host: '127.0.0.1' });
  const dpUrl = `http://127.0.0.1:${(server.server.address() as { port: number }).port}/api/query`;

  const instance = await DuckDBInstance.create(path.join(root, 'baseline.duckdb'));
  const setup = await instance.connect();
  await setup.run(SETUP);
  const bare = Fastify();
  bare.post('/raw', async (req) => {
    const conn = await instance.connect();
    try {
      const reader = await conn.runAndReadAll((req.body as { sql: string }).sql);
      return { columns: reader.columnNames(), rows: reader.getRowsJson() };
    } finally {
      conn.closeSync();
    }
  });
  await bare.listen({ port: 0, host: '127.0.0.1' });
  const rawUrl = `http://127.0.0.1:${(bare.server.address() as { port: number }).port}/raw`;

  const init = { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ sql: SQL }) };
  // Interleave the two measurements so machine noise hits both alike.
  await throughput(dpUrl, init, 500);
  await throughput(rawUrl, init, 500);
  const dp: number[] = [];
  const raw: number[] = [];
  for (let i = 0; i < 3; i++) {
    raw.push(await throughput(rawUrl, init, 2000));
    dp.push(await throughput(dpUrl, init, 2000));
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[1];
  const ratio = median(dp) / median(raw);
  await bare.close();
  await server.close();
  await app.close();
  setup.closeSync();
  instance.closeSync();
  fs.rmSync(root, { recursive: true, force: true });
  return [
    { name: 'bare Fastify + DuckDB (baseline)', value: median(raw), unit: 'req/s' },
    { name: 'dp /api/query', value: median(dp), unit: 'req/s' },
    { name: 'dp / baseline', value: ratio, unit: 'ratio', target: '>= 0.8', ok: ratio >= 0.8 },
  ];
}
