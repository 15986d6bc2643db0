// The baseline of the transform bench (transform-process.bench.ts): a bare Node process that
// opens the DuckDB file and runs the project's CREATE statements one after another, as the
// models would be built in order, with nothing else. Usage:
// node bench/transform-bare.mjs <database file> <statements.json> [repo]
import fs from 'node:fs';
import path from 'node:path';

const [file, statementsFile, repoArg] = process.argv.slice(2);
const repo = path.resolve(repoArg ?? path.join(path.dirname(new URL(import.meta.url).pathname), '..'));
const { DuckDBInstance } = await import(path.join(repo, 'node_modules/@duckdb/node-api/lib/index.js'));
const statements = JSON.parse(fs.readFileSync(statementsFile, 'utf8'));
const instance = await DuckDBInstance.create(file);
const conn = await instance.connect();
for (const sql of statements) await conn.run(sql);
conn.closeSync();
instance.closeSync();
