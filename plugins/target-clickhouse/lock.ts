/**
 * The run lock every dp process targeting the same ClickHouse database shares, so two servers
 * (or a server and a CLI run) never build the same models at once. ClickHouse has no
 * transactions or compare-and-set, so the lock is a table of claims with a lease:
 *
 *   `<database>.__dp_run_lock`: (lock, token, holder, claimed_ms, expires_at, released, version),
 *   a ReplacingMergeTree(version) read with FINAL; on a cluster a local table on every shard
 *   behind a Distributed table whose sharding key is the constant 0, so every claim lands on the
 *   first shard and every process reads the same rows.
 *
 * acquire: insert a claim, then read the unreleased claims whose lease has not ended; the
 * earliest (claimed_ms, token) holds the lock. A process that is not first withdraws its claim
 * (a newer version with released=1) and fails with `run_locked` naming the holder. The holder
 * renews its lease every third of it while the run goes on, and releases it at the end; a
 * process that died leaves a claim that ends with its lease (default 10 minutes).
 * Caveat: claim order is the claimers' clocks in milliseconds; processes on machines whose clocks
 * differ by more than the time between two claims can both win (NTP keeps this far apart).
 */
import crypto from 'node:crypto';
import os from 'node:os';
import { conflict } from '../../sdk/index.js';
import { chIdent, chLiteral, type ClickHouseTarget } from './client.js';

export const LOCK_TABLE = '__dp_run_lock';
const DEFAULT_LEASE_MS = 10 * 60_000;

export interface HeldLock {
  release(): Promise<void>;
}

async function ensureLockTable(target: ClickHouseTarget): Promise<string> {
  const db = chIdent(target.database);
  const on = target.cluster ? ` ON CLUSTER ${chIdent(target.cluster)}` : '';
  const columns = '(lock String, token String, holder String, claimed_ms UInt64, expires_ms UInt64, released UInt8, version UInt64)';
  const engine = 'ENGINE = ReplacingMergeTree(version) ORDER BY (lock, token)';
  await target.command(`CREATE DATABASE IF NOT EXISTS ${db}${on}`);
  if (!target.cluster) {
    await target.command(`CREATE TABLE IF NOT EXISTS ${db}.${chIdent(LOCK_TABLE)} ${columns} ${engine}`);
  } else {
    await target.command(`CREATE TABLE IF NOT EXISTS ${db}.${chIdent(LOCK_TABLE + '_local')}${on} ${columns} ${engine}`);
    await target.command(
      `CREATE TABLE IF NOT EXISTS ${db}.${chIdent(LOCK_TABLE)}${on} ${columns} ENGINE = Distributed(${chIdent(target.cluster)}, ${db}, ${chIdent(LOCK_TABLE + '_local')}, 0)`,
    );
  }
  return `${db}.${chIdent(LOCK_TABLE)}`;
}

/** Takes the run lock `name` (e.g. `transform`) or throws 409 `run_locked` naming the holder. */
export async function acquireRunLock(target: ClickHouseTarget, name: string, options: { leaseMs?: number; holder?: string } = {}): Promise<HeldLock> {
  const table = await ensureLockTable(target);
  const lease = options.leaseMs ?? DEFAULT_LEASE_MS;
  const token = crypto.randomUUID();
  const holder = options.holder ?? `${os.hostname()} pid ${process.pid}`;
  const claimed = Date.now();
  let version = 1;
  const write = (released: 0 | 1, expires: number) =>
    target.command(
      `INSERT INTO ${table} (lock, token, holder, claimed_ms, expires_ms, released, version) VALUES (${chLiteral(name)}, ${chLiteral(token)}, ${chLiteral(holder)}, ${claimed}, ${expires}, ${released}, ${version++})`,
    );
  await write(0, claimed + lease);
  const claims = await target.query(
    `SELECT token, holder FROM ${table} FINAL WHERE lock = ${chLiteral(name)} AND released = 0 AND expires_ms > ${Date.now()} ORDER BY claimed_ms, token`,
  );
  const first = claims.rows[0];
  if (!first || first[0] !== token) {
    await write(1, claimed);
    throw conflict('run_locked', `Another dp process is running '${name}' on this ClickHouse database (${String(first?.[1] ?? 'unknown holder')}); try again when it has finished`, {
      lock: name,
      holder: first ? String(first[1]) : null,
    });
  }
  const renew = setInterval(() => void write(0, Date.now() + lease).catch(() => {}), Math.max(1000, Math.floor(lease / 3)));
  renew.unref();
  return {
    async release() {
      clearInterval(renew);
      await write(1, Date.now());
    },
  };
}
