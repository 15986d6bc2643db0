/**
 * Kill-9 harness: starts a real `dp` process, SIGKILLs it at a seeded random point, and lets a
 * scenario check what the process left behind (tables complete-old or complete-new, state that
 * describes the table, no half-written file).
 *
 * A scenario says how to start the process, which output line marks progress, and how to check.
 * The kill point is "after k progress lines, then d ms", with k and d drawn from a seeded
 * generator, so a failing trial can be replayed with the same seed. New scenarios (version
 * snapshot create and restore) plug in by implementing `KillScenario`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { DuckDBInstance } from '@duckdb/node-api';
import { closeInProcessClis, DP_BIN, REPO_ROOT, runInProcess } from '../helpers.js';

/** mulberry32: a small deterministic generator (same seed, same kill points). */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function randomInt(rng: () => number, min: number, max: number): number {
  return min + Math.floor(rng() * (max - min + 1));
}

export interface Trial {
  index: number;
  rng: () => number;
}

export interface KillPoint {
  /** Kill after this many output lines matching `progress` (0: right after `ready`). */
  afterLines: number;
  /** Then wait this long. */
  delayMs: number;
}

export interface KillScenario {
  name: string;
  /** Output line that counts as one unit of progress (a model built, a seed loaded, a save answered). */
  progress: RegExp;
  /** Brings inputs to this trial's new state, then starts the process to kill. */
  start(trial: Trial): Promise<ChildProcess>;
  /** Chooses where to kill in this trial. */
  killPoint(trial: Trial): KillPoint;
  /**
   * When given, the kill point counts from when this settles as well as from the progress lines:
   * a scenario driven from outside (HTTP saves) waits for its first acknowledged unit of work, so
   * a slow machine cannot kill the process before it did anything.
   */
  armWhen?(trial: Trial): Promise<void>;
  /** Work done from outside once the process is ready and until it dies (e.g. HTTP saves). */
  drive?(trial: Trial, child: ChildProcess): Promise<void>;
  /** After the kill: throws (assert) when what is left breaks an invariant. */
  verify(trial: Trial, outcome: KillOutcome): Promise<void>;
}

export interface KillOutcome {
  /** Whether the process ended on its own before the kill point was reached. */
  finishedFirst: boolean;
  /** Progress lines seen before the kill, in order. */
  lines: string[];
  point: KillPoint;
}

/** Starts the real `dp` binary with arguments (logs silent, output piped). */
export function spawnDp(args: string[], cwd = REPO_ROOT): ChildProcess {
  return spawn(process.execPath, [DP_BIN, ...args], { cwd, env: { ...process.env, DP_LOG_SILENT: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Calls `onLine` for each complete line the child writes on stdout or stderr. */
export function onLines(child: ChildProcess, onLine: (line: string) => void): void {
  for (const stream of [child.stdout, child.stderr]) {
    let buffered = '';
    stream?.setEncoding('utf8');
    stream?.on('data', (chunk: string) => {
      buffered += chunk;
      let nl: number;
      while ((nl = buffered.indexOf('\n')) >= 0) {
        onLine(buffered.slice(0, nl));
        buffered = buffered.slice(nl + 1);
      }
    });
  }
}

function exited(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
  });
}

/** Runs one trial: start, wait for the kill point, SIGKILL, wait for the process to be gone, verify. */
export async function runKillTrial(scenario: KillScenario, trial: Trial): Promise<KillOutcome> {
  const point = scenario.killPoint(trial);
  const gate = scenario.armWhen?.(trial) ?? Promise.resolve();
  const child = await scenario.start(trial);
  const lines: string[] = [];
  const gone = exited(child);
  let finishedFirst = false;
  await new Promise<void>((resolve) => {
    let arming = false;
    let armed = false;
    const arm = () => {
      if (arming) return;
      arming = true;
      void gate.then(() => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        armed = true;
        setTimeout(() => {
          child.kill('SIGKILL');
          resolve();
        }, point.delayMs);
      });
    };
    onLines(child, (line) => {
      if (!scenario.progress.test(line)) return;
      lines.push(line);
      if (lines.length >= point.afterLines) arm();
    });
    if (point.afterLines === 0) arm();
    void gone.then(() => {
      if (!armed) finishedFirst = true;
      resolve();
    });
    if (scenario.drive) void scenario.drive(trial, child).catch(() => undefined);
  });
  await gone;
  const outcome = { finishedFirst, lines, point };
  await scenario.verify(trial, outcome);
  return outcome;
}

/** Runs `trials` seeded trials of a scenario one after the other; returns what each saw. */
export async function runKillTrials(scenario: KillScenario, options: { seed: number; trials: number }): Promise<KillOutcome[]> {
  const rng = seededRandom(options.seed);
  const out: KillOutcome[] = [];
  for (let index = 0; index < options.trials; index++) out.push(await runKillTrial(scenario, { index, rng }));
  return out;
}

/**
 * Runs `dp <args>` (with `--project`) to completion in this process (runInProcess: the same
 * parsing, handler, output and exit code), the setup and the check around a kill: only the killed
 * process has to be one. Its App is closed before it resolves, so the next spawned `dp` (and
 * withDatabase) can open the file; the App's start is the "next start" that finds what a kill left.
 */
export async function runDp(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let result: { code: number; stdout: string; stderr: string };
  try {
    result = await runInProcess(args);
  } finally {
    await closeInProcessClis();
  }
  // A file found locked after a kill: say which processes had a DuckDB file of the project open
  // right then, so a failure tells a live holder from an error that only looked like a lock.
  if (result.code !== 0 && /database_locked|in use by another process/.test(result.stdout + result.stderr)) {
    const at = args.indexOf('--project');
    const project = at >= 0 ? args[at + 1] : undefined;
    if (project) result = { ...result, stderr: `${result.stderr}\n(processes with a DuckDB file of the project open: ${openersOf(project)})` };
  }
  return result;
}

/** The processes (pid and command line) that have a `.duckdb` file under `folder` open, from /proc. */
export function openersOf(folder: string): string {
  const found: string[] = [];
  for (const pid of fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    let fds: string[];
    try {
      fds = fs.readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    const open = fds.some((fd) => {
      try {
        const target = fs.readlinkSync(`/proc/${pid}/fd/${fd}`);
        return target.startsWith(folder) && target.endsWith('.duckdb');
      } catch {
        return false;
      }
    });
    if (!open) continue;
    let cmd = '';
    try {
      cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
    } catch {
      // Gone meanwhile.
    }
    found.push(`${pid}${Number(pid) === process.pid ? ' (this test process)' : ''}: ${cmd}`);
  }
  return found.length ? found.join('; ') : 'none';
}

/** Opens a database file the killed process left (replaying its WAL) read-only, runs fn, closes it. */
export async function withDatabase<T>(file: string, fn: (all: (sql: string) => Promise<Record<string, unknown>[]>) => Promise<T>): Promise<T> {
  const instance = await DuckDBInstance.create(file, { access_mode: 'READ_ONLY' });
  const conn = await instance.connect();
  try {
    return await fn(async (sql) => (await conn.runAndReadAll(sql)).getRowObjectsJson() as Record<string, unknown>[]);
  } finally {
    conn.closeSync();
    instance.closeSync();
  }
}
