// The plain route every dp read is compared with: a bare Fastify + DuckDB server on one DuckDB
// file, pooled connections, a prepared statement per connection and SQL text, the result
// materialized in one call and returned as JSON (bench/util.ts addBareQueryRoute). Prints "listening on <url>" when ready.
// Usage: node bench/bare-route.mjs <file.duckdb> [repo]   (POST /raw {"sql": "..."})
import path from 'node:path';

const file = process.argv[2];
const repo = path.resolve(process.argv[3] ?? path.join(path.dirname(new URL(import.meta.url).pathname), '..'));
const { DuckDBInstance } = await import(path.join(repo, 'node_modules/@duckdb/node-api/lib/index.js'));
const Fastify = (await import(path.join(repo, 'node_modules/fastify/fastify.js'))).default;
// The route itself is bench/util.ts's (compiled: needs a build), the one the in-process benches use.
const { addBareQueryRoute } = await import(path.join(repo, 'dist/bench/util.js'));

const instance = await DuckDBInstance.create(file);
const server = Fastify();
addBareQueryRoute(server, instance);
await server.listen({ port: 0, host: '127.0.0.1' });
process.stdout.write(`listening on http://127.0.0.1:${server.server.address().port}/raw\n`);
process.on('SIGTERM', () => server.close().then(() => process.exit(0)));
