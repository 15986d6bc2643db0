// Ingest script: appends synthetic page-view events to landing.events.
// A script is a module whose default export receives ctx (see plugins/streams/README.md):
// db (the server's pool; bulkLoad goes through DuckDB's appender), config, env, secrets, log, signal.
// Run it alone with `dp run ingest/events.ts`, or as the first step of the `daily` stream.

interface Ctx {
  db: {
    run(sql: string): Promise<void>;
    value<T>(sql: string): Promise<T | null>;
    bulkLoad(target: { schema: string; table: string }, fn: (w: { appendRows(rows: unknown[][]): Promise<void> }) => Promise<void>): Promise<{ rows: number }>;
  };
  log: { info(msg: string, data?: Record<string, unknown>): void };
  signal: AbortSignal;
}

const EVENTS_PER_RUN = 100;

export default async function ingest(ctx: Ctx) {
  await ctx.db.run('CREATE SCHEMA IF NOT EXISTS landing');
  await ctx.db.run('CREATE TABLE IF NOT EXISTS landing.events (event_id BIGINT, customer_id INTEGER, page VARCHAR, received_at TIMESTAMP)');
  const lastId = Number((await ctx.db.value<bigint | number>('SELECT coalesce(max(event_id), 0) FROM landing.events')) ?? 0);
  const now = Date.now();
  const rows: unknown[][] = [];
  for (let i = 1; i <= EVENTS_PER_RUN; i++) {
    if (ctx.signal.aborted) return; // cancelled: stop before loading anything
    rows.push([lastId + i, 1 + (i % 10), `page_${i % 7}`, new Date(now - i * 60_000)]);
  }
  const { rows: loaded } = await ctx.db.bulkLoad({ schema: 'landing', table: 'events' }, (w) => w.appendRows(rows));
  ctx.log.info(`loaded ${loaded} events`);
}
