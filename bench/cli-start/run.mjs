// CLI start-up against the engine (issue 29): the CPU time (user + system) of `dp tables` and of
// `dp query "SELECT count(*) ..."` on a built copy of examples/shop, beside a bare Node process
// doing the same work with @duckdb/node-api alone (bare-duckdb.mjs). Runs alternate (dp, bare,
// bare with require, dp, ...) so a change in the machine's load hits all alike; the ratio is of
// the medians of 5. `ratio` is against the bare process as a user writes it (an ES import of
// the package, the target's baseline); `ratio_vs_require` against one that loads the package
// with require() as dp does, which skips Node's CommonJS export lexer over the package's files:
// that one is dp's overhead beyond the engine's own load.
// Needs a build (npm run build). Usage: node bench/cli-start/run.mjs [rounds] [dp.js]
// (another checkout's bin/dp.js measures its `dp` against the same baseline: before and after).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { builtShopCopy, databaseFileOf, median } from '../common.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..', '..');
const dp = path.resolve(process.argv[3] ?? path.join(root, 'bin', 'dp.js'));
const rounds = Number(process.argv[2] ?? 5);
const cpuFile = path.join(os.tmpdir(), `dp-bench-cpu-${process.pid}.json`);

/** Runs one process with the CPU reporter preloaded; returns its CPU ms and stdout. */
function cpuOf(args, cwd) {
  const r = spawnSync(process.execPath, ['--require', path.join(here, 'cpu-report.cjs'), ...args], {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, DP_LOG_SILENT: '1', DP_BENCH_CPU_FILE: cpuFile },
  });
  if (r.status !== 0) throw new Error(`${args.join(' ')} failed (${r.status}): ${r.stderr}`);
  const { user, system } = JSON.parse(fs.readFileSync(cpuFile, 'utf8'));
  return { ms: (user + system) / 1000, stdout: r.stdout };
}

// The example built once by the measured dp, so both sides read the same tables.
const project = builtShopCopy('dp-bench-cli-', dp);
try {
  const file = databaseFileOf(project);
  const sql = 'SELECT count(*) AS n FROM marts.customer_orders';
  const cases = [
    { name: 'dp tables', dp: [dp, 'tables'], work: [file, 'tables'] },
    { name: `dp query "${sql}"`, dp: [dp, 'query', sql], work: [file, 'query', sql] },
  ];
  const bare = path.join(here, 'bare-duckdb.mjs');
  const out = [];
  for (const c of cases) {
    const runs = { dp: c.dp, bare: [bare, ...c.work], required: [bare, '--require', ...c.work] };
    const ms = { dp: [], bare: [], required: [] };
    for (const args of Object.values(runs)) cpuOf(args, project); // warm the file cache for all
    for (let i = 0; i < rounds; i++) for (const [side, args] of Object.entries(runs)) ms[side].push(cpuOf(args, project).ms);
    const [dpMs, bareMs, requiredMs] = [median(ms.dp), median(ms.bare), median(ms.required)];
    out.push({
      command: c.name,
      dp_cpu_ms: Math.round(dpMs),
      bare_cpu_ms: Math.round(bareMs),
      ratio: Number((dpMs / bareMs).toFixed(2)),
      target: '<= 1.5',
      bare_require_cpu_ms: Math.round(requiredMs),
      ratio_vs_require: Number((dpMs / requiredMs).toFixed(2)),
    });
  }
  console.table(out);
  console.log(`machine: ${os.cpus().length} cores, load ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}, node ${process.version}`);
} finally {
  fs.rmSync(project, { recursive: true, force: true });
  fs.rmSync(cpuFile, { force: true });
}
