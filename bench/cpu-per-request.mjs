// Server CPU time per POST /api/query: starts the real 'dp serve' of a checkout (default: this one)
// on a 100k-row table and divides the process's CPU time by the requests (3,000, 8 at a time).
// Load from other processes barely moves it, unlike req/s. Usage: node bench/cpu-per-request.mjs [repo]
// [SQL='SELECT 1' to time another query]
import { spawn } from 'node:child_process';
import fs from 'node:fs'; import os from 'node:os'; import path from 'node:path';
import { childPids, mainThreadCpuMs, processCpuMs } from '../scripts/proc-cpu.mjs';
const repo = process.argv[2] ?? path.join(path.dirname(new URL(import.meta.url).pathname), '..');
const { DuckDBInstance } = await import(path.join(repo, 'node_modules/@duckdb/node-api/lib/index.js'));
const root = fs.mkdtempSync(path.join(os.tmpdir(), 'cpuper-'));
fs.writeFileSync(path.join(root, 'project.yml'), 'name: load\ndatabase:\n  path: load.duckdb\n');
const inst = await DuckDBInstance.create(path.join(root, 'load.duckdb')); const c = await inst.connect();
await c.run("CREATE TABLE bench_t AS SELECT i AS id, 'name ' || i AS name, i * 1.5 AS amount FROM range(100000) t(i)"); c.closeSync(); inst.closeSync();
const child = spawn(process.execPath, [path.join(repo, 'bin/dp.js'), 'serve', '--project', root, '--port', '0'], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, DP_LOG_SILENT: '1' } });
const base = await new Promise((res) => { let out = ''; child.stdout.on('data', (d) => { out += d; const m = /listening on (http:\/\/\S+)/.exec(out); if (m) res(m[1]); }); });
// The engine (the supervisor's child, which serves), whole and its main thread alone (the event loop: what one core can serve).
const [engine] = childPids(child.pid);
const cpu = () => processCpuMs(engine);
const mainCpu = () => mainThreadCpuMs(engine);
const SQL = process.env.SQL ?? 'SELECT id, name, amount FROM bench_t WHERE id BETWEEN $lo AND $lo + 9 ORDER BY id';
const post = (lo) => fetch(`${base}/api/query`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ sql: SQL, params: SQL.includes('$lo') ? { lo } : undefined }) }).then((r) => r.arrayBuffer());
for (let i = 0; i < 300; i++) await post(i);
const N = Number(process.env.N ?? 3000); const t0 = cpu(); const m0 = mainCpu(); let i = 0;
await Promise.all(Array.from({ length: 8 }, async () => { while (i < N) await post((i++ * 37) % 99990); }));
const ms = cpu() - t0; const mainMs = mainCpu() - m0;
console.log(`${(ms / N).toFixed(3)} ms CPU/request, ${(mainMs / N).toFixed(3)} ms of it on the main thread`);
child.kill('SIGKILL'); fs.rmSync(root, { recursive: true, force: true });
process.exit(0);
