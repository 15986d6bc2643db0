// The plain route every dp read is compared with: a bare Fastify + DuckDB server on one DuckDB
// file, pooled connections, a prepared statement per connection and SQL text, the result
// materialized in one call and returned as JSON. Prints "listening on <url>" when ready.
// Usage: node bench/bare-route.mjs <file.duckdb> [repo]   (POST /raw {"sql": "..."})
import path from 'node:path';

const file = process.argv[2];
const repo = path.resolve(process.argv[3] ?? path.join(path.dirname(new URL(import.meta.url).pathname), '..'));
const { DuckDBInstance, JsonDuckDBValueConverter } = await import(path.join(repo, 'node_modules/@duckdb/node-api/lib/index.js'));
const Fastify = (await import(path.join(repo, 'node_modules/fastify/fastify.js'))).default;

const instance = await DuckDBInstance.create(file);
const idle = [];
const server = Fastify();
server.post('/raw', async (req) => {
  const { sql } = req.body;
  const lent = idle.pop() ?? { conn: await instance.connect(), statements: new Map() };
  try {
    let stmt = lent.statements.get(sql);
    if (!stmt) {
      stmt = await lent.conn.prepare(sql);
      lent.statements.set(sql, stmt);
    }
    const result = await stmt.run();
    const rows = [];
    for (let i = 0; i < result.chunkCount; i++) rows.push(...result.getChunk(i).convertRows(JsonDuckDBValueConverter));
    return { columns: result.columnNames(), rows };
  } finally {
    idle.push(lent);
  }
});
await server.listen({ port: 0, host: '127.0.0.1' });
process.stdout.write(`listening on http://127.0.0.1:${server.server.address().port}/raw\n`);
process.on('SIGTERM', () => server.close().then(() => process.exit(0)));
