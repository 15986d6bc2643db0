/**
 * A real PostgreSQL for the cloud_warehouse_c tests: initdb into a temp folder, started on a
 * free port of 127.0.0.1 with password (scram) authentication, stopped and removed by `stop`.
 * (The smallest local equivalent of test/support/databases.ts, used until that is on main.)
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';

const BIN = '/usr/lib/postgresql/15/bin';

export interface RunningPostgres {
  host: string;
  port: number;
  user: string;
  password: string;
  database: string;
  query(sql: string, params?: unknown[]): Promise<pg.QueryResult>;
  stop(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

/** Runs a PostgreSQL binary; as root it runs as the `postgres` user (initdb refuses root). */
function asPostgres(cmd: string, args: string[]): [string, string[]] {
  return process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', cmd, ...args]] : [cmd, args];
}

export async function startPostgres(): Promise<RunningPostgres> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dp-cc-pg-'));
  fs.chmodSync(dir, 0o777);
  const data = path.join(dir, 'data');
  const password = 'cc-secret-pw';
  const pwfile = path.join(dir, 'pw');
  fs.writeFileSync(pwfile, password, { mode: 0o644 });
  if (process.getuid?.() === 0) spawnSync('chown', ['-R', 'postgres', dir]);
  const [initCmd, initArgs] = asPostgres(path.join(BIN, 'initdb'), ['-D', data, '-U', 'postgres', '--auth-local=trust', '--auth-host=scram-sha-256', `--pwfile=${pwfile}`, '-E', 'UTF8', '--no-sync']);
  const init = spawnSync(initCmd, initArgs, { encoding: 'utf8' });
  if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr}`);
  const port = await freePort();
  const [cmd, args] = asPostgres(path.join(BIN, 'postgres'), ['-D', data, '-p', String(port), '-k', dir, '-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off', '-c', 'shared_buffers=16MB']);
  const child: ChildProcess = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const config = { host: '127.0.0.1', port, user: 'postgres', password, database: 'postgres' };
  const deadline = Date.now() + 30_000;
  for (;;) {
    const client = new pg.Client(config);
    try {
      await client.connect();
      await client.end();
      break;
    } catch {
      await client.end().catch(() => undefined);
      if (Date.now() > deadline || child.exitCode !== null) throw new Error(`PostgreSQL did not start: ${stderr.slice(-500)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return {
    ...config,
    async query(sql, params) {
      const client = new pg.Client(config);
      await client.connect();
      try {
        return await client.query(sql, params);
      } finally {
        await client.end();
      }
    },
    async stop() {
      const exited = new Promise<void>((resolve) => (child.exitCode !== null ? resolve() : child.once('exit', () => resolve())));
      // runuser forwards the signal to postgres; SIGINT is the fast shutdown.
      child.kill('SIGINT');
      await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
