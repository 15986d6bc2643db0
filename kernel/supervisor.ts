/**
 * The supervisor of `dp serve` (docs/security.md, "What the engine is trusted with"). DuckDB is
 * native code in the server's process: an input nobody foresaw that crashes it (a stack overflow
 * on a deeply nested value, SIGSEGV) would end the HTTP server, every session and every other
 * user with it. So the process the operator starts does not open the database: it holds the
 * listening socket and `.dp/server.json`, and runs the app (engine, HTTP server, plugins) in one
 * child process. Each accepted connection is handed to that child whole (its file descriptor
 * over the IPC channel, before a byte is read), so requests never pass through the supervisor:
 * the cost is one message per connection, none per request on a kept-alive connection.
 *
 * When the child dies without being told to stop, the supervisor starts another on the same
 * database file (DuckDB replays its write-ahead log: what was committed stays, what was running
 * is lost) and, until it is up, answers every connection itself with `503 engine_restarting`.
 * Signals keep their meaning: SIGTERM/SIGINT stop the child gracefully (a second one at once) and
 * the supervisor exits with the child's code.
 */
import { type ChildProcess, fork } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { DpError } from '../sdk/errors.js';
import { createLogSink } from './log.js';
import { removeServerFile, writeServerFile } from './server-file.js';

/** `dp serve`'s options (kernel/serve.ts), which the supervisor passes on to the engine process. */
export interface ServeOptions {
  projectRoot: string;
  env: string | null;
  port: number;
  host: string;
  auth: boolean;
  /** Seconds in-flight requests get to finish on SIGTERM/SIGINT before they are cut (default 10). */
  shutdownGraceSeconds?: number;
  /** Run cron schedules and other wall-clock work (default true; `dp serve --no-scheduler` turns it off). */
  scheduler?: boolean;
}

/** Beyond the grace, what the plugins' stop phases may take before the process exits regardless. */
export const STOP_BUDGET_MS = 15_000;

/** Set in the environment of the child process that runs the app. */
export const ENGINE_PROCESS_ENV = 'DP_SERVE_ENGINE_PROCESS';

/** From the engine process: booted, the database open, ready for connections. */
export type EngineMessage = { dp: 'booted' };

/** To the engine process: a connection (the socket rides along), where it serves, stop. */
export type SupervisorMessage = { dp: 'connection' } | { dp: 'serve'; port: number; token: string; restarts: number } | { dp: 'stop'; signal: string };

/** The dp entry point the engine process runs (dist/kernel/supervisor.js → bin/dp.js). */
const DP_BIN = fileURLToPath(new URL('../../bin/dp.js', import.meta.url));
/** Crashes within this window count towards the restart backoff. */
const CRASH_WINDOW_MS = 60_000;
/** Longest wait before a restart, reached when the engine keeps crashing. */
const MAX_RESTART_DELAY_MS = 10_000;
/** Beyond the child's own deadlines, what the supervisor waits before it kills the child. */
const KILL_MARGIN_MS = 5_000;

interface Engine {
  child: ChildProcess;
  ready: boolean;
}

function engineArgs(options: ServeOptions, port: number): string[] {
  return [
    'serve',
    '--project',
    options.projectRoot,
    '--port',
    String(port),
    '--host',
    options.host,
    '--shutdown-grace',
    String(options.shutdownGraceSeconds ?? 10),
    options.auth ? '--auth' : '--no-auth',
    options.scheduler === false ? '--no-scheduler' : '--scheduler',
    ...(options.env ? ['--env', options.env] : []),
  ];
}

export async function superviseEngine(options: ServeOptions): Promise<void> {
  const log = createLogSink(() => []).child({ scope: 'supervisor' });
  const graceMs = Math.max(0, (options.shutdownGraceSeconds ?? 10) * 1000);
  let engine: Engine | null = null;
  let stopping = false;
  let restarts = 0;
  let lastCrash = '';
  const crashes: number[] = [];
  let serving: { port: number; token: string } | null = null;

  /** Answers a connection the engine cannot take (restarting, or stopping after it exited). */
  const fallback = http.createServer({ keepAlive: false }, (_req, res) => {
    const error = stopping
      ? new DpError(503, 'shutting_down', 'The server is shutting down', {})
      : new DpError(503, 'engine_restarting', `The engine stopped unexpectedly (${lastCrash}) and is restarting on the same database; retry in a moment`, { restarts }, { 'Retry-After': '1' });
    res.writeHead(error.status, { 'content-type': 'application/json; charset=utf-8', connection: 'close', ...error.headers });
    res.end(JSON.stringify(error.toBody()));
  });
  const refuse = (socket: net.Socket) => {
    if (socket.destroyed) return;
    fallback.emit('connection', socket);
    socket.resume();
  };
  const listener = net.createServer({ pauseOnConnect: true }, (socket) => {
    const current = engine;
    if (!current?.ready || !current.child.connected) return refuse(socket);
    current.child.send({ dp: 'connection' } satisfies SupervisorMessage, socket, (err) => {
      if (err) refuse(socket);
    });
  });

  let exitWith: ((code: number) => void) | null = null;
  const finished = new Promise<number>((resolve) => (exitWith = resolve));

  /** Starts an engine process; resolves once it booted, rejects with its exit code if it died first. */
  const start = (port: number) =>
    new Promise<Engine>((resolve, reject) => {
      const child = fork(DP_BIN, engineArgs(options, port), {
        env: { ...process.env, [ENGINE_PROCESS_ENV]: '1' },
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      });
      const current: Engine = { child, ready: false };
      engine = current;
      child.on('error', (e) => log.error({ error: e.message }, 'engine process error'));
      child.on('message', (m: EngineMessage) => {
        if (m?.dp !== 'booted') return;
        current.ready = true;
        resolve(current);
      });
      child.once('exit', (code, signal) => {
        const booted = current.ready;
        current.ready = false;
        if (engine === current) engine = null;
        if (!booted) return reject(Object.assign(new Error(`engine exited before it was ready (${signal ?? `code ${code}`})`), { exitCode: code ?? 1 }));
        if (stopping) return exitWith?.(code ?? 1);
        void crashed(signal ?? `exit code ${code}`);
      });
    });

  const tellServe = (e: Engine) => {
    if (serving) e.child.send({ dp: 'serve', ...serving, restarts } satisfies SupervisorMessage, () => {});
  };

  const crashed = async (cause: string) => {
    restarts++;
    lastCrash = cause;
    const now = Date.now();
    crashes.push(now);
    while (crashes.length && crashes[0]! < now - CRASH_WINDOW_MS) crashes.shift();
    const delay = crashes.length <= 1 ? 0 : Math.min(MAX_RESTART_DELAY_MS, 100 * 2 ** crashes.length);
    log.error({ cause, restarts, restart_in_ms: delay }, 'the engine process stopped unexpectedly; restarting it on the same database');
    if (delay) await new Promise((r) => setTimeout(r, delay));
    if (stopping) return exitWith?.(1);
    try {
      const e = await start(serving!.port);
      if (stopping) return e.child.send({ dp: 'stop', signal: 'SIGTERM' } satisfies SupervisorMessage, () => {});
      tellServe(e);
      log.info({ restarts }, 'engine process restarted');
    } catch (err) {
      // The engine does not come back (the database no longer opens, or it crashes while
      // opening): nothing left to serve.
      if (stopping) return exitWith?.(0);
      log.error({ error: (err as Error).message }, 'the engine process could not be restarted; dp serve stops');
      stopping = true;
      exitWith?.(1);
    }
  };

  let first: Engine;
  try {
    first = await start(options.port);
  } catch (e) {
    // The engine said why on stderr (database_locked, a bad project.yml…): same exit code as before.
    process.exit((e as { exitCode?: number }).exitCode ?? 1);
  }
  try {
    await new Promise<void>((resolve, reject) => {
      listener.once('error', reject);
      listener.listen({ port: options.port, host: options.host }, () => {
        listener.off('error', reject);
        resolve();
      });
    });
  } catch (e) {
    stopping = true;
    first.child.send({ dp: 'stop', signal: 'listen failed' } satisfies SupervisorMessage, () => {});
    await finished;
    throw e;
  }
  // An accept that fails (out of file descriptors) must not end the supervisor: log it, keep listening.
  listener.on('error', (e) => log.error({ error: e.message }, 'accepting a connection failed'));
  const address = listener.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  // The CLI of this project finds the server here and sends its commands to it (docs/cli.md).
  const urlHost = options.host === '0.0.0.0' ? '127.0.0.1' : options.host === '::' ? '::1' : options.host;
  const written = writeServerFile(options.projectRoot, { url: `http://${urlHost.includes(':') ? `[${urlHost}]` : urlHost}:${port}`, host: options.host, port, auth: options.auth });
  serving = { port, token: written.token };
  const forgetServerFile = () => removeServerFile(options.projectRoot, written.token);
  process.on('exit', forgetServerFile);
  tellServe(first);
  // A line tests and scripts can wait for.
  process.stdout.write(`dp listening on http://${options.host}:${port}\n`);

  const shutdown = (signal: string) => {
    const current = engine;
    if (stopping) {
      // A second signal: the engine exits at once (exit code 1), and so does this process.
      current?.child.send({ dp: 'stop', signal } satisfies SupervisorMessage, () => {});
      if (!current) process.exit(1);
      return;
    }
    stopping = true;
    // From now on the CLI opens the file itself (after the server let go of it) rather than calling in.
    forgetServerFile();
    log.info({ signal }, 'stopping the engine process');
    // Whatever the engine does, this process exits, and the engine with it.
    setTimeout(() => {
      engine?.child.kill('SIGKILL');
      process.exit(1);
    }, graceMs + STOP_BUDGET_MS + KILL_MARGIN_MS).unref();
    if (!current) return exitWith?.(0);
    if (current.ready) current.child.send({ dp: 'stop', signal } satisfies SupervisorMessage, () => {});
    // Still booting after a restart: nothing in flight yet.
    else current.child.kill('SIGTERM');
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));

  const code = await finished;
  listener.close();
  process.exit(code);
}
