import { App } from './app.js';
import { createServer } from './http.js';

export interface ServeOptions {
  projectRoot: string;
  env: string | null;
  port: number;
  host: string;
  auth: boolean;
}

/** `dp serve`: boots the app, opens the database, listens, and shuts down cleanly on SIGINT/SIGTERM. */
export async function serve(options: ServeOptions): Promise<void> {
  const app = await App.boot({ projectRoot: options.projectRoot, env: options.env, serving: true, auth: options.auth });
  await app.start();
  const server = await createServer(app);
  await server.listen({ port: options.port, host: options.host });
  const address = server.server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  app.log.info(`dp serving '${app.project.config.name}' on http://${options.host}:${port}`, {
    environment: app.project.env,
    database: app.db.path,
    auth: options.auth,
    plugins: app.plugins.map((p) => p.manifest.name),
  });
  // A line tests and scripts can wait for.
  process.stdout.write(`dp listening on http://${options.host}:${port}\n`);
  let stopping = false;
  const shutdown = async () => {
    if (stopping) return;
    stopping = true;
    await server.close();
    await app.close();
    process.exit(0);
  };
  process.on('SIGINT', shutdown);
  process.on('SIGTERM', shutdown);
}
