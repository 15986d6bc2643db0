/**
 * CLI start-up: `dp --help` end to end (a fresh node process each time, as a user runs it).
 * The kernel issue asks for well under half a second.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { REPO_ROOT } from '../kernel/plugins.js';
import type { BenchResult } from './util.js';

export default async function run(): Promise<BenchResult[]> {
  const bin = path.join(REPO_ROOT, 'bin', 'dp.js');
  const once = () => {
    const t = performance.now();
    const r = spawnSync(process.execPath, [bin, '--help'], { cwd: REPO_ROOT, encoding: 'utf8' });
    if (r.status !== 0 || !r.stdout.includes('dp transform')) throw new Error(`dp --help failed: ${r.stderr}`);
    return performance.now() - t;
  };
  once();
  const times = Array.from({ length: 10 }, once).sort((a, b) => a - b);
  const median = (times[4] + times[5]) / 2;
  return [{ name: 'dp --help, fresh process (median of 10)', value: median, unit: 'ms', target: '< 500 ms', ok: median < 500 }];
}
