/**
 * Test harness for a plugin, built-in or third-party: starts the kernel with only the plugins
 * under test (plus the built-ins they name) on a temporary project with a real DuckDB file, and
 * serves it on 127.0.0.1 (random port). Import it from tests only (`sdk/testing.js`): unlike the
 * rest of the sdk it loads the kernel.
 *
 *   const s = await startTestServer({ plugins: [myPluginDir], builtIn: ['masking', 'query'], auth: true });
 *   const viewer = await s.caller('viewer');
 *   const r = await viewer.request('GET', '/api/my-plugin/things');
 *   await s.close();
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { App } from '../kernel/app.js';
import type { ServerOptions } from '../kernel/http.js';
import { BUILTIN_PLUGINS_DIR } from '../kernel/plugins.js';
import { LOCAL_ADMIN, type Caller, type Role } from './auth.js';
import { errorMessage } from './errors.js';
import type { DatabasePort } from './db.js';
import type { Clock } from './scheduler.js';

// Tests are quiet unless the developer asks for the log.
process.env.DP_LOG_SILENT ??= '1';

export interface TestServerOptions {
  /** Folders of the plugins under test, each holding a plugin.json (or a folder of such folders). */
  plugins: string[];
  /** Built-in plugins to keep, by name (the ones yours requires or talks to); every other built-in is disabled. */
  builtIn?: string[];
  /** Project files besides project.yml, as relative path → content. */
  files?: Record<string, string>;
  /** YAML appended to the generated project.yml (your plugin's settings). */
  projectYml?: string;
  /** Serve with authentication (then use `caller(role)` for tokens). Default false: every request is an admin. */
  auth?: boolean;
  /** Run cron schedules on the wall clock (default false: a test about time asks for it, or better moves a clock it owns). */
  scheduler?: boolean;
  /** The clock plugins read (ctx.clock), the scheduler runs on and query deadlines count on: a test about time passes one it moves. */
  clock?: Clock;
  /** SSE heartbeat interval in ms (default 15 s). */
  sseHeartbeatMs?: number;
}

export interface TestResponse {
  status: number;
  /** The parsed JSON body, or the text when it is not JSON. */
  body: any;
  text: string;
  headers: Headers;
}

export type TestRequest = (method: string, urlPath: string, body?: unknown, options?: { token?: string; headers?: Record<string, string> }) => Promise<TestResponse>;

export interface TestCaller {
  username: string;
  role: Role;
  /** A bearer token for this user (empty when the server runs without auth). */
  token: string;
  /** `request` with this caller's token. */
  request: TestRequest;
}

export interface PluginTestServer {
  url: string;
  /** The temporary project folder. */
  projectRoot: string;
  /** The database port, for arranging data (`s.db.run('CREATE TABLE ...')`). */
  db: DatabasePort;
  /** The booted kernel (for assertions on its state; plugins themselves never see it). */
  app: App;
  request: TestRequest;
  /** A user with this role (created on first use per role; the first is set up as admin) and its token. */
  caller(role: Role): Promise<TestCaller>;
  /** Stops the server, closes the database and removes the project folder. */
  close(): Promise<void>;
}

/** A JSON-over-HTTP client for one server: bearer token, JSON bodies, the body parsed when it is JSON. */
export function httpRequester(url: string): TestRequest {
  return async (method, urlPath, body, opts = {}) => {
    const headers: Record<string, string> = { ...(opts.headers ?? {}) };
    if (body !== undefined) headers['content-type'] ??= 'application/json';
    if (opts.token) headers.authorization = `Bearer ${opts.token}`;
    const res = await fetch(url + urlPath, { method, headers, body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body) });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      /* not JSON */
    }
    return { status: res.status, body: parsed, text, headers: res.headers };
  };
}

/**
 * Serves a booted App with dp's HTTP server (the one `dp serve` runs) on 127.0.0.1 and a free
 * port. `close()` stops the server only; the App stays open.
 */
export async function serveApp(app: App, options?: ServerOptions): Promise<{ url: string; close(): Promise<void> }> {
  // Imported here, not at the top: the HTTP server's modules (Fastify and its plugins) cost a
  // test that only runs commands (runCommand) a third of a second of CPU.
  const { createServer } = await import('../kernel/http.js');
  const server = await createServer(app, options);
  await server.listen({ port: 0, host: '127.0.0.1' });
  const address = server.server.address();
  return { url: `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`, close: () => server.close() };
}

export async function startTestServer(options: TestServerOptions): Promise<PluginTestServer> {
  const projectRoot = fs.mkdtempSync(path.join(os.tmpdir(), 'dp-plugin-test-'));
  const keep = new Set(options.builtIn ?? []);
  const builtIns = fs.readdirSync(BUILTIN_PLUGINS_DIR).filter((d) => fs.existsSync(path.join(BUILTIN_PLUGINS_DIR, d, 'plugin.json')));
  for (const name of keep) if (!builtIns.includes(name)) throw new Error(`startTestServer: '${name}' is not a built-in plugin (${builtIns.join(', ')})`);
  const disable = builtIns.filter((d) => !keep.has(d));
  const yml = [
    'name: plugin-test',
    'database:',
    '  path: test.duckdb',
    'plugins:',
    `  paths: ${JSON.stringify(options.plugins.map((p) => path.resolve(p)))}`,
    `  disable: ${JSON.stringify(disable)}`,
    options.projectYml ?? '',
  ].join('\n');
  for (const [rel, content] of Object.entries({ ...(options.files ?? {}), 'project.yml': yml })) {
    const file = path.join(projectRoot, rel);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, content);
  }

  const app = await App.boot({ projectRoot, serving: true, auth: options.auth ?? false, scheduler: options.scheduler ?? false, clock: options.clock });
  await app.start();
  const server = await serveApp(app, { sseHeartbeatMs: options.sseHeartbeatMs });
  const url = server.url;

  const request = httpRequester(url);

  const callers = new Map<Role, TestCaller>();
  const asCaller = (username: string, role: Role, token: string): TestCaller => ({
    username,
    role,
    token,
    request: (method, urlPath, body, opts = {}) => request(method, urlPath, body, { ...opts, token: opts.token ?? (token || undefined) }),
  });
  const expectOk = (r: TestResponse, what: string) => {
    if (r.status >= 300) throw new Error(`startTestServer: ${what} answered ${r.status}: ${r.text}`);
    return r;
  };
  const caller = async (role: Role): Promise<TestCaller> => {
    const known = callers.get(role);
    if (known) return known;
    if (!app.authEnabled) {
      const open = asCaller('test-admin', role, '');
      callers.set(role, open);
      return open;
    }
    let admin = callers.get('admin');
    if (!admin) {
      const setup = expectOk(await request('POST', '/api/auth/setup', { username: 'test-admin', password: 'test-password' }), 'setup');
      admin = asCaller('test-admin', 'admin', setup.body.token);
      callers.set('admin', admin);
      if (role === 'admin') return admin;
    }
    const username = `test-${role}`;
    expectOk(await admin.request('POST', '/api/users', { username, password: 'test-password', role }), `creating ${username}`);
    const login = expectOk(await request('POST', '/api/auth/login', { username, password: 'test-password' }), `login of ${username}`);
    const created = asCaller(username, role, login.body.token);
    callers.set(role, created);
    return created;
  };

  return {
    url,
    projectRoot,
    db: app.db,
    app,
    request,
    caller,
    async close() {
      await server.close();
      await app.close();
      fs.rmSync(projectRoot, { recursive: true, force: true });
    },
  };
}

export interface CommandResult {
  /** The exit code the CLI would give: the handler's number, 0, or 1 when it threw or the arguments were refused. */
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs a plugin's CLI command in this process, on a booted app (`startTestServer(...).app`, or
 * test/helpers bootApp): the arguments parse as `dp` parses them (the manifests' options,
 * defaults and checks), the handler runs with the given caller (LOCAL_ADMIN as at the CLI), and
 * everything it prints is returned. Spawn the real `dp` only when the process is the point: exit
 * codes of the binary, stdio, signals, the relay to a running server.
 *
 *   const r = await runCommand(app, ['tables', '--json']);
 *   assert.equal(r.code, 0);
 */
export async function runCommand(app: App, argv: string[], options: { stdin?: string; caller?: Caller } = {}): Promise<CommandResult> {
  const { loadYargs, missingHandler, withManifestCommands } = await import('../kernel/cli.js');
  const { runWithSink } = await import('../kernel/remote-server.js');
  const { yargs } = await loadYargs();
  let stdout = '';
  let stderr = '';
  let code = 0;
  const sink = {
    cwd: app.project.root,
    write: (kind: 'stdout' | 'stderr' | 'progress', text: string) => {
      if (kind === 'stdout') stdout += text;
      else stderr += kind === 'progress' ? `${text}\n` : text;
    },
  };
  const parser = withManifestCommands(
    yargs(argv).exitProcess(false).wrap(null).fail((message, error) => {
      // As the binary: a refused argument line also points at --help (kernel/cli.ts main).
      throw error ?? new Error(`${message}\nRun 'dp --help' for usage.`);
    }),
    app.plugins.map((p) => p.manifest),
    async (args, command) => {
      const entry = app.commands.get(command.key);
      if (!entry) throw missingHandler(command);
      const inProject = { ...args, project: app.project.root };
      const run = () => runWithSink(sink, Boolean(args.json), options.caller ?? LOCAL_ADMIN, async (io) => entry.handler(inProject, io));
      const result = options.stdin === undefined ? await run() : await withStdinText(options.stdin, run);
      code = typeof result === 'number' ? result : 0;
    },
  );
  try {
    await parser.parseAsync();
  } catch (e) {
    stderr += `error: ${errorMessage(e)}\n`;
    code = 1;
  }
  return { code, stdout, stderr };
}

/** Runs `fn` while process.stdin reads `text` (commands that read their input from stdin). */
async function withStdinText<T>(text: string, fn: () => Promise<T>): Promise<T> {
  const { Readable } = await import('node:stream');
  const descriptor = Object.getOwnPropertyDescriptor(process, 'stdin')!;
  Object.defineProperty(process, 'stdin', { configurable: true, enumerable: descriptor.enumerable, value: Readable.from([Buffer.from(text)]) });
  try {
    return await fn();
  } finally {
    Object.defineProperty(process, 'stdin', descriptor);
  }
}
