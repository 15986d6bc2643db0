// Server start-up (issue 29): the CPU time (user + system, every thread) a `dp serve --no-scheduler`
// engine process uses from its start until it answers (its "listening on" line), on a built copy of
// examples/shop, beside a bare Node process that requires Fastify and @duckdb/node-api, opens the
// same file, registers one route and listens (bare-serve.mjs). The engine's CPU is read from /proc
// once the line is out, the supervisor's apart. Rounds alternate (dp, bare[, other], dp, ...) so a
// change in the machine's load hits all alike; figures are medians.
// Needs a build (npm run build). Usage: node bench/serve-start.mjs [rounds] [other checkout]
// (another checkout's dp against the same baseline: before and after a change).
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '..');
const rounds = Number(process.argv[2] ?? 7);
const other = process.argv[3] ? path.resolve(process.argv[3]) : null;
/** Clock ticks per second of /proc's times (USER_HZ). */
const TICKS_PER_SECOND = 100;

/** User + system CPU ms of a live process, every thread, from /proc/<pid>/stat. */
function liveCpuMs(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND) * 1000;
}

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
  const ms = liveCpuMs(pidOf(child));
  const exited = new Promise((resolve) => child.on('exit', resolve));
  child.kill('SIGTERM');
  await exited;
  return ms;
}

/** The engine: the one child of `dp serve`'s supervisor. */
const enginePid = (child) => Number(fs.readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').trim().split(/\s+/)[0]);

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

const project = fs.mkdtempSync(path.join(os.tmpdir(), 'dp-bench-serve-start-'));
fs.cpSync(path.join(root, 'examples', 'shop'), project, { recursive: true, filter: (src) => !/\.duckdb(\.wal)?$|\.service-env$/.test(src) });
try {
  for (const step of ['seed', 'transform']) {
    const r = spawnSync(process.execPath, [path.join(root, 'bin', 'dp.js'), step], { cwd: project, encoding: 'utf8', env: { ...process.env, DP_LOG_SILENT: '1' } });
    if (r.status !== 0) throw new Error(`dp ${step} failed: ${r.stderr}`);
  }
  const file = path.join(project, fs.readdirSync(project).find((f) => f.endsWith('.duckdb')));
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
