import type { Server as HttpServer } from 'node:http';
import type { Socket } from 'node:net';
import { ENGINE_PROCESS_ENV, STOP_BUDGET_MS, superviseEngine, type EngineMessage, type ServeOptions, type SupervisorMessage } from './supervisor.js';

/**
 * `dp serve`: the process the operator starts is a small supervisor (kernel/supervisor.ts) that
 * holds the port and `.dp/server.json`; the app, its DuckDB engine and the HTTP server run in one
 * child process it restarts if the engine crashes on an input nobody foresaw.
 */
export async function serve(options: ServeOptions): Promise<void> {
  if (process.env[ENGINE_PROCESS_ENV] === '1' && process.send) {
    // Not inherited by what the engine process may start itself (scripts, connectors).
    delete process.env[ENGINE_PROCESS_ENV];
    return serveEngine(options);
  }
  return superviseEngine(options);
}

/**
 * The engine process: boots the app, opens the database, then serves the connections the
 * supervisor accepted and handed over (the requests never pass through the supervisor), and
 * shuts down cleanly when the supervisor tells it to (SIGTERM/SIGINT there) or goes away.
 */
async function serveEngine(options: ServeOptions): Promise<void> {
  const send = (m: EngineMessage) => process.send?.(m);
  // Imported here, not at the top: the supervisor runs this module too and boots no app, so it
  // loads neither the kernel, Fastify nor DuckDB's binding (about 0.5 s of CPU at every start).
  const [{ App }, { closeGracefully, createServer }, { setServerPid }] = await Promise.all([import('./app.js'), import('./http.js'), import('./remote-server.js')]);
  // The CLI checks that the server it reaches is the process .dp/server.json names.
  setServerPid(process.ppid);
  const app = await App.boot({ projectRoot: options.projectRoot, env: options.env, serving: true, auth: options.auth, scheduler: options.scheduler ?? true });
  await app.start();
  let localToken: string | null = null;
  const server = await createServer(app, { forceCloseConnections: 'idle', cliLocalToken: () => localToken });
  await server.ready();
  const http: HttpServer = server.server;

  const graceMs = Math.max(0, (options.shutdownGraceSeconds ?? 10) * 1000);
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) {
      // A second signal: the operator does not want to wait.
      process.exit(1);
    }
    stopping = true;
    app.log.info(`${signal}: shutting down (in-flight requests get ${graceMs / 1000} s)`);
    // The process always exits, even when a plugin's stop hangs past its own deadline.
    setTimeout(() => process.exit(1), graceMs + STOP_BUDGET_MS).unref();
    // At the deadline, requests still running are cut (their queries were interrupted by the drain).
    const cut = setTimeout(() => http.closeAllConnections(), graceMs);
    cut.unref();
    try {
      await app.close({ drainMs: graceMs, alsoWait: closeGracefully(server, graceMs) });
      clearTimeout(cut);
      process.exit(0);
    } catch (e) {
      app.log.error('shutdown failed', { error: (e as Error).message });
      process.exit(1);
    }
  };

  process.on('message', (m: SupervisorMessage, socket?: Socket) => {
    if (m?.dp === 'connection' && socket) {
      http.emit('connection', socket);
    } else if (m?.dp === 'serve') {
      localToken = m.token;
      app.log.info(`dp serving '${app.project.config.name}' on http://${options.host}:${m.port}`, {
        environment: app.project.env,
        database: app.db.path,
        auth: options.auth,
        plugins: app.plugins.map((p) => p.manifest.name),
        ...(m.restarts ? { engine_restarts: m.restarts } : {}),
      });
    } else if (m?.dp === 'stop') {
      void shutdown(m.signal);
    }
  });
  // The supervisor forwards the operator's signals; one sent to the whole process group (Ctrl-C)
  // reaches this process too and must not count as a second one.
  process.on('SIGINT', () => {});
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  // The supervisor is gone (killed): nobody hands connections over any more.
  process.on('disconnect', () => void shutdown('supervisor gone'));
  send({ dp: 'booted' });
}
