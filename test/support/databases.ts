/**
 * Real PostgreSQL and MariaDB servers for connector tests and benchmarks: each call starts its own
 * instance from Debian's binaries (PostgreSQL 15 under /usr/lib/postgresql/15/bin, `mariadbd`) on
 * 127.0.0.1, a free port and a temporary data folder, and `stop()` ends it and removes the folder.
 * Never the system services. `scripts/setup-system.sh` installs the packages on a fresh machine.
 *
 * Both servers refuse to run as root (initdb: "cannot be run as root"; mariadbd without --user).
 * When the test runs as root, PostgreSQL runs as the `postgres` system user (spawn's uid/gid, its
 * data folder chowned to it) and MariaDB gets `--user=mysql`.
 *
 * The initial data folder (initdb's, mariadb-install-db's) is made once per suite run and copied
 * for each server (test/support/templates.ts, keyed on the binaries and the superuser's
 * credentials): a copy costs a fraction of the bootstrap each file paid before.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { sharedTemplate } from './templates.js';

export const PG_BIN = '/usr/lib/postgresql/15/bin';

export interface RunningDatabase {
  host: '127.0.0.1';
  port: number;
  user: string;
  password: string;
  database: string;
  /** Ends the server and removes its data folder. */
  stop(): Promise<void>;
}

/** A port nobody listens on right now (the OS picks it). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

function systemUser(name: string): { uid: number; gid: number } | undefined {
  const r = spawnSync('id', ['-u', name], { encoding: 'utf8' });
  const g = spawnSync('id', ['-g', name], { encoding: 'utf8' });
  if (r.status !== 0 || g.status !== 0) return undefined;
  return { uid: Number(r.stdout.trim()), gid: Number(g.stdout.trim()) };
}

function chownTree(dir: string, owner: { uid: number; gid: number }): void {
  fs.chownSync(dir, owner.uid, owner.gid);
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) chownTree(p, owner);
    else fs.chownSync(p, owner.uid, owner.gid);
  }
}

async function waitForPort(port: number, child: ChildProcess, what: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exited = false;
  child.once('exit', () => (exited = true));
  while (Date.now() < deadline) {
    if (exited) throw new Error(`${what} exited before listening on port ${port}`);
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1');
      s.once('connect', () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what} did not listen on port ${port} within ${timeoutMs} ms`);
}

export function stopChild(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill(signal);
  });
}

/** A key that changes when any of `binaries` is replaced (a package upgrade), plus `extra`. */
function binariesKey(binaries: string[], extra: string[] = []): string {
  const parts = binaries.map((b) => {
    const st = fs.statSync(b);
    return `${b}:${st.size}:${st.mtimeMs}:${st.ino}`;
  });
  return crypto.createHash('sha256').update([...parts, ...extra].join('\0')).digest('hex').slice(0, 20);
}

/** Copies a template's data folder to `dest`, owners, modes and sparse files as they are (`cp -a`). */
function copyDataFolder(template: string, dest: string): void {
  const r = spawnSync('cp', ['-a', '--sparse=auto', template, dest], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`copying the database template failed: ${r.stderr}`);
}

/** Ends the servers a test file started when its process exits without calling stop(). */
const running = new Set<ChildProcess>();
process.on('exit', () => {
  for (const c of running) c.kill('SIGKILL');
});

/**
 * The handle of a started server: how to connect, and stop() that ends it with `stopSignal` (the
 * server's own fast, clean shutdown) and removes its data folder.
 */
function runningDatabase(
  connection: { port: number; user: string; password: string; database: string },
  child: ChildProcess,
  stopSignal: NodeJS.Signals,
  dir: string,
): RunningDatabase {
  return {
    host: '127.0.0.1',
    ...connection,
    async stop() {
      await stopChild(child, stopSignal);
      running.delete(child);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A fresh PostgreSQL 15 cluster: superuser `dp` with password auth (scram) over TCP, database `source`.
 */
export async function startPostgres(options: { user?: string; password?: string; database?: string } = {}): Promise<RunningDatabase> {
  const user = options.user ?? 'dp';
  const password = options.password ?? 'pg-test-secret';
  const database = options.database ?? 'source';
  const asRoot = process.getuid?.() === 0;
  const owner = asRoot ? systemUser('postgres') : undefined;
  if (asRoot && !owner) throw new Error('PostgreSQL refuses to run as root and there is no postgres system user');
  const ids = owner ? { uid: owner.uid, gid: owner.gid } : {};
  const template = await sharedTemplate('postgres', binariesKey([path.join(PG_BIN, 'initdb'), path.join(PG_BIN, 'postgres')], [user, password, String(owner?.uid ?? '')]), (folder) => {
    const pwfile = path.join(folder, 'pw');
    fs.writeFileSync(pwfile, password + '\n');
    if (owner) chownTree(folder, owner);
    const init = spawnSync(
      path.join(PG_BIN, 'initdb'),
      ['-D', path.join(folder, 'data'), '-U', user, '--pwfile', pwfile, '--auth', 'scram-sha-256', '-E', 'UTF8', '--locale', 'C', '--no-sync'],
      { encoding: 'utf8', ...ids },
    );
    fs.rmSync(pwfile);
    if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr || init.stdout}`);
  });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dp-pg-'));
  const data = path.join(dir, 'data');
  if (owner) fs.chownSync(dir, owner.uid, owner.gid);
  copyDataFolder(path.join(template, 'data'), data);
  const port = await freePort();
  const child = spawn(
    path.join(PG_BIN, 'postgres'),
    ['-D', data, '-p', String(port), '-h', '127.0.0.1', '-k', dir, '-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off'],
    { stdio: 'ignore', ...ids },
  );
  running.add(child);
  await waitForPort(port, child, 'postgres');
  // The port opens before recovery ends ("the database system is starting up"): retry until it accepts.
  let created = spawnSync('true', { encoding: 'utf8' });
  for (const deadline = Date.now() + 60_000; ; ) {
    created = spawnSync(path.join(PG_BIN, 'createdb'), ['-h', '127.0.0.1', '-p', String(port), '-U', user, database], {
      encoding: 'utf8',
      env: { ...process.env, PGPASSWORD: password },
    });
    if (created.status === 0 || !/starting up|shutting down/.test(String(created.stderr)) || Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  if (created.status !== 0) {
    await stopChild(child, 'SIGINT');
    throw new Error(`createdb failed: ${created.stderr}`);
  }
  return runningDatabase({ port, user, password, database }, child, 'SIGINT', dir);
}

/**
 * A fresh MariaDB server: user `dp` (password auth, all privileges) and database `source`, on TCP only.
 */
export async function startMariaDb(options: { user?: string; password?: string; database?: string } = {}): Promise<RunningDatabase> {
  const user = options.user ?? 'dp';
  const password = options.password ?? 'maria-test-secret';
  const database = options.database ?? 'source';
  const asRoot = process.getuid?.() === 0;
  const owner = asRoot ? systemUser('mysql') : undefined;
  if (asRoot && !owner) throw new Error('mariadbd refuses to run as root and there is no mysql system user');
  const runAs = asRoot ? ['--user=mysql'] : [];
  const installDb = spawnSync('sh', ['-c', 'command -v mariadb-install-db'], { encoding: 'utf8' }).stdout.trim() || 'mariadb-install-db';
  const template = await sharedTemplate('mariadb', binariesKey([installDb, '/usr/sbin/mariadbd'], [String(owner?.uid ?? '')]), (folder) => {
    if (owner) chownTree(folder, owner);
    const init = spawnSync('mariadb-install-db', ['--no-defaults', `--datadir=${path.join(folder, 'data')}`, '--auth-root-authentication-method=normal', '--skip-test-db', ...runAs], {
      encoding: 'utf8',
    });
    if (init.status !== 0) throw new Error(`mariadb-install-db failed: ${init.stderr || init.stdout}`);
  });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dp-maria-'));
  const data = path.join(dir, 'data');
  if (owner) fs.chownSync(dir, owner.uid, owner.gid);
  copyDataFolder(path.join(template, 'data'), data);
  const port = await freePort();
  const socket = path.join(dir, 'mysqld.sock');
  const bootstrap = path.join(dir, 'init.sql');
  const quoted = password.replace(/'/g, "''");
  fs.writeFileSync(
    bootstrap,
    `CREATE DATABASE IF NOT EXISTS \`${database}\`;\n` +
      `CREATE USER IF NOT EXISTS '${user}'@'%' IDENTIFIED BY '${quoted}';\n` +
      `CREATE USER IF NOT EXISTS '${user}'@'localhost' IDENTIFIED BY '${quoted}';\n` +
      `GRANT ALL PRIVILEGES ON *.* TO '${user}'@'%';\n` +
      `GRANT ALL PRIVILEGES ON *.* TO '${user}'@'localhost';\n` +
      `FLUSH PRIVILEGES;\n`,
  );
  if (asRoot) fs.chownSync(bootstrap, systemUser('mysql')!.uid, systemUser('mysql')!.gid);
  const child = spawn(
    '/usr/sbin/mariadbd',
    [
      '--no-defaults',
      `--datadir=${data}`,
      `--port=${port}`,
      '--bind-address=127.0.0.1',
      `--socket=${socket}`,
      `--pid-file=${path.join(dir, 'mysqld.pid')}`,
      `--init-file=${bootstrap}`,
      '--skip-log-bin',
      '--innodb-flush-log-at-trx-commit=0',
      '--innodb-buffer-pool-size=64M',
      '--skip-name-resolve',
      ...runAs,
    ],
    { stdio: 'ignore' },
  );
  running.add(child);
  await waitForPort(port, child, 'mariadbd');
  return runningDatabase({ port, user, password, database }, child, 'SIGTERM', dir);
}
