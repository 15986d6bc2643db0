import { App } from './app.js';
import { closeGracefully, createServer } from './http.js';
import { removeServerFile, writeServerFile } from './remote-server.js';

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
const STOP_BUDGET_MS = 15_000;

/** `dp serve`: boots the app, opens the database, listens, and shuts down cleanly on SIGINT/SIGTERM. */
export async function serve(options: ServeOptions): Promise<void> {
  const app = await App.boot({ projectRoot: options.projectRoot, env: options.env, serving: true, auth: options.auth, scheduler: options.scheduler ?? true });
  await app.start();
  let localToken: string | null = null;
  const server = await createServer(app, { forceCloseConnections: 'idle', cliLocalToken: () => localToken });
  await server.listen({ port: options.port, host: options.host });
  const address = server.server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  // The CLI of this project finds the server here and sends its commands to it (docs/cli.md).
  const urlHost = options.host === '0.0.0.0' ? '127.0.0.1' : options.host === '::' ? '::1' : options.host;
  const written = writeServerFile(app.project.root, { url: `http://${urlHost.includes(':') ? `[${urlHost}]` : urlHost}:${port}`, host: options.host, port, auth: options.auth });
  localToken = written.token;
  const forgetServerFile = () => removeServerFile(app.project.root, written.token);
  process.on('exit', forgetServerFile);
  app.log.info(`dp serving '${app.project.config.name}' on http://${options.host}:${port}`, {
    environment: app.project.env,
    database: app.db.path,
    auth: options.auth,
    plugins: app.plugins.map((p) => p.manifest.name),
  });
  // A line tests and scripts can wait for.
  process.stdout.write(`dp listening on http://${options.host}:${port}\n`);
  const graceMs = Math.max(0, (options.shutdownGraceSeconds ?? 10) * 1000);
  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) {
      // A second signal: the operator does not want to wait.
      process.exit(1);
    }
    stopping = true;
    // From now on the CLI opens the file itself (after the server let go of it) rather than calling in.
    forgetServerFile();
    app.log.info(`${signal}: shutting down (in-flight requests get ${graceMs / 1000} s)`);
    // The process always exits, even when a plugin's stop hangs past its own deadline.
    setTimeout(() => process.exit(1), graceMs + STOP_BUDGET_MS).unref();
    // At the deadline, requests still running are cut (their queries were interrupted by the drain).
    const cut = setTimeout(() => server.server.closeAllConnections(), graceMs);
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
  process.on('SIGINT', () => void shutdown('SIGINT'));
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
}
