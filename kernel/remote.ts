/**
 * The CLI side of "the CLI beside a running server" (docs/cli.md). While `dp serve` holds the
 * project's database, a CLI command finds the server through `.dp/server.json` and runs inside
 * it (POST /api/cli/run, kernel/remote-server.ts); what the command prints comes back as it is
 * printed, so output, exit codes and --json are the same as when the CLI opens the file itself.
 * With --auth the CLI sends the user's own login (`dp login`), kept in the user's config folder.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { DpError, errorMessage } from '../sdk/errors.js';
import { undiciRequest } from '../sdk/undici.js';
import { LOCAL_TOKEN_HEADER, SERVER_FILE, type ServerFile } from './server-file.js';

/** How long the CLI waits for a server that its file names before deciding it is gone. */
const PROBE_TIMEOUT_MS = 3000;

export interface LiveServer {
  url: string;
  token: string;
  auth: boolean;
  projectRoot: string;
}

/**
 * Reads a credential file only when it is a regular file (not a link) of this user that no one
 * else may read or write; anything else is ignored (`warn` says why), never trusted.
 */
function readPrivateJson(file: string, warn: (message: string) => void, label: string): unknown | null {
  let fd: number;
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY | (fs.constants.O_NOFOLLOW ?? 0));
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT') warn(`ignoring ${label}: it cannot be opened (${code === 'ELOOP' ? 'a symbolic link' : code})`);
    return null;
  }
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile()) return warn(`ignoring ${label}: not a regular file`), null;
    if (typeof process.getuid === 'function' && st.uid !== process.getuid()) return warn(`ignoring ${label}: it belongs to another user`), null;
    if ((st.mode & 0o077) !== 0) return warn(`ignoring ${label}: other users may read it (mode ${(st.mode & 0o777).toString(8)}; it must be 600)`), null;
    return JSON.parse(fs.readFileSync(fd, 'utf8'));
  } catch (e) {
    warn(`ignoring ${label}: ${errorMessage(e)}`);
    return null;
  } finally {
    fs.closeSync(fd);
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    // ESRCH: gone. EPERM: another user's process, so not this user's server either.
    return false;
  }
}

/**
 * The `dp serve` that holds this project's database right now, or null: no file, a stale file
 * (its process is gone or does not answer as this project's server), or a file that is not
 * private to this user.
 */
export async function findLiveServer(projectRoot: string, warn: (message: string) => void = () => {}): Promise<LiveServer | null> {
  const info = readPrivateJson(path.join(projectRoot, SERVER_FILE), warn, SERVER_FILE) as Partial<ServerFile> | null;
  if (!info || typeof info.url !== 'string' || typeof info.token !== 'string' || typeof info.pid !== 'number') return null;
  if (!/^http:\/\/[^/]+$/.test(info.url) || !processAlive(info.pid)) return null;
  try {
    const res = await undiciRequest(`${info.url}/api/cli/server`, {
      headers: { [LOCAL_TOKEN_HEADER]: info.token },
      headersTimeout: PROBE_TIMEOUT_MS,
      bodyTimeout: PROBE_TIMEOUT_MS,
    });
    const body = (await res.body.json().catch(() => null)) as { project_root?: string; pid?: number; auth_enabled?: boolean } | null;
    if (res.statusCode !== 200 || !body) return null;
    if (body.pid !== info.pid || body.project_root !== fs.realpathSync(projectRoot)) return null;
    return { url: info.url, token: info.token, auth: Boolean(body.auth_enabled), projectRoot: body.project_root };
  } catch {
    return null;
  }
}

// ---------------------------------------------------------------- logins (dp login / dp logout)

interface StoredLogin {
  token: string;
  username: string;
  role: string;
  expires_at?: string;
}

/** `$XDG_CONFIG_HOME/dp/credentials.json` (default ~/.config): the user's logins, never inside a project. */
export function credentialsFile(): string {
  const base = process.env.XDG_CONFIG_HOME && path.isAbsolute(process.env.XDG_CONFIG_HOME) ? process.env.XDG_CONFIG_HOME : path.join(os.homedir(), '.config');
  return path.join(base, 'dp', 'credentials.json');
}

/** A login is kept per server address and project. */
const loginKey = (server: LiveServer) => `${server.url} ${server.projectRoot}`;

function readLogins(warn: (message: string) => void): Record<string, StoredLogin> {
  const data = readPrivateJson(credentialsFile(), warn, credentialsFile());
  return data && typeof data === 'object' && !Array.isArray(data) ? (data as Record<string, StoredLogin>) : {};
}

function writeLogins(logins: Record<string, StoredLogin>): void {
  const file = credentialsFile();
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  fs.rmSync(tmp, { force: true });
  fs.writeFileSync(tmp, JSON.stringify(logins, null, 2) + '\n', { mode: 0o600, flag: 'wx' });
  fs.chmodSync(tmp, 0o600);
  fs.renameSync(tmp, file);
}

export function storedLogin(server: LiveServer, warn: (message: string) => void = () => {}): StoredLogin | null {
  return readLogins(warn)[loginKey(server)] ?? null;
}

function serverError(status: number, body: unknown): DpError {
  const e = (body as { error?: { code?: string; message?: string; details?: Record<string, unknown> } } | null)?.error;
  return new DpError(status, e?.code ?? 'server_error', e?.message ?? `The server answered HTTP ${status}`, e?.details ?? {});
}

async function jsonCall(server: LiveServer, method: 'GET' | 'POST', urlPath: string, body?: unknown, token?: string) {
  const res = await undiciRequest(`${server.url}${urlPath}`, {
    method,
    headers: { ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const parsed = await res.body.json().catch(() => null);
  return { status: res.statusCode, body: parsed as any };
}

/** Logs in at the server and keeps the token in the user's credentials file (mode 0600). */
export async function login(server: LiveServer, username: string, password: string): Promise<StoredLogin> {
  if (!server.auth) throw new DpError(409, 'auth_not_enabled', "This project's server runs without --auth: the CLI needs no login", {});
  const { status, body } = await jsonCall(server, 'POST', '/api/auth/login', { username, password });
  if (status !== 200) throw serverError(status, body);
  const logins = readLogins(() => {});
  const entry: StoredLogin = { token: body.token, username: body.username, role: body.role, expires_at: body.expires_at };
  logins[loginKey(server)] = entry;
  writeLogins(logins);
  return entry;
}

/** Revokes the stored token at the server (when it answers) and forgets it. Returns the username it held, if any. */
export async function logout(server: LiveServer | null, projectRoot: string): Promise<string | null> {
  const logins = readLogins(() => {});
  const root = fs.existsSync(projectRoot) ? fs.realpathSync(projectRoot) : projectRoot;
  const keys = Object.keys(logins).filter((k) => (server ? k === loginKey(server) : k.endsWith(` ${root}`)));
  let who: string | null = null;
  for (const k of keys) {
    who = logins[k].username;
    if (server) await jsonCall(server, 'POST', '/api/auth/logout', undefined, logins[k].token).catch(() => null);
    delete logins[k];
  }
  if (keys.length) writeLogins(logins);
  return who;
}

/** A line typed at the terminal (echo off for secrets) or the first line of piped stdin. */
export async function readLine(prompt: string, options: { secret?: boolean } = {}): Promise<string> {
  const tty = Boolean(process.stdin.isTTY);
  if (tty) process.stderr.write(prompt);
  const rl = readline.createInterface({ input: process.stdin, output: tty && !options.secret ? process.stderr : undefined, terminal: tty });
  try {
    for await (const line of rl) return line;
    return '';
  } finally {
    rl.close();
    if (tty && options.secret) process.stderr.write('\n');
  }
}

/** The headers that authenticate this CLI user at the server: their login with --auth, none otherwise. */
function authHeaders(server: LiveServer): Record<string, string> {
  if (!server.auth) return {};
  const stored = storedLogin(server, (m) => process.stderr.write(`warning: ${m}\n`));
  if (!stored) throw new DpError(401, 'login_required', "The server of this project runs with --auth: log in with 'dp login' first", {});
  return { authorization: `Bearer ${stored.token}` };
}

/** ctx.localServer() of a CLI command: the running server of the project and how to call it as this user. */
export async function localServerFor(projectRoot: string): Promise<{ url: string; headers: Record<string, string> } | null> {
  const server = await findLiveServer(projectRoot, (m) => process.stderr.write(`warning: ${m}\n`));
  return server ? { url: server.url, headers: authHeaders(server) } : null;
}

/** The server's refusal as the DpError the CLI reports; a refused login says how to renew it. */
function refusal(server: LiveServer, status: number, body: unknown): DpError {
  const err = serverError(status, body);
  return status === 401 && server.auth ? new DpError(401, err.code, `${err.message} (run 'dp login' again)`, err.details) : err;
}

/**
 * Calls one of the server's JSON routes as this CLI user: the local token, plus their login
 * with --auth (the route checks the role as for any client). Returns the answer's body; a
 * refusal is thrown as the server's error.
 */
export async function callServer(server: LiveServer, method: 'GET' | 'POST' | 'PUT' | 'DELETE', urlPath: string, body?: unknown): Promise<unknown> {
  const res = await undiciRequest(`${server.url}${urlPath}`, {
    method,
    headers: { [LOCAL_TOKEN_HEADER]: server.token, ...authHeaders(server), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const parsed = await res.body.json().catch(() => null);
  if (res.statusCode >= 300) throw refusal(server, res.statusCode, parsed);
  return parsed;
}

// ---------------------------------------------------------------- running a command in the server

/** The parsed options a handler sees, without yargs' bookkeeping (the server sets --project itself). */
function commandArgs(argv: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(argv)) if (k !== '_' && k !== '$0' && k !== 'project' && v !== undefined) out[k] = v;
  return out;
}

/**
 * Runs `command` (its handler key) in the server and prints what it prints. Returns 'local'
 * when the server works on another environment's file (the CLI then opens its own), else sets
 * process.exitCode; a failure is thrown as the DpError the command raised, so the CLI reports
 * it exactly as for a local run.
 */
export async function runInServer(server: LiveServer, command: string, argv: Record<string, unknown>): Promise<'ran' | 'local'> {
  const headers: Record<string, string> = { 'content-type': 'application/json', [LOCAL_TOKEN_HEADER]: server.token, ...authHeaders(server) };
  const res = await undiciRequest(`${server.url}/api/cli/run`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ command, args: commandArgs(argv), env: (argv.env as string | undefined) ?? null, cwd: process.cwd() }),
    // Long commands (a transform) may be silent for a while between lines.
    bodyTimeout: 0,
    headersTimeout: 0,
  });
  if (res.statusCode !== 200) {
    const err = refusal(server, res.statusCode, await res.body.json().catch(() => null));
    if (err.code === 'server_environment_differs') return 'local';
    throw err;
  }
  const tty = Boolean(process.stderr.isTTY);
  let progressShown = false;
  const clearProgress = () => {
    if (progressShown) process.stderr.write('\r\x1b[K');
    progressShown = false;
  };
  const decoder = new TextDecoder();
  let pending = '';
  let finished = false;
  const handle = async (text: string) => {
    const msg = JSON.parse(text) as { stdout?: string; stderr?: string; progress?: string; exit?: number; error?: { code: string; message: string; details?: Record<string, unknown> }; status?: number };
    if (msg.stdout !== undefined) {
      clearProgress();
      if (!process.stdout.write(msg.stdout)) await new Promise((r) => process.stdout.once('drain', r));
    } else if (msg.stderr !== undefined) {
      clearProgress();
      process.stderr.write(msg.stderr);
    } else if (msg.progress !== undefined) {
      if (tty) {
        process.stderr.write('\r\x1b[K' + msg.progress.slice(0, (process.stderr.columns ?? 100) - 1));
        progressShown = true;
      } else process.stderr.write(msg.progress + '\n');
    } else if (msg.exit !== undefined) {
      clearProgress();
      finished = true;
      process.exitCode = msg.exit;
    } else if (msg.error) {
      clearProgress();
      finished = true;
      throw new DpError(msg.status ?? 500, msg.error.code, msg.error.message, msg.error.details ?? {});
    }
  };
  for await (const chunk of res.body) {
    pending += decoder.decode(chunk as Uint8Array, { stream: true });
    let nl: number;
    while ((nl = pending.indexOf('\n')) >= 0) {
      const text = pending.slice(0, nl);
      pending = pending.slice(nl + 1);
      if (text) await handle(text);
    }
  }
  if (!finished) throw new DpError(502, 'server_connection_lost', 'The server stopped answering before the command finished (was it stopped?)', {});
  return 'ran';
}
