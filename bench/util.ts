/** Shared benchmark helpers: timing loops and HTTP load from this process. */
import { performance } from 'node:perf_hooks';
import { type DuckDBConnection, type DuckDBInstance, type DuckDBPreparedStatement, JsonDuckDBValueConverter } from '@duckdb/node-api';
import type { FastifyInstance } from 'fastify';

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
