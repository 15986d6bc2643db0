// Reads of a table with masking policies (issue 35 item 1), measured from outside as the issue
// did: the real `dp serve --auth` of a checkout (default: this one) beside a bare Fastify + DuckDB
// route (bare-route.mjs) running the same SELECT unmasked on a copy of the same file. The table
// has seven columns, five masked (email, redact, phone, credit_card, hash). Cases:
//   masked    - viewer, all seven columns (five masked)
//   unmasked  - viewer, the two unmasked columns of that table
//   exempt    - admin (exempt), all seven columns
//   plain     - viewer, all seven columns of a table without policies
// Each case's server CPU time per request (the process's user + system time over N requests, 8
// at a time: load from other processes barely moves it) is compared with the bare route's for
// the same SELECT, rounds alternating dp and bare. ratio = bare CPU / dp CPU (≈ the throughput
// ratio on a saturated core). Needs a build. Usage: node bench/masked-read.mjs [repo] (N=2000 ROUNDS=3 ROWS=20)
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { childPids, mainThreadCpuMs, processCpuMs } from '../scripts/proc-cpu.mjs';
import { median } from './common.mjs';

const here = path.dirname(new URL(import.meta.url).pathname);
const repo = path.resolve(process.argv[2] ?? path.join(here, '..'));
const N = Number(process.env.N ?? 2000);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const ROWS = Number(process.env.ROWS ?? 20);
const { DuckDBInstance } = await import(path.join(repo, 'node_modules/@duckdb/node-api/lib/index.js'));

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'dp-masked-read-'));
fs.writeFileSync(path.join(root, 'project.yml'), 'name: masked\ndatabase:\n  path: masked.duckdb\n');
const COLUMNS = 'id, name, email, note, phone, card, ssn';
// Policies match by column name (any table), so the table without policies names its columns apart.
const PLAIN_COLUMNS = 'id, name, contact, remark, tel, pan, ident';
const table = (name, [id, nm, email, note, phone, card, ssn]) => `CREATE TABLE ${name} AS SELECT i AS ${id}, 'name ' || i AS ${nm}, 'user' || i || '@example.com' AS ${email},
  'private note ' || i AS ${note}, '555-01' || lpad(CAST(i % 100 AS VARCHAR), 2, '0') AS ${phone},
  '4111-1111-1111-' || lpad(CAST(i % 10000 AS VARCHAR), 4, '0') AS ${card}, lpad(CAST(i AS VARCHAR), 9, '0') AS ${ssn} FROM range(10000) t(i)`;
{
  const inst = await DuckDBInstance.create(path.join(root, 'masked.duckdb'));
  const c = await inst.connect();
  await c.run(table('people', COLUMNS.split(', ')));
  await c.run(table('plain_people', PLAIN_COLUMNS.split(', ')));
  c.closeSync();
  inst.closeSync();
}
fs.copyFileSync(path.join(root, 'masked.duckdb'), path.join(root, 'bare.duckdb'));
const dpJs = path.join(repo, 'bin/dp.js');
for (const [user, role] of [['admin', 'admin'], ['viewer', 'viewer']]) {
  const r = spawnSync(process.execPath, [dpJs, 'users', 'add', user, '--role', role, '--password', `${user}-password-1`, '--project', root], { encoding: 'utf8', env: { ...process.env, DP_LOG_SILENT: '1' } });
  if (r.status !== 0) throw new Error(`dp users add ${user}: ${r.stderr}`);
}

const start = (args) => {
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, DP_LOG_SILENT: '1' } });
  const url = new Promise((res, rej) => {
    child.on('exit', (code) => rej(new Error(`${args.join(' ')} exited (${code}) before listening`)));
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) res(m[1]);
    });
  });
  return { child, url };
};
const dp = start([...(process.env.PROF ? ['--cpu-prof', `--cpu-prof-dir=${process.env.PROF}`] : []), dpJs, 'serve', '--auth', '--no-scheduler', '--project', root, '--port', '0']);
const bare = start([path.join(here, 'bare-route.mjs'), path.join(root, 'bare.duckdb'), repo]);
process.on('exit', () => { dp.child.kill('SIGKILL'); bare.child.kill('SIGKILL'); });
const dpBase = await dp.url;
const bareUrl = await bare.url;

const json = async (url, body, token) => {
  const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) }, body: JSON.stringify(body) });
  const text = await r.text();
  if (r.status >= 300) throw new Error(`${url} answered ${r.status}: ${text.slice(0, 300)}`);
  return JSON.parse(text);
};
const token = async (user) => (await json(`${dpBase}/api/auth/login`, { username: user, password: `${user}-password-1` })).token;
process.stderr.write('dp serve and the bare route are up\n');
const adminToken = await token('admin');
const viewerToken = await token('viewer');
for (const [column, method] of [['email', 'email'], ['note', 'redact'], ['phone', 'phone'], ['card', 'credit_card'], ['ssn', 'hash']]) {
  await json(`${dpBase}/api/masking/policies`, { schema_name: 'main', table_name: 'people', column_name: column, method }, adminToken);
}

const select = (cols, from) => `SELECT ${cols} FROM ${from} WHERE id < ${ROWS} ORDER BY id`;
const cases = [
  { name: 'masked: viewer, 7 columns, 5 masked', sql: select(COLUMNS, 'people'), token: viewerToken, masked: true },
  { name: 'unmasked: viewer, the 2 unmasked columns', sql: select('id, name', 'people'), token: viewerToken, masked: false },
  { name: 'exempt: admin, 7 columns', sql: select(COLUMNS, 'people'), token: adminToken, masked: false },
  { name: 'plain: viewer, 7 columns of a table without policies', sql: select(PLAIN_COLUMNS, 'plain_people'), token: viewerToken, masked: false },
];
// Each answer checked before anything is timed: the viewer's is masked, the others are not.
for (const c of cases) {
  const r = await json(`${dpBase}/api/query`, { sql: c.sql }, c.token);
  if (r.rows.length !== ROWS) throw new Error(`${c.name}: ${r.rows.length} rows`);
  const email = r.rows[1].length === 7 ? r.rows[1][2] : undefined;
  if (email !== undefined && (email === 'user1@example.com') === c.masked) throw new Error(`${c.name}: email ${email}`);
}

// `dp serve` is a supervisor with the engine in a child process: the CPU of the whole tree counts.
const ticks = (pid) => processCpuMs(pid) + childPids(pid).reduce((n, c) => n + ticks(c), 0);
/** The main thread (event loop) of the process that serves: the engine child of `dp serve`, the bare route itself. */
const mainTicks = (pid) => mainThreadCpuMs(childPids(pid)[0] ?? pid);
/** Server CPU ms per request over N requests, 8 at a time. */
async function cpuPerRequest(child, url, sql, tok) {
  const post = () => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...(tok ? { authorization: `Bearer ${tok}` } : {}) }, body: JSON.stringify({ sql }) }).then((r) => r.arrayBuffer());
  for (let i = 0; i < 200; i++) await post();
  const t0 = ticks(child.pid);
  const m0 = mainTicks(child.pid);
  const w0 = performance.now();
  let i = 0;
  await Promise.all(Array.from({ length: 8 }, async () => { while (i++ < N) await post(); }));
  return { cpu: (ticks(child.pid) - t0) / N, main: (mainTicks(child.pid) - m0) / N, rps: N / ((performance.now() - w0) / 1000) };
}
const out = [];
// CASES=masked,exempt runs only those (e.g. with PROF=<folder>: node --cpu-prof of dp serve).
const only = process.env.CASES?.split(',');
for (const c of cases.filter((x) => !only || only.some((o) => x.name.startsWith(o)))) {
  const dpRuns = [];
  const bareRuns = [];
  for (let r = 0; r < ROUNDS; r++) {
    dpRuns.push(await cpuPerRequest(dp.child, `${dpBase}/api/query`, c.sql, c.token));
    bareRuns.push(await cpuPerRequest(bare.child, bareUrl, c.sql));
    process.stderr.write(`${c.name}, round ${r + 1}: dp ${dpRuns.at(-1).cpu.toFixed(3)} ms, bare ${bareRuns.at(-1).cpu.toFixed(3)} ms\n`);
  }
  const d = median(dpRuns.map((x) => x.cpu));
  const b = median(bareRuns.map((x) => x.cpu));
  out.push({ case: c.name, dp_cpu_ms: d.toFixed(3), bare_cpu_ms: b.toFixed(3), dp_main_ms: median(dpRuns.map((x) => x.main)).toFixed(3), bare_main_ms: median(bareRuns.map((x) => x.main)).toFixed(3), ratio: Number((b / d).toFixed(2)), dp_rps: Math.round(median(dpRuns.map((x) => x.rps))), bare_rps: Math.round(median(bareRuns.map((x) => x.rps))) });
}
console.table(out);
console.log(`N=${N} ROUNDS=${ROUNDS} ROWS=${ROWS}; ${os.cpus().length} cores, load ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}, node ${process.version}`);
dp.child.kill('SIGTERM');
bare.child.kill('SIGTERM');
await Promise.all([dp, bare].map((s) => new Promise((r) => (s.child.exitCode !== null ? r() : s.child.on('exit', r)))));
fs.rmSync(root, { recursive: true, force: true });
