// Ingest script: writes synthetic page-view events into landing.events.
// A script is a module whose default export receives ctx = { db, config, env, secrets, log }.
export default async function ingest(ctx: { db: { run(sql: string, params?: unknown): Promise<void> }; log: { info(msg: string): void } }) {
  await ctx.db.run('CREATE SCHEMA IF NOT EXISTS landing');
  await ctx.db.run(`CREATE TABLE IF NOT EXISTS landing.events (event_id BIGINT, customer_id INTEGER, page VARCHAR, received_at TIMESTAMP)`);
  await ctx.db.run(`INSERT INTO landing.events
    SELECT coalesce((SELECT max(event_id) FROM landing.events), 0) + i, 1 + (i % 10), 'page_' || (i % 7), now() - INTERVAL (i) MINUTE
    FROM range(1, 101) t(i)`);
  ctx.log.info('loaded 100 events');
}
