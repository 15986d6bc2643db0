/**
 * Backups: full copies of the database file in `_backups/`, listed from `_backups/manifest.json`.
 *
 * - Create: under the write lock (no transform, seed or restore writes meanwhile) the WAL is
 *   flushed into the file (CHECKPOINT), the file is copied to a hidden temporary name while its
 *   SHA-256 is computed from the bytes read, synced and renamed into place; then (unless
 *   `no_verify`) verified.
 * - Verify: the copy is hashed again and compared with the stored SHA-256, then opened read-only
 *   in an instance of its own and every table read (`ctx.db.inspectFile`).
 * - Restore: verify first (a damaged copy is refused); then, through the kernel's maintenance
 *   (new requests get 503 `maintenance`, in-flight ones finish, the database closes), the current
 *   file is moved into `_backups/` as a backup of its own and the copy takes its place; the
 *   kernel reopens, migrates and starts on the restored file.
 * Every path a caller names is checked to lie inside `_backups/` first.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Transform } from 'node:stream';
import { badRequest, conflict, errorMessage, notFound, type PluginContext } from '../../sdk/index.js';
import type { BackupEntry, BackupRestoreResult, VerifyResult } from './api-types.js';
import { BACKUPS_DIR, fsyncPath, insideFolder, ownFolder, stamp, writeFileDurably } from './paths.js';

const MANIFEST = 'manifest.json';

async function hashFile(file: string): Promise<string> {
  const h = crypto.createHash('sha256');
  await pipeline(fs.createReadStream(file), async function* (source: AsyncIterable<Buffer>) {
    for await (const chunk of source) h.update(chunk);
  });
  return h.digest('hex');
}

/** Copies `from` to `to` (synced), hashing the bytes as they are read: one pass over the source. */
async function copyHashed(from: string, to: string): Promise<{ sha256: string; size: number }> {
  const h = crypto.createHash('sha256');
  let size = 0;
  const tap = new Transform({
    transform(chunk: Buffer, _enc, done) {
      h.update(chunk);
      size += chunk.length;
      done(null, chunk);
    },
  });
  await pipeline(fs.createReadStream(from, { highWaterMark: 1 << 20 }), tap, fs.createWriteStream(to));
  fsyncPath(to);
  return { sha256: h.digest('hex'), size };
}

function checkKeep(keep: unknown): number {
  if (typeof keep !== 'number' || !Number.isInteger(keep) || keep < 1) throw badRequest('invalid_keep', "'keep' must be an integer of at least 1", { keep });
  return keep;
}

export class BackupStore {
  /** Manifest updates of this process run one at a time. */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly ctx: PluginContext) {}

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.queue.then(fn, fn);
    this.queue = next.catch(() => undefined);
    return next;
  }

  folder(): string {
    return ownFolder(this.ctx.project, BACKUPS_DIR);
  }

  private databaseFile(): string {
    const file = this.ctx.db.path;
    if (file === ':memory:') throw badRequest('no_database_file', 'The database is in memory: there is no file to back up or restore');
    return file;
  }

  private read(): BackupEntry[] {
    const file = path.join(this.folder(), MANIFEST);
    if (!fs.existsSync(file)) return [];
    try {
      const m = JSON.parse(fs.readFileSync(file, 'utf8')) as { backups?: BackupEntry[] };
      return Array.isArray(m.backups) ? m.backups : [];
    } catch (e) {
      this.ctx.log.warn('the backup manifest does not parse; it lists no backups until rewritten', { error: errorMessage(e) });
      return [];
    }
  }

  private write(entries: BackupEntry[]): void {
    writeFileDurably(path.join(this.folder(), MANIFEST), JSON.stringify({ backups: entries }, null, 2) + '\n');
  }

  /** Newest first. */
  list(): BackupEntry[] {
    return this.read().sort((a, b) => (a.timestamp < b.timestamp ? 1 : a.timestamp > b.timestamp ? -1 : b.path.localeCompare(a.path)));
  }

  /** A free file name `<db stem><suffix>-<YYYYMMDD-HHMMSS>[-n].duckdb` in the backups folder. */
  private freeName(suffix: string, at: Date): string {
    const stem = path.basename(this.databaseFile()).replace(/\.[^.]*$/, '') || 'database';
    const base = `${stem}${suffix}-${stamp(at)}`;
    let name = `${base}.duckdb`;
    for (let i = 2; fs.existsSync(path.join(this.folder(), name)); i++) name = `${base}-${i}.duckdb`;
    return name;
  }

  /**
   * The absolute path of a backup a caller names (`_backups/x.duckdb`, relative to the project, or
   * absolute), refused with 400 unless it lies inside `_backups/`, then 404 unless the manifest lists it.
   */
  resolve(requested: unknown): { abs: string; entry: BackupEntry } {
    if (typeof requested !== 'string' || requested.length === 0) throw badRequest('backup_path_outside', "'path' must name a backup in _backups/", {});
    const folder = this.folder();
    // Echoed project-relative: an answer never carries the machine's folders.
    const requestedAbs = path.resolve(this.ctx.project.root, requested);
    const fromRoot = path.relative(this.ctx.project.root, requestedAbs);
    const shown = fromRoot.startsWith('..') || path.isAbsolute(fromRoot) ? '(a path outside the project)' : fromRoot.split(path.sep).join('/');
    const abs = insideFolder(folder, requestedAbs, 'backup_path_outside', `Backup path '${shown}'`, shown);
    if (path.dirname(abs) !== folder || path.basename(abs) === MANIFEST) throw badRequest('backup_path_outside', `Backup path '${shown}' is not a backup file directly in ${BACKUPS_DIR}/`, { path: shown });
    const rel = `${BACKUPS_DIR}/${path.basename(abs)}`;
    const entry = this.read().find((e) => e.path === rel);
    if (!entry) throw notFound('backup_not_found', `No backup '${rel}' in the backup manifest`, { path: rel });
    return { abs, entry };
  }

  async create(options: { note?: string | null; keep?: number; no_verify?: boolean; progress?: (text: string) => void } = {}): Promise<BackupEntry & { verified: boolean | null }> {
    if (options.keep !== undefined) checkKeep(options.keep);
    const dbFile = this.databaseFile();
    const folder = this.folder();
    const progress = options.progress ?? (() => {});
    const entry = await this.ctx.db.exclusive(async () => {
      progress('checkpoint: flushing the write-ahead log');
      await this.ctx.db.checkpoint();
      const at = new Date();
      const name = this.freeName('', at);
      const tmp = path.join(folder, `.${name}.${process.pid}.tmp`);
      progress(`copying ${path.basename(dbFile)} to ${BACKUPS_DIR}/${name}`);
      try {
        const { sha256, size } = await copyHashed(dbFile, tmp);
        fs.renameSync(tmp, path.join(folder, name));
        fsyncPath(folder);
        return { path: `${BACKUPS_DIR}/${name}`, size_bytes: size, sha256, timestamp: at.toISOString(), note: options.note ?? null, kind: 'manual' as const };
      } catch (e) {
        fs.rmSync(tmp, { force: true });
        throw e;
      }
    });
    await this.serial(async () => this.write([...this.read(), entry]));
    let verified: boolean | null = null;
    if (!options.no_verify) {
      progress('verifying: re-hashing the copy and opening it read-only');
      const v = await this.verify(entry.path);
      if (!v.valid) throw conflict('backup_verify_failed', `The new backup ${entry.path} failed verification: ${v.error}`, { ...v });
      verified = true;
    }
    if (options.keep !== undefined) await this.cleanup(options.keep);
    progress(`backup ${entry.path}: ${entry.size_bytes} bytes, sha256 ${entry.sha256}`);
    return { ...entry, verified };
  }

  async verify(requested: unknown): Promise<VerifyResult> {
    const { abs, entry } = this.resolve(requested);
    const out: VerifyResult = { path: entry.path, valid: false, checksum_ok: false, opens: false, expected_sha256: entry.sha256, actual_sha256: null, tables: null, error: null };
    if (!fs.existsSync(abs)) return { ...out, error: 'the file is missing' };
    out.actual_sha256 = await hashFile(abs);
    out.checksum_ok = out.actual_sha256 === entry.sha256;
    if (!out.checksum_ok) return { ...out, error: 'the SHA-256 of the file differs from the one stored when it was made' };
    try {
      out.tables = (await this.ctx.db.inspectFile(abs)).tables.length;
      out.opens = true;
    } catch (e) {
      return { ...out, error: errorMessage(e) };
    }
    return { ...out, valid: true };
  }

  /**
   * Replaces the database with a verified backup through the kernel's maintenance. The replaced
   * file is kept in `_backups/` (kind `pre-restore`), so a restore can itself be undone.
   */
  async restore(requested: unknown, progress: (text: string) => void = () => {}): Promise<BackupRestoreResult> {
    const { abs, entry } = this.resolve(requested);
    progress(`verifying ${entry.path}`);
    const v = await this.verify(entry.path);
    if (!v.valid) throw conflict('backup_verify_failed', `Backup ${entry.path} failed verification and was not restored: ${v.error}`, { ...v });
    const folder = this.folder();
    progress('maintenance: waiting for in-flight work, closing the database');
    const replaced = await this.ctx.maintenance(`restoring backup ${entry.path}`, async ({ path: dbFile }) => {
      const at = new Date();
      const keptName = this.freeName('-pre-restore', at);
      const kept = path.join(folder, keptName);
      const staged = path.join(path.dirname(dbFile), `.${path.basename(dbFile)}.restore.tmp`);
      const { sha256 } = await copyHashed(abs, staged);
      if (sha256 !== entry.sha256) {
        fs.rmSync(staged, { force: true });
        throw conflict('backup_verify_failed', `Backup ${entry.path} changed while it was being restored; nothing was replaced`, { path: entry.path });
      }
      // The current file becomes a backup of its own (a copy when it lives on another device).
      let keptInfo: { sha256: string; size: number };
      try {
        keptInfo = await copyHashed(dbFile, kept);
      } catch (e) {
        fs.rmSync(staged, { force: true });
        fs.rmSync(kept, { force: true });
        throw e;
      }
      fs.renameSync(staged, dbFile);
      fsyncPath(path.dirname(dbFile));
      // A WAL left beside the old file belongs to it, not to the restored one.
      const wal = `${dbFile}.wal`;
      if (fs.existsSync(wal)) fs.renameSync(wal, `${kept}.wal`);
      progress(`restored ${entry.path}; the replaced file is ${BACKUPS_DIR}/${keptName}`);
      return { path: `${BACKUPS_DIR}/${keptName}`, size_bytes: keptInfo.size, sha256: keptInfo.sha256, timestamp: at.toISOString(), note: `replaced by ${entry.path}`, kind: 'pre-restore' as const };
    });
    await this.serial(async () => this.write([...this.read(), replaced]));
    return { restored: entry.path, sha256: entry.sha256, replaced_backup: replaced };
  }

  /** Deletes all but the newest `keep` backups (each path checked inside `_backups/` first). */
  cleanup(keep: unknown): Promise<{ deleted: string[]; kept: number }> {
    const n = checkKeep(keep);
    return this.serial(async () => {
      const all = this.list();
      const drop = all.slice(n);
      const folder = this.folder();
      const files = drop.map((e) => insideFolder(folder, path.basename(e.path), 'backup_path_outside', `Backup path '${e.path}'`));
      for (const f of files) {
        fs.rmSync(f, { force: true });
        fs.rmSync(`${f}.wal`, { force: true });
      }
      const gone = new Set(drop.map((e) => e.path));
      this.write(this.read().filter((e) => !gone.has(e.path)));
      return { deleted: drop.map((e) => e.path), kept: all.length - drop.length };
    });
  }
}
