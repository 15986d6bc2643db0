// Server start-up (issue 29): the CPU time (user + system, every thread) a `dp serve --no-scheduler`
// engine process uses from its start until it answers (its "listening on" line), on a built copy of
// examples/shop, beside a bare Node process that requires Fastify and @duckdb/node-api, opens the
// same file, registers one route and listens (bare-serve.mjs). The engine's CPU is read from /proc
// once the line is out, the supervisor's apart. Rounds alternate (dp, bare[, other], dp, ...) so a
// change in the machine's load hits all alike; figures are medians.
// Needs a build (npm run build). Usage: node bench/serve-start.mjs [rounds] [other checkout]
// (another checkout's dp against the same baseline: before and after a change).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { childPids, processCpuMs } from '../scripts/proc-cpu.mjs';
import { builtShopCopy, databaseFileOf, median } from './common.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');
const rounds = Number(process.argv[2] ?? 7);
const other = process.argv[3] ? path.resolve(process.argv[3]) : null;
/** Starts `args`, waits for its "listening on" line, reads the CPU of `pidOf(child)`, stops it. */
async function startCpu(args, cwd, pidOf) {
  const child = spawn(process.execPath, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, DP_LOG_SILENT: '1' } });
  let err = '';
  child.stderr.on('data', (d) => (err += d));
  await new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      if (/listening on/.test(out)) resolve();
    });
    child.on('exit', (code) => reject(new Error(`${args.join(' ')} ended (${code}) before it listened: ${err.slice(0, 500)}`)));
  });
  const ms = processCpuMs(pidOf(child));
  const exited = new Promise((resolve) => child.on('exit', resolve));
  child.kill('SIGTERM');
  await exited;
  return ms;
}

/** The engine: the one child of `dp serve`'s supervisor. */
const enginePid = (child) => childPids(child.pid)[0];

const project = builtShopCopy('dp-bench-serve-start-');
try {
  const file = databaseFileOf(project);
  const serve = (checkout) => [path.join(checkout, 'bin', 'dp.js'), 'serve', '--no-scheduler', '--port', '0'];
  const sides = { dp: () => startCpu(serve(root), project, enginePid), bare: () => startCpu([path.join(here, 'bare-serve.mjs'), file, root], project, (c) => c.pid) };
  if (other) sides.other = () => startCpu(serve(other), project, enginePid);
  const ms = Object.fromEntries(Object.keys(sides).map((k) => [k, []]));
  for (const run of Object.values(sides)) await run(); // warm the file cache for all
  for (let i = 0; i < rounds; i++) for (const [side, run] of Object.entries(sides)) ms[side].push(await run());
  const row = { dp_engine_cpu_ms: median(ms.dp), bare_cpu_ms: median(ms.bare), ratio: Math.round((median(ms.dp) / median(ms.bare)) * 100) / 100 };
  if (other) Object.assign(row, { other_engine_cpu_ms: median(ms.other), other_checkout: other });
  console.table([row]);
  console.log(`median of ${rounds} alternating rounds; machine: ${os.availableParallelism()} cores, load ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}, node ${process.version}`);
} finally {
  fs.rmSync(project, { recursive: true, force: true });
}
