/**
 * Version creation throughput (POST /api/versions on a real server: one transaction, COPY per
 * table to Parquet, fsync, manifest, rename, record) against a bare `COPY … TO parquet` of the
 * same tables with the same compression, in the same run, alternating which goes first, median of 5 rounds.
 * MB are the Parquet bytes written. Target: version MB/s ≥ 0.9 × bare MB/s.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { App } from '../kernel/app.js';
import { createServer } from '../kernel/http.js';
import { httpRequester } from '../sdk/testing.js';
import type { BenchResult } from './util.js';

const ROUNDS = 5;

export default async function run(): Promise<BenchResult[]> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'dp-bench-versioning-'));
  fs.writeFileSync(path.join(root, 'project.yml'), 'name: bench\ndatabase:\n  path: bench.duckdb\n');
  const app = await App.boot({ projectRoot: root, serving: true });
  await app.start();
  const server = await createServer(app);
  await server.listen({ port: 0, host: '127.0.0.1' });
  const addr = server.server.address();
  const request = httpRequester(`http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`);
  try {
    await app.db.run(`CREATE SCHEMA shop;
      CREATE TABLE shop.orders AS SELECT i AS id, i % 5000 AS customer_id, (i * 7919) % 100000 / 100.0 AS amount,
        TIMESTAMP '2024-01-01' + to_seconds(i) AS ordered_at, ['new', 'paid', 'shipped'][i % 3 + 1] AS status FROM range(2000000) r(i);
      CREATE TABLE shop.customers AS SELECT i AS id, 'customer ' || i AS name, 'c' || i || '@example.com' AS email FROM range(200000) r(i);
      CREATE TABLE shop.events AS SELECT i AS id, md5(i::VARCHAR) AS payload, i % 17 AS kind FROM range(1000000) r(i);`);
    const tables = ['shop.orders', 'shop.customers', 'shop.events'];
    const bareDir = path.join(root, 'bare');
    const bare: number[] = [];
    const version: number[] = [];
    let bytes = 0;
    for (let round = 0; round < ROUNDS; round++) {
      const runBare = async () => {
        fs.rmSync(bareDir, { recursive: true, force: true });
        fs.mkdirSync(bareDir);
        const t0 = performance.now();
        for (const t of tables) await app.db.run(`COPY (SELECT * FROM ${t}) TO '${path.join(bareDir, `${t}.parquet`)}' (FORMAT parquet, COMPRESSION zstd)`);
        const seconds = (performance.now() - t0) / 1000;
        bare.push(tables.reduce((s, t) => s + fs.statSync(path.join(bareDir, `${t}.parquet`)).size, 0) / 1e6 / seconds);
      };
      const runVersion = async () => {
        const t1 = performance.now();
        const v = await request('POST', '/api/versions', { description: `bench ${round}` });
        const seconds = (performance.now() - t1) / 1000;
        if (v.status !== 200) throw new Error(`POST /api/versions answered ${v.status}: ${v.text}`);
        bytes = v.body.size_bytes;
        version.push(v.body.size_bytes / 1e6 / seconds);
        await request('DELETE', `/api/versions/${v.body.version_id}`);
      };
      // Alternate which side goes first, so page-cache and load drift hit both alike.
      if (round % 2 === 0) {
        await runBare();
        await runVersion();
      } else {
        await runVersion();
        await runBare();
      }
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    const ratio = median(version) / median(bare);
    return [
      { name: 'Parquet bytes per version (3 tables, 3.2M rows, zstd)', value: bytes / 1e6, unit: 'MB' },
      { name: 'bare COPY … TO parquet', value: median(bare), unit: 'MB/s' },
      { name: 'version creation (POST /api/versions)', value: median(version), unit: 'MB/s' },
      { name: 'version / bare', value: ratio, unit: 'ratio', target: '≥ 0.9', ok: ratio >= 0.9 },
    ];
  } finally {
    await server.close();
    await app.close();
    fs.rmSync(root, { recursive: true, force: true });
  }
}
