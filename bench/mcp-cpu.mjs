// Server CPU time per MCP call (issue 34 item 5): starts the real `dp serve --no-scheduler` of a
// checkout (default: this one) on a small project (a 100k-row table, 20 models) and sends MCP
// JSON-RPC calls to POST /mcp, 4 at a time: `tools/call query` (a 10-row SELECT), `tools/call
// list_models` and `tools/list`, N of each (default 1,000) after a warm-up. CPU is read from
// /proc for the engine process (the child of the supervisor that holds the database and answers
// /mcp) and for its main thread alone, divided by the calls: unlike calls per second, load from
// other processes barely moves it. Usage: node bench/mcp-cpu.mjs [checkout] (N=1000)
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { childPids, mainThreadCpuMs, processCpuMs } from '../scripts/proc-cpu.mjs';

const repo = path.resolve(process.argv[2] ?? path.join(path.dirname(new URL(import.meta.url).pathname), '..'));
const N = Number(process.env.N ?? 1000);
const { DuckDBInstance } = await import(path.join(repo, 'node_modules/@duckdb/node-api/lib/index.js'));
const root = fs.mkdtempSync(path.join(os.tmpdir(), 'dp-mcp-cpu-'));
fs.writeFileSync(path.join(root, 'project.yml'), 'name: mcp\ndatabase:\n  path: mcp.duckdb\n');
fs.mkdirSync(path.join(root, 'transform'), { recursive: true });
for (let i = 0; i < 20; i++) {
  fs.writeFileSync(path.join(root, 'transform', `m${i}.sql`), `-- @config materialized=view\nSELECT id, amount * ${i + 1} AS v FROM ${i ? `m${i - 1}` : 'bench_t'}\n`);
}
const inst = await DuckDBInstance.create(path.join(root, 'mcp.duckdb'));
const c = await inst.connect();
await c.run("CREATE TABLE bench_t AS SELECT i AS id, 'name ' || i AS name, i * 1.5 AS amount FROM range(100000) t(i)");
c.closeSync();
inst.closeSync();

const child = spawn(process.execPath, [path.join(repo, 'bin/dp.js'), 'serve', '--no-scheduler', '--project', root, '--port', '0'], {
  stdio: ['ignore', 'pipe', 'inherit'],
  env: { ...process.env, DP_LOG_SILENT: '1' },
});
process.on('exit', () => child.kill('SIGTERM'));
const base = await new Promise((resolve, reject) => {
  child.on('exit', (code) => reject(new Error(`dp serve exited (${code}) before listening`)));
  let out = '';
  child.stdout.on('data', (d) => {
    out += d;
    const m = /listening on (http:\/\/\S+)/.exec(out);
    if (m) resolve(m[1]);
  });
});
const [engine] = childPids(child.pid);
const cpu = () => processCpuMs(engine);
const mainCpu = () => mainThreadCpuMs(engine);

let id = 0;
const calls = {
  'tools/call query': () => ({ method: 'tools/call', params: { name: 'query', arguments: { sql: 'SELECT id, name, amount FROM bench_t WHERE id BETWEEN 500 AND 509 ORDER BY id' } } }),
  'tools/call list_models': () => ({ method: 'tools/call', params: { name: 'list_models', arguments: {} } }),
  'tools/list': () => ({ method: 'tools/list', params: {} }),
};
const send = async (body) => {
  const r = await fetch(`${base}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: ++id, ...body }),
  });
  const text = await r.text();
  if (r.status !== 200 || text.includes('"isError":true') || text.includes('"error":{')) throw new Error(`${body.method} answered ${r.status}: ${text.slice(0, 300)}`);
};
const rows = [];
for (const [name, make] of Object.entries(calls)) {
  for (let i = 0; i < 50; i++) await send(make());
  const c0 = cpu();
  const m0 = mainCpu();
  const t0 = performance.now();
  let sent = 0;
  await Promise.all(Array.from({ length: 4 }, async () => {
    while (sent < N) {
      sent++;
      await send(make());
    }
  }));
  const wall = performance.now() - t0;
  rows.push({ call: name, 'CPU ms/call': ((cpu() - c0) / N).toFixed(3), 'main thread ms/call': ((mainCpu() - m0) / N).toFixed(3), 'calls/s': ((N / wall) * 1000).toFixed(0) });
}
console.table(rows);
console.log(`checkout ${repo}, N=${N}, load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}, ${os.cpus().length} cores`);
child.kill('SIGTERM');
fs.rmSync(root, { recursive: true, force: true });
process.exit(0);
