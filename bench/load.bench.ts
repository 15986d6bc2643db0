/**
 * Load on a real `dp serve` process (the binary, so its libuv pool and query slots are the
 * ones under test), loopback only: 50 and then 200 concurrent clients sending small
 * `/api/query` requests for a bounded time each. Reports req/s, p50, p99, errors and the
 * server's peak RSS. Issue 11's figures; run with `npm run bench -- load`.
 * DP_LOAD_REPO=<another built checkout> serves that checkout's `dp` instead, with this same load,
 * for before/after comparisons (bench/README.md runs them alternately).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { DuckDBInstance } from '@duckdb/node-api';
import { Agent } from 'undici';
import { REPO_ROOT } from '../kernel/plugins.js';
import type { BenchResult } from './util.js';

const SETUP = "CREATE TABLE bench_t AS SELECT i AS id, 'name ' || i AS name, i * 1.5 AS amount FROM range(100000) t(i)";
const SQL = 'SELECT id, name, amount FROM bench_t WHERE id BETWEEN $lo AND $lo + 9 ORDER BY id';
/** Seconds of load per client count (bounded: the whole bench takes under a minute). */
const SECONDS = Number(process.env.DP_LOAD_SECONDS ?? 8);
const CLIENTS = [50, 200];

/** The server's resident set (kB in /proc; 0 where there is no /proc). */
function rssOf(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

export default async function run(): Promise<BenchResult[]> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'dp-bench-load-'));
  fs.writeFileSync(path.join(root, 'project.yml'), 'name: load\ndatabase:\n  path: load.duckdb\n');
  const bin = path.join(process.env.DP_LOAD_REPO ?? REPO_ROOT, 'bin', 'dp.js');
  // The table is made before the server holds the file (the query API is read-only).
  const setup = await DuckDBInstance.create(path.join(root, 'load.duckdb'));
  const conn = await setup.connect();
  await conn.run(SETUP);
  conn.closeSync();
  setup.closeSync();
  const child = spawn(process.execPath, [bin, 'serve', '--project', root, '--port', '0'], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, DP_LOG_SILENT: '1' } });
  const results: BenchResult[] = [];
  const agent = new Agent({ connections: 256, pipelining: 1 });
  try {
    const base = await new Promise<string>((resolve, reject) => {
      let out = '';
      child.stdout!.on('data', (d) => {
        out += d;
        const m = /listening on (http:\/\/\S+)/.exec(out);
        if (m) resolve(m[1]);
      });
      child.on('exit', (code) => reject(new Error(`dp serve exited with ${code}`)));
    });
    const post = (body: unknown) =>
      fetch(`${base}/api/query`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), dispatcher: agent } as RequestInit);
    const warm = await post({ sql: SQL, params: { lo: 0 } });
    if (warm.status !== 200) throw new Error(`dp serve answered ${warm.status}: ${await warm.text()}`);

    for (const clients of CLIENTS) {
      const latencies: number[] = [];
      let errors = 0;
      let peakRss = rssOf(child.pid!);
      const sampler = setInterval(() => (peakRss = Math.max(peakRss, rssOf(child.pid!))), 100);
      const stopAt = performance.now() + SECONDS * 1000;
      const client = async (n: number) => {
        let i = n;
        while (performance.now() < stopAt) {
          const t = performance.now();
          try {
            const res = await post({ sql: SQL, params: { lo: (i++ * 37) % 99_990 } });
            await res.arrayBuffer();
            if (res.status === 200) latencies.push(performance.now() - t);
            else errors++;
          } catch {
            errors++;
          }
        }
      };
      const started = performance.now();
      await Promise.all(Array.from({ length: clients }, (_, n) => client(n)));
      const elapsed = (performance.now() - started) / 1000;
      clearInterval(sampler);
      latencies.sort((a, b) => a - b);
      results.push(
        { name: `${clients} clients: requests per second`, value: latencies.length / elapsed, unit: 'req/s' },
        { name: `${clients} clients: p50 latency`, value: percentile(latencies, 50), unit: 'ms' },
        { name: `${clients} clients: p99 latency`, value: percentile(latencies, 99), unit: 'ms' },
        { name: `${clients} clients: errors`, value: errors, unit: 'requests', target: '0', ok: errors === 0 },
        { name: `${clients} clients: server peak RSS`, value: peakRss / 1e6, unit: 'MB' },
      );
    }
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.on('exit', r));
    await agent.close();
    fs.rmSync(root, { recursive: true, force: true });
  }
  return results;
}
