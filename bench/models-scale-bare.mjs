// The baseline of the 10,000-model discovery bench (models-scale.bench.ts): a bare Node process
// that does the least a discovery must do, on the same files: read every model file, hash it
// (SHA-256), and have DuckDB's parser serialize every statement (json_serialize_sql) in one
// query, then JSON.parse each tree. Prints {"ms", "cpu"} of that work (DuckDB already open).
// Usage: node bench/models-scale-bare.mjs <project folder> [repo]
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';

const root = path.resolve(process.argv[2]);
const repo = path.resolve(process.argv[3] ?? path.join(path.dirname(new URL(import.meta.url).pathname), '..'));
const { DuckDBInstance } = await import(path.join(repo, 'node_modules/@duckdb/node-api/lib/index.js'));
const instance = await DuckDBInstance.create(':memory:');
const conn = await instance.connect();
await conn.run('SELECT 1');

const c0 = process.cpuUsage();
const t0 = performance.now();
const files = fs.readdirSync(path.join(root, 'transform'), { recursive: true, withFileTypes: true }).filter((d) => d.isFile() && d.name.endsWith('.sql'));
const texts = [];
const hashes = new Set();
for (const d of files) {
  const buf = fs.readFileSync(path.join(d.parentPath ?? d.path, d.name));
  hashes.add(crypto.createHash('sha256').update(buf).digest('hex'));
  texts.push(buf.toString('utf8').replace(/;\s*$/, ''));
}
const reader = await conn.runAndReadAll(
  `SELECT json_serialize_sql(l[i]) AS tree FROM (SELECT from_json($1::VARCHAR, '["VARCHAR"]') AS l) AS t, range(1, len(l) + 1) AS r(i)`,
  [JSON.stringify(texts)],
);
let statements = 0;
for (const [tree] of reader.getRows()) statements += JSON.parse(tree).statements?.length ?? 0;
const ms = performance.now() - t0;
const cpu = process.cpuUsage(c0);
if (statements !== files.length || hashes.size !== files.length) throw new Error(`parsed ${statements} statements of ${files.length} files`);
process.stdout.write(JSON.stringify({ ms, cpu: (cpu.user + cpu.system) / 1000, files: files.length }) + '\n');
conn.closeSync();
instance.closeSync();
