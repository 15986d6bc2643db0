/**
 * The server side of "the CLI beside a running server" (docs/cli.md): `dp serve` writes
 * `.dp/server.json` (its address, pid and a random local token, mode 0600) and answers
 * `POST /api/cli/run`, which runs one CLI command inside the server process and streams back
 * what the command prints, so the CLI's output, exit code and --json are the same as when it
 * opens the database itself.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { hasPermission, LOCAL_ADMIN, minimumRole, ROLES, type Caller, type Permission } from '../sdk/auth.js';
import { DpError, errorMessage, forbidden, isDpError, notFound } from '../sdk/errors.js';
import type { CliIO, ManifestCommand, RouteDefinition } from '../sdk/plugin.js';
import type { App } from './app.js';
import { commandKey } from './app.js';
import { renderTable } from './cli-io.js';
import { withoutAbsolutePaths } from './http-errors.js';
import { databaseFile, loadProject } from './config.js';
import { LOCAL_TOKEN_HEADER, SERVER_FILE, type ServerFile } from './server-file.js';
import { ownWorkingFolder } from './process-cwd.js';

export { LOCAL_TOKEN_HEADER, SERVER_FILE, type ServerFile };

/** Permission of a command whose manifest declares none: a viewer never runs an undeclared command. */
export const DEFAULT_COMMAND_PERMISSION: Permission = 'execute';

/**
 * The pid `.dp/server.json` names and `/api/cli/server` answers: the `dp serve` process the
 * operator started (the supervisor), also when an engine process under it answers the CLI.
 */
let serverPid = process.pid;
export function setServerPid(pid: number): void {
  serverPid = pid;
}

/** Every command a plugin declares, by the key its handler is registered under (commandKey). */
export function manifestCommands(app: App): Map<string, ManifestCommand> {
  const out = new Map<string, ManifestCommand>();
  const walk = (commands: ManifestCommand[] | undefined, parents: string[]) => {
    for (const c of commands ?? []) {
      const name = [...parents, c.command.split(' ')[0]].join(' ');
      if (c.commands?.length) walk(c.commands, [name]);
      else out.set(commandKey(name, parents.length === 0 ? c.whenOption : undefined), c);
    }
  };
  for (const p of app.plugins) walk(p.manifest.contributes?.commands, []);
  return out;
}

/** Where a command running for a CLI client writes: its stdout goes to that client, not the server's. */
export interface CommandSink {
  write(kind: 'stdout' | 'stderr' | 'progress', text: string): void;
  /** The client's working folder, for commands that resolve relative paths against process.cwd(). */
  cwd: string;
}

const sinks = new AsyncLocalStorage<CommandSink>();
let redirected = false;

/**
 * Some handlers print straight to process.stdout (a long Markdown document, a CSV stream) and
 * resolve paths against process.cwd(). Inside a command run for a CLI client, both follow that
 * client (an AsyncLocalStorage scope); everywhere else they are the process's own.
 */
function redirectProcessOutput(): void {
  if (redirected) return;
  redirected = true;
  const write = process.stdout.write.bind(process.stdout) as (...args: unknown[]) => boolean;
  process.stdout.write = function (chunk: unknown, encoding?: unknown, callback?: unknown): boolean {
    const sink = sinks.getStore();
    if (!sink) return write(chunk, encoding, callback);
    sink.write('stdout', typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array).toString(typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8'));
    const done = typeof encoding === 'function' ? encoding : callback;
    if (typeof done === 'function') queueMicrotask(() => (done as () => void)());
    return true;
  } as typeof process.stdout.write;
  const scoped = () => sinks.getStore()?.cwd ?? ownWorkingFolder();
  // An accessor that keeps this answer: graceful-fs (loaded by exceljs and unzipper when a
  // spreadsheet is first read) replaces process.cwd with a wrapper that caches its first answer
  // for good, which would pin every later command, and the server itself, to one folder.
  Object.defineProperty(process, 'cwd', {
    configurable: true,
    enumerable: true,
    get: () => scoped,
    set: () => undefined,
  });
}

/**
 * Runs a command's handler with its output going to `sink`: what it prints through `io` and
 * straight to process.stdout, and process.cwd() as the sink's. For commands run in a process
 * that is not theirs: this route's, and sdk/testing's runCommand.
 */
export function runWithSink<T>(sink: CommandSink, wantsJson: boolean, caller: Caller, handler: (io: CliIO) => Promise<T>): Promise<T> {
  redirectProcessOutput();
  return sinks.run(sink, () => handler(sinkIO(sink, wantsJson, caller)));
}

function sinkIO(sink: CommandSink, wantsJson: boolean, caller: Caller): CliIO {
  return {
    wantsJson,
    caller,
    out: (text) => sink.write('stdout', text + '\n'),
    err: (text) => sink.write('stderr', text + '\n'),
    json: (value) => sink.write('stdout', JSON.stringify(value, null, 2) + '\n'),
    table: (rows, columns) => sink.write('stdout', renderTable(rows, columns) + '\n'),
    progress: (text) => sink.write('progress', text),
  };
}

function sameToken(presented: string, expected: string): boolean {
  const a = Buffer.from(presented);
  const b = Buffer.from(expected);
  return a.length === b.length && crypto.timingSafeEqual(a, b);
}

function headerValue(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[0] : v;
}

/** The body of POST /api/cli/run. */
interface RunBody {
  command: string;
  args: Record<string, unknown>;
  env?: string | null;
  cwd?: string;
}

/**
 * The kernel routes of the CLI beside the server: `GET /api/cli/server` (which project, whether
 * auth is on; the local token proves the caller may read the server file) and `POST /api/cli/run`.
 * Both are `public` at the router because they authenticate themselves: with auth off the local
 * token stands for the OS user who owns the project (an admin, as at the CLI); with auth on the
 * caller's own login token, and every command is checked against its manifest permission.
 */
export function cliRoutes(app: App, localToken: () => string | null): RouteDefinition[] {
  const commands = manifestCommands(app);
  const localTokenValid = (headers: Record<string, string | string[] | undefined>) => {
    const expected = localToken();
    const presented = headerValue(headers[LOCAL_TOKEN_HEADER]);
    return Boolean(expected && presented && sameToken(presented, expected));
  };
  const unauthenticated = (code: string, message: string) => new DpError(401, code, message, {}, { 'WWW-Authenticate': 'Bearer realm="dp"' });

  return [
    {
      method: 'GET',
      url: '/api/cli/server',
      permission: 'public',
      summary: 'For the dp CLI: the project this server serves and whether auth is on (needs the local token of .dp/server.json)',
      description: "Needs the X-Dp-Local-Token header with the token of the project's .dp/server.json.",
      handler: async (req) => {
        if (!localTokenValid(req.headers)) throw unauthenticated('local_token_required', 'Send the local token of .dp/server.json in the X-Dp-Local-Token header');
        return { project_root: fs.realpathSync(app.project.root), pid: serverPid, auth_enabled: app.authEnabled, environment: app.project.env };
      },
    },
    {
      method: 'POST',
      url: '/api/cli/run',
      permission: 'public',
      summary: "Run one dp CLI command in the server (the CLI does this when the server holds the database); streams the command's output as NDJSON",
      description:
        "Without --auth: needs the X-Dp-Local-Token header (the token of .dp/server.json, readable only by the project's owner). " +
        "With --auth: needs the caller's login token (Authorization: Bearer), and the role must hold the command's permission. " +
        'Answers application/x-ndjson lines {"stdout"|"stderr"|"progress": text}, then {"exit": code} or {"error": {code, message, details}}.',
      bodyLimit: 1024 * 1024,
      schema: {
        body: {
          type: 'object',
          required: ['command', 'args'],
          additionalProperties: false,
          properties: {
            command: { type: 'string', minLength: 1, maxLength: 200 },
            args: { type: 'object', additionalProperties: true },
            env: { type: ['string', 'null'] },
            cwd: { type: 'string', maxLength: 4096 },
          },
        },
      },
      handler: async (req, reply) => {
        const body = req.body as RunBody;
        let caller: Caller;
        if (app.authEnabled) {
          if (req.headers.authorization === undefined) throw unauthenticated('login_required', "This server runs with --auth: log in with 'dp login' first");
          caller = await app.auth.resolveCaller(req.raw);
        } else {
          if (!localTokenValid(req.headers)) throw unauthenticated('local_token_required', 'Send the local token of .dp/server.json in the X-Dp-Local-Token header');
          caller = LOCAL_ADMIN;
        }
        const manifest = commands.get(body.command);
        const entry = app.commands.get(body.command);
        if (!manifest || !entry) throw notFound('unknown_command', `No command 'dp ${body.command}' in this server (is its plugin enabled?)`, { command: body.command });
        if (manifest.runsOnlyLocally) {
          throw new DpError(409, 'command_runs_only_locally', `'dp ${body.command}' cannot run through the running server: ${manifest.runsOnlyLocally}`, { command: body.command });
        }
        const permission = commandPermission(manifest, body.args);
        if (!hasPermission(caller, permission)) {
          throw forbidden('insufficient_role', `'dp ${body.command}' needs the '${permission}' permission; role '${caller.role}' does not have it`, {
            required_permission: permission,
            required_role: minimumRole(permission),
            role: caller.role,
            command: body.command,
          });
        }
        // The CLI meant another environment's file: that file is not held, so it opens it itself.
        const wanted = databaseFile(loadProject(app.project.root, body.env ?? null));
        if (path.resolve(wanted) !== path.resolve(app.db.path)) {
          throw new DpError(409, 'server_environment_differs', `The server works on environment '${app.project.env ?? '(default)'}', not the one this command names`, {
            server_environment: app.project.env,
          });
        }
        // A logged-in user's relative paths resolve inside the project; the owner's (local token) from where they stand.
        const root = app.project.root;
        const cwd = body.cwd && path.isAbsolute(body.cwd) && (caller === LOCAL_ADMIN || isInside(root, body.cwd)) ? body.cwd : root;

        redirectProcessOutput();
        const res = reply.raw;
        reply.hijack();
        res.writeHead(200, { ...(reply.getHeaders() as Record<string, string>), 'content-type': 'application/x-ndjson; charset=utf-8', 'cache-control': 'no-cache' });
        const line = (value: unknown) => {
          if (!res.destroyed) res.write(JSON.stringify(value) + '\n');
        };
        const sink: CommandSink = { cwd, write: (kind, text) => line({ [kind]: text }) };
        const args = { ...body.args, project: root, env: body.env ?? undefined, json: Boolean(body.args.json) };
        const started = performance.now();
        try {
          const code = await sinks.run(sink, () => entry.handler(args, sinkIO(sink, Boolean(args.json), caller)));
          line({ exit: typeof code === 'number' ? code : 0 });
        } catch (e) {
          if (!isDpError(e)) app.log.error('cli command failed', { command: body.command, error: errorMessage(e) });
          // The project's owner sees what the CLI would print; a logged-in user gets the HTTP API's discretion.
          const failure = isDpError(e)
            ? caller === LOCAL_ADMIN
              ? e
              : withoutAbsolutePaths(e, [root, fs.realpathSync(root)])
            : caller === LOCAL_ADMIN
              ? new DpError(500, 'internal_error', errorMessage(e))
              : new DpError(500, 'internal_error', 'An unexpected error occurred; the server log has details');
          line({ error: failure.toBody().error, status: failure.status });
        } finally {
          app.log.info('cli command', { command: body.command, username: caller.username, ms: Math.round(performance.now() - started) });
          res.end();
        }
        return reply;
      },
    },
  ];
}

/** The permission a command needs with these options: its own, or a stronger one an option given asks for. */
export function commandPermission(manifest: ManifestCommand, args: Record<string, unknown>): Permission {
  const base = manifest.permission ?? DEFAULT_COMMAND_PERMISSION;
  const needed = [base];
  for (const [option, permission] of Object.entries(manifest.permissionWhenOption ?? {})) {
    const v = args[option];
    if (v !== undefined && v !== null && v !== false) needed.push(permission);
  }
  // The strongest: the one held by the fewest roles (ROLES are cumulative).
  return needed.reduce((a, b) => (ROLES.indexOf(minimumRole(b)) > ROLES.indexOf(minimumRole(a)) ? b : a));
}

function isInside(root: string, target: string): boolean {
  const rel = path.relative(path.resolve(root), path.resolve(target));
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}
