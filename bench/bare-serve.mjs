// The baseline of bench/serve-start.mjs: the least an HTTP server on a DuckDB file does before it
// answers. Requires Fastify and @duckdb/node-api (as dp loads them), opens the file, registers one
// route that queries it, listens on 127.0.0.1 and prints "listening on <url>". Stops on SIGTERM.
// Usage: node bench/bare-serve.mjs <database file> [repo]
import { createRequire } from 'node:module';
import path from 'node:path';

const [file, repoArg] = process.argv.slice(2);
const repo = path.resolve(repoArg ?? path.join(path.dirname(new URL(import.meta.url).pathname), '..'));
const require = createRequire(path.join(repo, 'package.json'));
const { DuckDBInstance } = require('@duckdb/node-api');
const fastify = require('fastify');

const instance = await DuckDBInstance.create(file);
const conn = await instance.connect();
const server = fastify();
server.get('/api/tables', async () => (await conn.runAndReadAll('SELECT schema_name, table_name FROM duckdb_tables()')).getRowObjectsJson());
const url = await server.listen({ host: '127.0.0.1', port: 0 });
process.stdout.write(`listening on ${url}\n`);
process.on('SIGTERM', async () => {
  await server.close();
  conn.closeSync();
  instance.closeSync();
  process.exit(0);
});
