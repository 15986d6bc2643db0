/**
 * Test harness: real project folders in a temp dir, a real App with a real DuckDB file,
 * and a real HTTP server on 127.0.0.1 (random port). No mocks.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after } from 'node:test';
import { App } from '../kernel/app.js';
import type { ServerOptions } from '../kernel/http.js';
import { REPO_ROOT } from '../kernel/plugins.js';
import { httpRequester, runCommand, serveApp, type CommandResult } from '../sdk/testing.js';
import type { Clock } from '../sdk/scheduler.js';
import { relayRun } from './support/relay-client.js';
import { hashTree, sharedTemplate, suiteRun } from './support/templates.js';

process.env.DP_LOG_SILENT ??= '1';

export { REPO_ROOT };
export const DP_BIN = path.join(REPO_ROOT, 'bin', 'dp.js');
export const SHOP_EXAMPLE = path.join(REPO_ROOT, 'examples', 'shop');
/** Test-only plugins (load one with `plugins: {paths: [...]}`); never shipped. */
export const FIXTURE_PLUGINS = path.join(REPO_ROOT, 'test', 'fixtures', 'plugins');

/** Temp folders the test process made (projects, each with a DuckDB file, and others); removed when it exits. */
const madeFolders: string[] = [];
process.on('exit', () => {
  for (const folder of madeFolders) fs.rmSync(folder, { recursive: true, force: true });
});

/** A new empty folder under the OS temp dir, removed when the test process exits. */
export function tempDir(prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  madeFolders.push(dir);
  return dir;
}

/** Creates a project folder from a map of relative path → content. Returns its absolute path. */
export function makeProject(files: Record<string, string> = {}, options: { base?: string } = {}): string {
  const root = tempDir('dp-test-');
  if (options.base) fs.cpSync(options.base, root, { recursive: true, filter: (src) => !/\.duckdb(\.wal)?$|\.service-env$/.test(src) });
  const all: Record<string, string> = { ...(options.base ? {} : { 'project.yml': 'name: test\ndatabase:\n  path: test.duckdb\n' }), ...files };
  for (const [rel, content] of Object.entries(all)) {
    const file = path.join(root, rel);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, content);
  }
  return root;
}

/** A copy of examples/shop in a temp dir (so tests never touch the example's database). */
export function copyShop(extra: Record<string, string> = {}): string {
  return makeProject(extra, { base: SHOP_EXAMPLE });
}

/** `dp seed` then `dp transform` on the project, in this process; the App is closed after (a server may open the file next). */
export async function seedAndTransform(root: string): Promise<void> {
  const cli = cliInProcess(root);
  try {
    for (const command of [['seed'], ['transform']]) {
      const r = await cli.run(command);
      if (r.code !== 0) throw new Error(`dp ${command.join(' ')} failed: ${r.stderr || r.stdout}`);
    }
  } finally {
    await cli.close();
  }
}

/**
 * What a built copy of examples/shop depends on: the compiled code dp runs (dist/ but the tests,
 * benchmarks, scripts and UI bundle), the plugins' manifests and other non-code files, the
 * example itself, and the Node and DuckDB versions that wrote its database file.
 */
function shopBuildKey(): string {
  const hash = crypto.createHash('sha256');
  const duckdb = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'node_modules', '@duckdb', 'node-bindings', 'package.json'), 'utf8')) as { version: string };
  hash.update(`${process.version}\0${duckdb.version}\0`);
  // Its build times are the run's: a copy from an earlier run would make its models an hour old.
  hash.update(`${suiteRun()}\0`);
  hashTree(hash, path.join(REPO_ROOT, 'dist'), (rel) => !/^(test|bench|scripts|ui|examples)\//.test(rel) && !rel.endsWith('.map'));
  hashTree(hash, path.join(REPO_ROOT, 'plugins'), (rel) => !/\.(tsx?|css)$/.test(rel));
  hashTree(hash, SHOP_EXAMPLE, (rel) => !/\.duckdb(\.wal)?$|\.service-env$/.test(rel));
  return hash.digest('hex').slice(0, 20);
}

/** Built shops of other suite runs are removed after this long unused (a run takes far less). */
const SHOP_TEMPLATE_KEPT_MS = 3 * 3600 * 1000;

/** The seeded and transformed copy of examples/shop `builtShop` copies (sharedTemplate: built once per suite run). */
let builtShopTemplate: Promise<string> | null = null;

/**
 * A copy of examples/shop already seeded and transformed, as `copyShop` then `dp seed` and
 * `dp transform` would leave it. The build runs once per suite run (`suiteRun()`) and build of dp (a template
 * under the OS temp dir, test/support/templates.ts; made in this process, its App closed after);
 * each call copies the built folder, DuckDB file included, which costs a file copy instead of a
 * boot, a seed and a transform. `extra` files are written into the copy after.
 */
export async function builtShop(extra: Record<string, string> = {}): Promise<string> {
  builtShopTemplate ??= sharedTemplate('shop', shopBuildKey(), async (folder) => {
    fs.cpSync(SHOP_EXAMPLE, folder, { recursive: true, filter: (src) => !/\.duckdb(\.wal)?$|\.service-env$/.test(src) });
    await seedAndTransform(folder);
  }, SHOP_TEMPLATE_KEPT_MS);
  const template = await builtShopTemplate;
  const root = tempDir('dp-test-');
  fs.cpSync(template, root, { recursive: true });
  for (const [rel, content] of Object.entries(extra)) {
    const file = path.join(root, rel);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, content);
  }
  return root;
}

export interface TestServer {
  app: App;
  url: string;
  /** JSON request; returns status, parsed body (or text), and headers. */
  request(method: string, urlPath: string, body?: unknown, options?: { token?: string; headers?: Record<string, string> }): Promise<{
    status: number;
    body: any;
    text: string;
    headers: Headers;
  }>;
  close(): Promise<void>;
}

/**
 * Boots an App on the project and serves it on 127.0.0.1:<random port>, with the scheduler off
 * unless `scheduler: true` (a cron schedule must never fire because the test crossed a minute).
 * `builtInPluginsDir` replaces the repository's plugins/ folder (an empty folder: kernel only).
 */
export async function startServer(
  projectRoot: string,
  options: { auth?: boolean; env?: string | null; builtInPluginsDir?: string; server?: ServerOptions; scheduler?: boolean; clock?: Clock } = {},
): Promise<TestServer> {
  const app = await App.boot({ projectRoot, env: options.env ?? null, serving: true, auth: options.auth ?? false, builtInPluginsDir: options.builtInPluginsDir, scheduler: options.scheduler ?? false, clock: options.clock });
  await app.start();
  const server = await serveApp(app, options.server);
  const url = server.url;
  return {
    app,
    url,
    request: httpRequester(url),
    async close() {
      await server.close();
      await app.close();
    },
  };
}

/** Boots an App without HTTP (for services and hooks). Close it with app.close(). */
export async function bootApp(projectRoot: string, options: { env?: string | null; serving?: boolean } = {}): Promise<App> {
  const app = await App.boot({ projectRoot, env: options.env ?? null, serving: options.serving ?? false });
  await app.start();
  return app;
}

/** Runs the real `dp` binary; returns exit code and output. */
export function runCli(args: string[], options: { cwd?: string; input?: string; env?: Record<string, string> } = {}) {
  const r = spawnSync(process.execPath, [DP_BIN, ...args], {
    cwd: options.cwd ?? REPO_ROOT,
    input: options.input,
    encoding: 'utf8',
    env: { ...process.env, DP_LOG_SILENT: '1', ...(options.env ?? {}) },
    timeout: 120_000,
  });
  return { code: r.status ?? -1, stdout: r.stdout ?? '', stderr: r.stderr ?? '' };
}

/** One command line of `runCliBatch`: its arguments, stdin text, extra environment and working folder. */
export interface CliRun {
  args: string[];
  input?: string;
  env?: Record<string, string>;
  cwd?: string;
}

/**
 * `runCli` for a list of command lines, one after the other in one `dp` process
 * (test/support/cli-batch.ts: each through the binary's entry, kernel/cli.ts main, with its own
 * stdin, environment and folder): for a table of commands through a running server, where the
 * relay between two processes is the point but a process start per command is not. Resolves with
 * each run's `{ code, stdout, stderr }`, in order.
 */
export function runCliBatch(runs: CliRun[]): Promise<CommandResult[]> {
  const child = spawn(process.execPath, [path.join(REPO_ROOT, 'dist', 'test', 'support', 'cli-batch.js')], {
    cwd: REPO_ROOT,
    // As bin/dp.js: the size of the thread pool DuckDB's calls run on.
    env: { UV_THREADPOOL_SIZE: '16', ...process.env, DP_LOG_SILENT: '1' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const output = followOutput(child);
  child.stdin!.end(JSON.stringify(runs));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    // 'close', not 'exit': the results are read once its stdout has ended.
    child.once('close', (code, signal) => {
      if (code !== 0) return reject(new Error(`the dp batch process ended with ${code ?? signal}: ${output.text()}`));
      try {
        resolve(JSON.parse(output.stdout()) as CommandResult[]);
      } catch (e) {
        reject(new Error(`the dp batch process printed no results (${(e as Error).message}): ${output.text()}`));
      }
    });
  });
}

/** One `dp` process that runs command lines in turn, for a test file's many CLI runs (startDpRelay). */
export interface DpRelay {
  /** An executable that runs its command line in that process: give it to a script under test as its dp. */
  bin: string;
  /** `runCli` in that process: the binary's entry with this command line, stdin text, extra environment and folder. */
  run(args: string[], options?: { input?: string; env?: Record<string, string>; cwd?: string }): Promise<CommandResult>;
  /** `runCliBatch` in that process: each run in order. */
  batch(runs: CliRun[]): Promise<CommandResult[]>;
  /** Ends the process and removes the executable. */
  close(): Promise<void>;
}

/**
 * One `dp` process for a test file's command lines: each runs through the binary's entry
 * (kernel/cli.ts main, test/support/cli-batch.ts --socket) with its own stdin, environment and
 * folder, one after the other, as `runCli` and `runCliBatch` would, but the kernel boots once for
 * the file, not once per command or table. For the runs where a process of its own is the point
 * (the relay to a running server, what the binary prints): the runs and the server stay two
 * processes. `bin` is an executable running its command line there, for a script that runs dp
 * many times (the CI script of `dp ci generate`): a small process that hands over its command
 * line, folder and environment (not its stdin) and prints the result with its exit code.
 */
export async function startDpRelay(): Promise<DpRelay> {
  const folder = fs.mkdtempSync(path.join(os.tmpdir(), 'dp-relay-'));
  const socketPath = path.join(folder, 'dp.sock');
  const child = spawn(process.execPath, [path.join(REPO_ROOT, 'dist', 'test', 'support', 'cli-batch.js'), '--socket', socketPath], {
    cwd: REPO_ROOT,
    // As bin/dp.js: the size of the thread pool DuckDB's calls run on.
    env: { UV_THREADPOOL_SIZE: '16', ...process.env, DP_LOG_SILENT: '1' },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  await followOutput(child).waitFor(/^ready$/m);
  const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  const bin = path.join(folder, 'dp');
  fs.writeFileSync(bin, `#!/bin/sh\nDP_TEST_RELAY_SOCKET=${quote(socketPath)} exec ${quote(process.execPath)} ${quote(path.join(REPO_ROOT, 'dist', 'test', 'support', 'dp-relay.js'))} "$@"\n`, { mode: 0o755 });
  const run = (r: CliRun) => relayRun(socketPath, { ...r, input: r.input ?? '' });
  return {
    bin,
    run: (args, options = {}) => run({ args, ...options }),
    async batch(runs) {
      const results = [];
      for (const r of runs) results.push(await run(r));
      return results;
    },
    async close() {
      child.stdin!.end();
      await exited;
      fs.rmSync(folder, { recursive: true, force: true });
    },
  };
}

/**
 * The test file's `dp` process (startDpRelay), started on first use: `runCli` and `runCliBatch`
 * answers through the binary's entry, with one process start for the file instead of one per
 * call. Call it at the top level of a test file; the process ends with the file (its top-level
 * after() hook runs when the file's suite ends: scripts/test-worker.mjs).
 */
export function fileDpRelay(): Pick<DpRelay, 'run' | 'batch'> {
  let relay: Promise<DpRelay> | null = null;
  const dp = () => (relay ??= startDpRelay());
  after(async () => {
    if (relay) await (await relay).close();
  });
  return {
    run: async (args, options) => (await dp()).run(args, options),
    batch: async (runs) => (await dp()).batch(runs),
  };
}

export interface InProcessCli {
  /** `dp <args>` on the project, in this process: the same parsing, handler, stdout, stderr and exit code as the binary. */
  run(args: string[], options?: { stdin?: string }): Promise<CommandResult>;
  /** The App the commands run in (booted on first use). */
  app(): Promise<App>;
  /** Closes the App (a later `run` boots a new one: use it after project.yml changed). */
  close(): Promise<void>;
}

/**
 * The CLI in this process for one project (sdk/testing runCommand on one App, booted on first
 * use and reused): what `runCli([...args, '--project', root])` checks, without booting the
 * kernel in a new process per command. Keep `runCli` where the process is the point: the exit
 * code of the real binary, stdio, signals, the relay to a running server, packaging.
 */
export function cliInProcess(projectRoot: string, options: { env?: string | null } = {}): InProcessCli {
  let booted: Promise<App> | null = null;
  const app = () => (booted ??= bootApp(projectRoot, { env: options.env ?? null }));
  return {
    app,
    async run(args, runOptions = {}) {
      return runCommand(await app(), args, runOptions);
    },
    async close() {
      const closing = booted;
      booted = null;
      if (closing) await (await closing).close();
    },
  };
}

/** One in-process CLI per project and environment, for `runInProcess`. */
const inProcessClis = new Map<string, InProcessCli>();

/**
 * `runCli` in this process: the same argument list (`--project` and `--env` pick the project and
 * environment, else `cwd`), the same `{ code, stdout, stderr }`, on an App booted once per
 * project and environment and reused. Close them in the file's `after(closeInProcessClis)`.
 * Boot a new App after changing project.yml (`closeInProcessClis()` first), as a new process would.
 */
export function runInProcess(args: string[], options: { cwd?: string; stdin?: string } = {}): Promise<CommandResult> {
  const flag = (name: string) => {
    const i = args.findIndex((a) => a === `--${name}` || a.startsWith(`--${name}=`));
    if (i < 0) return undefined;
    return args[i].includes('=') ? args[i].slice(name.length + 3) : args[i + 1];
  };
  const root = path.resolve(options.cwd ?? REPO_ROOT, flag('project') ?? '.');
  const env = flag('env') ?? null;
  const key = `${root}\0${env ?? ''}`;
  let cli = inProcessClis.get(key);
  if (!cli) inProcessClis.set(key, (cli = cliInProcess(root, { env })));
  return cli.run(args, { stdin: options.stdin });
}

/** Closes the Apps `runInProcess` booted. */
export async function closeInProcessClis(): Promise<void> {
  const clis = [...inProcessClis.values()];
  inProcessClis.clear();
  for (const cli of clis) await cli.close();
}

/** What a child process printed so far (stdout and stderr together), and a wait for a pattern in it. */
export interface ChildOutput {
  text(): string;
  stdout(): string;
  stderr(): string;
  /** Resolves when the output matches `re` (at once if it already does); rejects on exit or after `ms`, with the output so far. */
  waitFor(re: RegExp, ms?: number): Promise<RegExpExecArray>;
}

/** Follows a child's stdout and stderr: a test waits for the line it needs on the stream's own events, never polling. */
export function followOutput(child: ChildProcess): ChildOutput {
  let out = '';
  const streams = { stdout: '', stderr: '' };
  const waiters = new Set<() => void>();
  const onData = (stream: 'stdout' | 'stderr') => (d: Buffer | string) => {
    out += d;
    streams[stream] += d;
    for (const w of [...waiters]) w();
  };
  child.stdout?.on('data', onData('stdout'));
  child.stderr?.on('data', onData('stderr'));
  child.once('exit', () => {
    for (const w of [...waiters]) w();
  });
  return {
    text: () => out,
    stdout: () => streams.stdout,
    stderr: () => streams.stderr,
    waitFor(re, ms = 60_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const m = re.exec(out);
          if (m) return finish(() => resolve(m));
          if (child.exitCode !== null || child.signalCode !== null) finish(() => reject(new Error(`the process exited (${child.exitCode ?? child.signalCode}) before printing ${re}; output:\n${out}`)));
        };
        const timer = setTimeout(() => finish(() => reject(new Error(`timed out waiting for ${re}; output so far:\n${out}`))), ms);
        const finish = (settle: () => void) => {
          clearTimeout(timer);
          waiters.delete(check);
          settle();
        };
        waiters.add(check);
        check();
      });
    },
  };
}

export interface ServeProcess {
  child: ChildProcess;
  /** http://127.0.0.1:<port>, from its "dp listening on" line. */
  url: string;
  /** Everything it printed (stdout and stderr), and waits for a line. */
  output: ChildOutput;
  /** Settles when the process exits. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Sends `signal` (SIGTERM) unless it already exited, SIGKILL after `killAfterMs` (15 s); resolves with how it exited. */
  stop(signal?: NodeJS.Signals, killAfterMs?: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/**
 * The real `dp serve` as its own process (the supervisor and its engine) on 127.0.0.1 and a free
 * port; resolves once it prints "dp listening on". The scheduler is off unless `scheduler: true`
 * (a cron schedule must never fire because the test crossed a minute). `args` are added to the
 * command line (`--auth`, `--shutdown-grace 5`, ...), `env` to the environment.
 */
export async function spawnServe(
  root: string,
  options: { args?: string[]; env?: Record<string, string>; scheduler?: boolean; auth?: boolean; cwd?: string; startMs?: number } = {},
): Promise<ServeProcess> {
  const args = [DP_BIN, 'serve', '--project', root, '--port', '0', ...(options.scheduler ? [] : ['--no-scheduler']), ...(options.auth ? ['--auth'] : []), ...(options.args ?? [])];
  const child = spawn(process.execPath, args, { cwd: options.cwd ?? REPO_ROOT, env: { ...process.env, DP_LOG_SILENT: '1', ...(options.env ?? {}) }, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const output = followOutput(child);
  const listening = await output.waitFor(/dp listening on (http:\/\/\S+)/, options.startMs ?? 120_000).catch((e) => {
    child.kill('SIGKILL');
    throw e;
  });
  return {
    child,
    url: listening[1].replace('0.0.0.0', '127.0.0.1'),
    output,
    exited,
    async stop(signal = 'SIGTERM', killAfterMs = 15_000) {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill(signal);
        const timer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
        await exited;
        clearTimeout(timer);
      }
      return exited;
    },
  };
}

/**
 * Polls until `condition` holds: for a state the code reaches but announces nowhere a test can
 * listen. The deadline is generous (a loaded CI machine is slow); only a failing test waits it out.
 */
export async function waitUntil(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 30_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
