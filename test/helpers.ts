/**
 * Test harness: real project folders in a temp dir, a real App with a real DuckDB file,
 * and a real HTTP server on 127.0.0.1 (random port). No mocks.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { App } from '../kernel/app.js';
import { createServer, type ServerOptions } from '../kernel/http.js';
import { REPO_ROOT } from '../kernel/plugins.js';
import { httpRequester } from '../sdk/testing.js';

process.env.DP_LOG_SILENT ??= '1';

export { REPO_ROOT };
export const DP_BIN = path.join(REPO_ROOT, 'bin', 'dp.js');
export const SHOP_EXAMPLE = path.join(REPO_ROOT, 'examples', 'shop');
/** Test-only plugins (load one with `plugins: {paths: [...]}`); never shipped. */
export const FIXTURE_PLUGINS = path.join(REPO_ROOT, 'test', 'fixtures', 'plugins');

/** Project folders this test file made; removed when its process exits (each holds a DuckDB file). */
const madeProjects: string[] = [];
process.on('exit', () => {
  for (const root of madeProjects) fs.rmSync(root, { recursive: true, force: true });
});

/** Creates a project folder from a map of relative path → content. Returns its absolute path. */
export function makeProject(files: Record<string, string> = {}, options: { base?: string } = {}): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'dp-test-'));
  madeProjects.push(root);
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
  options: { auth?: boolean; env?: string | null; builtInPluginsDir?: string; server?: ServerOptions; scheduler?: boolean } = {},
): Promise<TestServer> {
  const app = await App.boot({ projectRoot, env: options.env ?? null, serving: true, auth: options.auth ?? false, builtInPluginsDir: options.builtInPluginsDir, scheduler: options.scheduler ?? false });
  await app.start();
  const server = await createServer(app, options.server);
  await server.listen({ port: 0, host: '127.0.0.1' });
  const addr = server.server.address();
  const url = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
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
