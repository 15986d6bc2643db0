/**
 * Notebook collaboration (issue 17): 20 Yjs clients typing into one document over loopback
 * WebSockets to a real server; the time from a keystroke to its arrival at each other client,
 * median and p99 (target p99 < 50 ms). The clients run in a child process, the server in this
 * one; the server's CPU time per keystroke (this process's CPU over the keystrokes) is the
 * figure that holds when the machine is loaded, the latencies are not.
 */
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { fork } from 'node:child_process';
import { startTestServer } from '../sdk/testing.js';
import { COLLAB_PLUGINS } from '../test/plugins/notebooks/collaboration-support.js';
import type { BenchResult } from './util.js';

const CLIENTS = 20;
const INTERVAL_MS = 100; // each typist: 10 keystrokes a second
const DURATION_MS = 5000;

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];

export default async function (): Promise<BenchResult[]> {
  const s = await startTestServer({ plugins: [], builtIn: COLLAB_PLUGINS, files: { 'notebooks/shared.sql': '-- typed together\n' } });
  try {
    const load = os.loadavg()[0];
    const elu = performance.eventLoopUtilization();
    const cpu = process.cpuUsage();
    const started = performance.now();
    const result = await new Promise<{ edits: number; expected: number; latencies: number[]; converged: boolean }>((resolve, reject) => {
      const job = { url: s.url, doc: 'notebooks/shared.sql', clients: CLIENTS, intervalMs: INTERVAL_MS, durationMs: DURATION_MS };
      const child = fork(path.join(path.dirname(fileURLToPath(import.meta.url)), 'collab-clients.js'), [JSON.stringify(job)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
      child.once('message', (m) => resolve(m as never));
      child.once('error', reject);
      child.once('exit', (code) => reject(new Error(`the clients' process exited with ${code} before reporting`)));
    });
    const used = process.cpuUsage(cpu);
    const busy = performance.eventLoopUtilization(elu);
    const seconds = (performance.now() - started) / 1000;
    const sorted = result.latencies.sort((a, b) => a - b);
    const p99 = quantile(sorted, 0.99);
    const loadAfter = os.loadavg()[0];
    return [
      { name: `${CLIENTS} clients, keystrokes typed (10/s each)`, value: result.edits, unit: 'edits' },
      { name: 'arrivals seen / expected (edits × 19)', value: sorted.length / Math.max(1, result.expected), unit: 'ratio', target: '1', ok: sorted.length === result.expected },
      { name: 'all clients converged to one text', value: result.converged ? 1 : 0, unit: 'bool', ok: result.converged },
      { name: 'edit → other client, median', value: quantile(sorted, 0.5), unit: 'ms' },
      { name: 'edit → other client, p99', value: p99, unit: 'ms', target: '< 50', ok: p99 < 50 },
      { name: 'edit → other client, max', value: sorted[sorted.length - 1] ?? 0, unit: 'ms' },
      { name: 'server CPU per keystroke (received, applied, sent to 19)', value: (used.user + used.system) / 1000 / Math.max(1, result.edits), unit: 'ms' },
      { name: 'server event-loop utilisation', value: busy.utilization, unit: 'ratio' },
      { name: 'machine load (1-min average, before / after)', value: `${load.toFixed(1)} / ${loadAfter.toFixed(1)} on ${os.cpus().length} cores (run ${seconds.toFixed(1)} s)` as unknown as number, unit: '' },
    ];
  } finally {
    await s.close();
  }
}
