// The SQL transpiler's WebAssembly (sdk/polyglot.ts): a process that imports @polyglot-sql/sdk and
// transpiles N distinct DuckDB queries to ClickHouse, loaded through dp's loadPolyglot() (V8's
// baseline compiler only) beside the same process importing the package plainly (V8's defaults:
// dynamic tiering to TurboFan), alternating rounds. Wall time and CPU (user + system of every
// thread, including the background compilation a process waits for before it exits) of the whole
// process, read from /proc/self/stat's children fields after each one has been waited for.
// Needs a build (npm run build). Usage: node bench/transpiler-start.mjs [rounds] [queries per process ...]
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { endedChildrenCpuSeconds } from '../scripts/proc-cpu.mjs';
import { median } from './common.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const rounds = Number(process.argv[2] ?? 5);
const sizes = process.argv.length > 3 ? process.argv.slice(3).map(Number) : [1, 2000];
const program = (load, n) => `
const { transpile, Dialect } = await (${load});
for (let i = 0; i < ${n}; i++) {
  const r = transpile('SELECT a, count(*) AS n FROM t' + i + ' WHERE x > 1 GROUP BY a ORDER BY 2 DESC LIMIT 10', Dialect.DuckDB, Dialect.ClickHouse);
  if (!r.success) throw new Error(r.error);
}`;
/** Each variant's program for n queries. */
const variants = {
  dp: (n) => program(`(await import(${JSON.stringify(path.join(root, 'dist', 'sdk', 'polyglot.js'))})).loadPolyglot()`, n),
  plain: (n) => program(`import('@polyglot-sql/sdk')`, n),
};

function once(variant, n) {
  const cpu0 = endedChildrenCpuSeconds();
  const t0 = performance.now();
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', variants[variant](n)], { cwd: root, encoding: 'utf8' });
  const ms = performance.now() - t0;
  if (r.status !== 0) throw new Error(`${variant} failed: ${r.stderr}`);
  return { ms, cpu: (endedChildrenCpuSeconds() - cpu0) * 1000 };
}

const rows = [];
for (const n of sizes) {
  const got = { dp: [], plain: [] };
  for (let r = 0; r < rounds; r++) for (const v of ['dp', 'plain']) got[v].push(once(v, n));
  const m = (v, k) => median(got[v].map((x) => x[k]));
  rows.push({ queries: n, dp_wall_ms: m('dp', 'ms'), plain_wall_ms: m('plain', 'ms'), dp_cpu_ms: m('dp', 'cpu'), plain_cpu_ms: m('plain', 'cpu') });
}
console.log(`| queries per process | dp (Liftoff only): wall / CPU ms | plain import (V8 defaults): wall / CPU ms | dp / plain CPU |`);
console.log('|---|---|---|---|');
for (const r of rows) {
  console.log(`| ${r.queries} | ${r.dp_wall_ms.toFixed(0)} / ${r.dp_cpu_ms.toFixed(0)} | ${r.plain_wall_ms.toFixed(0)} / ${r.plain_cpu_ms.toFixed(0)} | ${(r.dp_cpu_ms / r.plain_cpu_ms).toFixed(2)} |`);
}
console.log(`\n(median of ${rounds} alternating rounds; node ${process.version}, ${os.availableParallelism()} cores, load ${os.loadavg()[0].toFixed(1)})`);
