/**
 * `dp transform --force` of a generated 200-model project as a user runs it (a new process, every
 * plugin loaded, every hook running: quality records and profiles each build, masking derives its
 * policies, run history), against a bare Node process running the same CREATE statements in
 * order on its own copy of the database (transform-bare.mjs), process start included on both
 * sides. Rounds alternate so load from other processes hits both alike; wall time and CPU time
 * (user + system of the whole process, DuckDB's threads included, read by bench/cli-start's
 * cpu-report.cjs) are the medians. The same project with anomaly detection off (no profile per
 * build) runs in the same rounds, to show what the profiles cost. DP_BENCH_ROUNDS (default 5) sets the rounds.
 * Alone: `node scripts/build.mjs && node bench/run.mjs transform-process`; DP_BENCH_REPO=<checkout>
 * times that checkout's `dp` against the same baseline (before and after a change).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import type { BenchResult } from './util.js';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const MODELS = 200;
const BASES = 20;
const ROWS = 20_000;

/** Layered models (as models.bench.ts): each reads one or two earlier models through a CTE and a join. */
function generate(root: string): string[] {
  fs.writeFileSync(path.join(root, 'project.yml'), 'name: bench\ndatabase:\n  path: bench.duckdb\n');
  const statements: string[] = [];
  for (let i = 0; i < MODELS; i++) {
    const schema = `layer${Math.floor(i / 100)}`;
    const ref = (k: number) => `layer${Math.floor(k / 100)}.m${k}`;
    const sql =
      i < BASES
        ? `SELECT range AS id, range % 10 AS g, (range * ${i + 1}) % 97 AS v FROM range(${ROWS})`
        : `WITH a AS (SELECT id, g, v FROM ${ref((i * 7919) % i)})\nSELECT a.id, a.g, a.v + b.v AS v FROM a JOIN ${ref((i * 104729 + 13) % i)} AS b USING (id)`;
    fs.mkdirSync(path.join(root, 'transform', schema), { recursive: true });
    fs.writeFileSync(path.join(root, 'transform', schema, `m${i}.sql`), `-- @config materialized=table, schema=${schema}\n${sql}\n`);
    statements.push(`${i % 100 === 0 ? `CREATE SCHEMA IF NOT EXISTS ${schema}; ` : ''}CREATE OR REPLACE TABLE ${schema}.m${i} AS\n${sql}`);
  }
  return statements;
}

/** Wall and CPU milliseconds of one process (CPU: its own report on exit). */
function processTime(args: string[], cwd: string, cpuFile: string): { ms: number; cpu: number } {
  const t = performance.now();
  const r = spawnSync(process.execPath, ['--require', path.join(REPO, 'bench', 'cli-start', 'cpu-report.cjs'), ...args], {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, DP_LOG_SILENT: '1', DP_BENCH_CPU_FILE: cpuFile },
  });
  const ms = performance.now() - t;
  if (r.status !== 0) throw new Error(`${args.join(' ')} failed (${r.status}): ${r.stderr.slice(0, 500)}`);
  const { user, system } = JSON.parse(fs.readFileSync(cpuFile, 'utf8'));
  return { ms, cpu: (user + system) / 1000 };
}

export default async function run(): Promise<BenchResult[]> {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'dp-bench-transform-'));
  const cpuFile = path.join(root, 'cpu.json');
  const rounds = Number(process.env.DP_BENCH_ROUNDS ?? 5);
  try {
    const project = path.join(root, 'project');
    fs.mkdirSync(project);
    const statementsFile = path.join(root, 'statements.json');
    fs.writeFileSync(statementsFile, JSON.stringify(generate(project)));
    // The same project without anomaly detection's per-build profiles (quality.anomaly_detection), in
    // the same rounds: what the profiles cost, apart from the engine and every other hook.
    const unprofiled = path.join(root, 'unprofiled');
    fs.cpSync(project, unprofiled, { recursive: true });
    fs.appendFileSync(path.join(unprofiled, 'project.yml'), 'quality:\n  anomaly_detection:\n    enabled: false\n');
    const dpOf = (dir: string) => [path.join(process.env.DP_BENCH_REPO ?? REPO, 'bin', 'dp.js'), 'transform', '--force', '--project', dir];
    const dp = dpOf(project);
    const dpUnprofiled = dpOf(unprofiled);
    const bare = [path.join(REPO, 'bench', 'transform-bare.mjs'), path.join(root, 'bare.duckdb'), statementsFile, REPO];
    // A first run of each builds every table, so each timed round replaces existing tables as a rerun does.
    processTime(dp, root, cpuFile);
    processTime(dpUnprofiled, root, cpuFile);
    processTime(bare, root, cpuFile);
    const dpRuns: Array<{ ms: number; cpu: number }> = [];
    const unprofiledRuns: Array<{ ms: number; cpu: number }> = [];
    const bareRuns: Array<{ ms: number; cpu: number }> = [];
    for (let i = 0; i < rounds; i++) {
      dpRuns.push(processTime(dp, root, cpuFile));
      unprofiledRuns.push(processTime(dpUnprofiled, root, cpuFile));
      bareRuns.push(processTime(bare, root, cpuFile));
    }
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    const dpMs = median(dpRuns.map((r) => r.ms));
    const unprofiledMs = median(unprofiledRuns.map((r) => r.ms));
    const bareMs = median(bareRuns.map((r) => r.ms));
    const dpCpu = median(dpRuns.map((r) => r.cpu));
    const bareCpu = median(bareRuns.map((r) => r.cpu));
    return [
      { name: `bare Node: the 200 CREATE statements in order, process start included (median of ${rounds})`, value: bareMs, unit: 'ms' },
      { name: '`dp transform --force`, 200 models, every plugin', value: dpMs, unit: 'ms' },
      { name: 'dp / bare, wall time', value: dpMs / bareMs, unit: 'x', target: '<= 1.1', ok: dpMs / bareMs <= 1.1 },
      { name: 'CPU time (all threads): bare / dp', value: bareCpu, unit: `ms / ${dpCpu.toFixed(0)} ms` },
      { name: 'dp / bare, CPU time', value: dpCpu / bareCpu, unit: 'x' },
      { name: '`dp transform --force` without anomaly detection (no per-build profiles), every other hook', value: unprofiledMs, unit: 'ms' },
      { name: 'the same / bare, wall time', value: unprofiledMs / bareMs, unit: 'x' },
    ];
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
}
