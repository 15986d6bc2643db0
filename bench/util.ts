/** Shared benchmark helpers: timing loops and HTTP load from this process. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { type DuckDBConnection, type DuckDBInstance, type DuckDBPreparedStatement, JsonDuckDBValueConverter } from '@duckdb/node-api';
import type { FastifyInstance } from 'fastify';
import type { RunningClickHouseCluster } from '../test/support/clickhouse.js';

export interface BenchResult {
  name: string;
  value: number;
  unit: string;
  target?: string;
  ok?: boolean;
}

/** Runs fn repeatedly for about `ms` milliseconds (after a warm-up) and returns mean milliseconds per call. */
export async function timePerCall(fn: () => Promise<unknown> | unknown, ms = 1500, warmup = 20): Promise<number> {
  for (let i = 0; i < warmup; i++) await fn();
  let n = 0;
  const start = performance.now();
  while (performance.now() - start < ms) {
    await fn();
    n++;
  }
  return (performance.now() - start) / n;
}

/** Requests per second against url with `concurrency` requests in flight, for `ms` milliseconds. */
export async function throughput(url: string, init: RequestInit, ms = 3000, concurrency = 8): Promise<number> {
  let done = 0;
  const stopAt = performance.now() + ms;
  const worker = async () => {
    while (performance.now() < stopAt) {
      const res = await fetch(url, init);
      await res.arrayBuffer();
      if (!res.ok) throw new Error(`${url} answered ${res.status}`);
      done++;
    }
  };
  const start = performance.now();
  await Promise.all(Array.from({ length: concurrency }, worker));
  return done / ((performance.now() - start) / 1000);
}

/**
 * The plain route dp's reads are compared with, `POST <url> {"sql"}` on a bare Fastify server:
 * pooled connections, a prepared statement per connection and SQL text, the result materialized
 * in one call and its rows returned as JSON.
 */
export function addBareQueryRoute(server: FastifyInstance, instance: DuckDBInstance, url = '/raw'): void {
  const idle: Array<{ conn: DuckDBConnection; statements: Map<string, DuckDBPreparedStatement> }> = [];
  server.post(url, async (req) => {
    const { sql } = req.body as { sql: string };
    const lent = idle.pop() ?? { conn: await instance.connect(), statements: new Map() };
    try {
      let stmt = lent.statements.get(sql);
      if (!stmt) {
        stmt = await lent.conn.prepare(sql);
        lent.statements.set(sql, stmt);
      }
      const result = await stmt.run();
      const rows: unknown[][] = [];
      for (let i = 0; i < result.chunkCount; i++) rows.push(...(result.getChunk(i).convertRows(JsonDuckDBValueConverter) as unknown[][]));
      return { columns: result.columnNames(), rows };
    } finally {
      idle.push(lent);
    }
  });
}

/**
 * A project for the ClickHouse benches under the OS temp dir: one environment per entry of
 * `environments` (name → cluster of the test servers, test/support/clickhouse.ts) targeting
 * database `dp` on the first node, the password in `.env`, ClickHouse's row generator
 * `system.numbers` declared as a source (so the DAG accepts the reference), and `models`
 * (path under transform/ → file text). The caller removes the folder.
 */
export function clickhouseBenchProject(
  ch: Pick<RunningClickHouseCluster, 'nodes' | 'password'>,
  prefix: string,
  environments: Record<string, string>,
  models: Record<string, string>,
): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  const envs = Object.entries(environments)
    .map(([name, cluster]) => `  ${name}:\n    target:\n      type: clickhouse\n      url: ${ch.nodes[0]!.url}\n      cluster: ${cluster}\n      database: dp\n      password: \${CH_PASSWORD}\n`)
    .join('');
  fs.writeFileSync(path.join(root, 'project.yml'), `name: bench\ndatabase:\n  path: control.duckdb\nsources:\n  - name: system\n    tables: [{ name: numbers }]\nenvironments:\n${envs}`);
  fs.writeFileSync(path.join(root, '.env'), `CH_PASSWORD=${ch.password}\n`);
  for (const [rel, text] of Object.entries(models)) {
    const file = path.join(root, 'transform', rel);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, text);
  }
  return root;
}
