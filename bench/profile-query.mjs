// Where a `dp serve` process spends its CPU under /api/query load: starts the real binary of a
// checkout (default: this one) with `node --cpu-prof` on a 100k-row table, loads it with
// autocannon (connections kept open) for a few seconds, stops it with SIGTERM (the profile is
// written on exit) and prints the top functions by self time, plus the time grouped by file.
// Usage: node bench/profile-query.mjs [repo] [--seconds 10] [--connections 50] [--auth viewer|admin] [--policies 5]
// SQL='SELECT 1' times another query. The .cpuprofile stays in the printed folder (open it in
// Chrome DevTools for the call tree).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { seconds: { type: 'string', default: '10' }, connections: { type: 'string', default: '50' }, top: { type: 'string', default: '30' }, callers: { type: 'string', multiple: true, default: [] } },
});
const repo = path.resolve(positionals[0] ?? path.join(path.dirname(new URL(import.meta.url).pathname), '..'));
const { DuckDBInstance } = await import(path.join(repo, 'node_modules/@duckdb/node-api/lib/index.js'));
const autocannon = (await import(path.join(repo, 'node_modules/autocannon/autocannon.js'))).default;

const root = fs.mkdtempSync(path.join(os.tmpdir(), 'dp-profile-'));
const profDir = path.join(root, 'prof');
fs.writeFileSync(path.join(root, 'project.yml'), 'name: load\ndatabase:\n  path: load.duckdb\n');
const inst = await DuckDBInstance.create(path.join(root, 'load.duckdb'));
const c = await inst.connect();
await c.run("CREATE TABLE bench_t AS SELECT i AS id, 'name ' || i AS name, i * 1.5 AS amount FROM range(100000) t(i)");
c.closeSync();
inst.closeSync();

const child = spawn(process.execPath, ['--cpu-prof', `--cpu-prof-dir=${profDir}`, path.join(repo, 'bin/dp.js'), 'serve', '--project', root, '--port', '0'], {
  stdio: ['ignore', 'pipe', 'inherit'],
  env: { ...process.env, DP_LOG_SILENT: '1' },
});
const base = await new Promise((res) => {
  let out = '';
  child.stdout.on('data', (d) => {
    out += d;
    const m = /listening on (http:\/\/\S+)/.exec(out);
    if (m) res(m[1]);
  });
});
const SQL = process.env.SQL ?? 'SELECT id, name, amount FROM bench_t WHERE id BETWEEN $lo AND $lo + 9 ORDER BY id';
const body = JSON.stringify({ sql: SQL, params: SQL.includes('$lo') ? { lo: 42 } : undefined });
const warm = await fetch(`${base}/api/query`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
if (warm.status !== 200) throw new Error(`dp serve answered ${warm.status}: ${await warm.text()}`);
const result = await autocannon({
  url: `${base}/api/query`,
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body,
  connections: Number(values.connections),
  duration: Number(values.seconds),
});
console.log(`${result.requests.average.toFixed(0)} req/s, p99 ${result.latency.p99} ms, non-2xx ${result.non2xx}, errors ${result.errors}`);
child.kill('SIGTERM');
await new Promise((r) => child.on('exit', r));

const file = fs.readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'));
const profile = JSON.parse(fs.readFileSync(path.join(profDir, file), 'utf8'));
const dt = new Map();
for (let i = 0; i < profile.samples.length; i++) dt.set(profile.samples[i], (dt.get(profile.samples[i]) ?? 0) + (profile.timeDeltas[i] ?? 0));
const total = [...dt.values()].reduce((a, b) => a + b, 0);
const byFn = new Map();
const byFile = new Map();
const short = (url) => url.replace(/^file:\/\//, '').replace(repo + '/', '').replace(/^.*node_modules\//, 'node_modules/');
for (const node of profile.nodes) {
  const t = dt.get(node.id) ?? 0;
  if (!t) continue;
  const cf = node.callFrame;
  const where = cf.url ? `${short(cf.url)}:${cf.lineNumber + 1}` : '';
  const key = `${cf.functionName || '(anonymous)'} ${where}`.trim();
  byFn.set(key, (byFn.get(key) ?? 0) + t);
  const f = cf.url ? short(cf.url).replace(/^(node_modules\/(@[^/]+\/)?[^/]+).*$/, '$1') : cf.functionName;
  byFile.set(f, (byFile.get(f) ?? 0) + t);
}
const pct = (t) => `${((100 * t) / total).toFixed(1).padStart(5)}%`;
console.log(`\nprofile: ${path.join(profDir, file)} (${(total / 1e6).toFixed(1)} s sampled)\n\ntop functions by self time:`);
for (const [k, t] of [...byFn].sort((a, b) => b[1] - a[1]).slice(0, Number(values.top))) console.log(`${pct(t)}  ${k}`);
console.log('\nby file / package:');
for (const [k, t] of [...byFile].sort((a, b) => b[1] - a[1]).slice(0, 20)) console.log(`${pct(t)}  ${k}`);

// --callers NAME: who calls the functions named NAME, by the callers' share of NAME's self time.
const parent = new Map();
for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node);
for (const name of values.callers) {
  const stacks = new Map();
  for (const node of profile.nodes) {
    if (node.callFrame.functionName !== name) continue;
    const t = dt.get(node.id) ?? 0;
    if (!t) continue;
    const chain = [];
    for (let p = parent.get(node.id); p && chain.length < 6; p = parent.get(p.id)) chain.push(`${p.callFrame.functionName || '(anon)'}@${short(p.callFrame.url)}:${p.callFrame.lineNumber + 1}`);
    const k = chain.join(' < ');
    stacks.set(k, (stacks.get(k) ?? 0) + t);
  }
  console.log(`\ncallers of ${name}:`);
  for (const [k, t] of [...stacks].sort((a, b) => b[1] - a[1]).slice(0, 8)) console.log(`${pct(t)}  ${k}`);
}
