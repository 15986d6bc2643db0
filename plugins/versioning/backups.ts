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
 *
 * Trust: the list of backups, with each file's SHA-256, is `_service.backup_history`, written by
 * dp when it makes a copy. `_backups/manifest.json` is a mirror for people and is never read back:
 * a file dropped into `_backups/` (and named in a hand-edited manifest) is not a backup this
 * database made, so it is neither verified nor restored. A backup restore carries the records
 * of the replaced database over into the restored one.
 *
 * Kills: every copy is written under a hidden temporary name (`.<name>.<pid>.tmp`) and renamed
 * into place once complete; the next start removes temporary files left in `_backups/` and beside
 * the database file, and drops records whose file is gone.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { Transform } from 'node:stream';
import { badRequest, conflict, errorMessage, notFound, type PluginContext, WAREHOUSE_TARGET_SERVICE } from '../../sdk/index.js';
import type { BackupEntry, BackupRestoreResult, VerifyResult } from './api-types.js';
import { BACKUPS_DIR, fsyncPath, hashFile, insideFolder, noSpaceOr, ownFolder, stamp, writeFileDurably } from './paths.js';
import type { VersionStore } from './versions.js';

const MANIFEST = 'manifest.json';
/** Hidden temporary names of copies being written: `.<final name>.<pid>.tmp`, `.<db file>.restore.tmp`. */
const TEMP_FILE = /^\..+\.tmp$/;

export const BACKUP_MIGRATIONS = [
  {
    id: 'versioning-003',
    sql: `CREATE TABLE IF NOT EXISTS _service.backup_history (
     path VARCHAR PRIMARY KEY,
     size_bytes BIGINT NOT NULL,
     sha256 VARCHAR NOT NULL,
     timestamp VARCHAR NOT NULL,
     note VARCHAR,
     kind VARCHAR NOT NULL
   )`,
  },
];

interface BackupRow {
  path: string;
  size_bytes: number | bigint;
  sha256: string;
  timestamp: string;
  note: string | null;
  kind: string;
}

const toEntry = (r: BackupRow): BackupEntry => ({
  path: r.path,
  size_bytes: Number(r.size_bytes),
  sha256: r.sha256,
  timestamp: r.timestamp,
  note: r.note,
  kind: r.kind === 'pre-restore' ? 'pre-restore' : 'manual',
});

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

  constructor(
    private readonly ctx: PluginContext,
    private readonly versions: Pick<VersionStore, 'records' | 'carryOver'>,
  ) {}

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

  /** The backups this database recorded (the only ones it verifies or restores). */
  private async read(): Promise<BackupEntry[]> {
    return (await this.ctx.db.all<BackupRow>('SELECT path, size_bytes, sha256, timestamp, note, kind FROM _service.backup_history')).map(toEntry);
  }

  private async add(entry: BackupEntry): Promise<void> {
    await this.ctx.db.run('INSERT OR REPLACE INTO _service.backup_history VALUES ($1, $2, $3, $4, $5, $6)', [
      entry.path,
      entry.size_bytes,
      entry.sha256,
      entry.timestamp,
      entry.note,
      entry.kind,
    ]);
  }

  /** `_backups/manifest.json`, rewritten from the records after each change (for people; never read back). */
  private async mirror(): Promise<void> {
    writeFileDurably(path.join(this.folder(), MANIFEST), JSON.stringify({ backups: await this.list() }, null, 2) + '\n');
  }

  /** Newest first. */
  async list(): Promise<BackupEntry[]> {
    return (await this.read()).sort((a, b) => (a.timestamp < b.timestamp ? 1 : a.timestamp > b.timestamp ? -1 : b.path.localeCompare(a.path)));
  }

  /**
   * At start: temporary copies a killed backup or restore left (in `_backups/` and beside the
   * database file) are removed, and records whose file is gone are dropped; the mirror follows.
   */
  async sweep(): Promise<{ removed: string[]; dropped: string[] }> {
    const folder = this.folder();
    const removed: string[] = [];
    const places: Array<[string, (name: string) => boolean]> = [[folder, (n) => TEMP_FILE.test(n)]];
    if (this.ctx.db.path !== ':memory:') {
      const db = path.basename(this.ctx.db.path);
      places.push([path.dirname(this.ctx.db.path), (n) => n.startsWith(`.${db}.`) && n.endsWith('.tmp')]);
    }
    for (const [dir, isTemp] of places) {
      for (const name of fs.readdirSync(dir)) {
        if (!isTemp(name)) continue;
        const abs = path.join(dir, name);
        if (!fs.lstatSync(abs).isFile()) continue;
        fs.rmSync(abs, { force: true });
        removed.push(name);
      }
    }
    const dropped: string[] = [];
    for (const e of await this.read()) {
      if (fs.existsSync(path.join(folder, path.basename(e.path)))) continue;
      await this.ctx.db.run('DELETE FROM _service.backup_history WHERE path = $1', [e.path]);
      dropped.push(e.path);
    }
    const untrusted = fs.readdirSync(folder).filter((n) => n.endsWith('.duckdb'));
    const recorded = new Set((await this.read()).map((e) => path.basename(e.path)));
    const strangers = untrusted.filter((n) => !recorded.has(n));
    if (strangers.length) this.ctx.log.warn(`files in ${BACKUPS_DIR}/ that this database did not record as backups are not listed and cannot be restored`, { files: strangers });
    if (removed.length || dropped.length || fs.existsSync(path.join(folder, MANIFEST))) await this.mirror();
    if (removed.length || dropped.length) this.ctx.log.info('backups swept at start', { removed_temp: removed, dropped });
    return { removed, dropped };
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
  async resolve(requested: unknown): Promise<{ abs: string; entry: BackupEntry }> {
    if (typeof requested !== 'string' || requested.length === 0) throw badRequest('backup_path_outside', "'path' must name a backup in _backups/", {});
    const folder = this.folder();
    // Echoed project-relative: an answer never carries the machine's folders.
    const requestedAbs = path.resolve(this.ctx.project.root, requested);
    const fromRoot = path.relative(this.ctx.project.root, requestedAbs);
    const shown = fromRoot.startsWith('..') || path.isAbsolute(fromRoot) ? '(a path outside the project)' : fromRoot.split(path.sep).join('/');
    const abs = insideFolder(folder, requestedAbs, 'backup_path_outside', `Backup path '${shown}'`, shown);
    if (path.dirname(abs) !== folder || path.basename(abs) === MANIFEST) throw badRequest('backup_path_outside', `Backup path '${shown}' is not a backup file directly in ${BACKUPS_DIR}/`, { path: shown });
    const rel = `${BACKUPS_DIR}/${path.basename(abs)}`;
    const entry = (await this.read()).find((e) => e.path === rel);
    if (!entry) throw notFound('backup_not_found', `No backup '${rel}' recorded by this database (a file dp did not make here is never restored)`, { path: rel });
    return { abs, entry };
  }

  async create(options: { note?: string | null; keep?: number; no_verify?: boolean; progress?: (text: string) => void } = {}): Promise<BackupEntry & { verified: boolean | null }> {
    this.ctx.services.find(WAREHOUSE_TARGET_SERVICE)?.assertLocalOnly('Backups');
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
        throw noSpaceOr(e);
      }
    });
    await this.serial(async () => {
      await this.add(entry);
      await this.mirror();
    });
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
    const { abs, entry } = await this.resolve(requested);
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
    this.ctx.services.find(WAREHOUSE_TARGET_SERVICE)?.assertLocalOnly('Backups');
    const { abs, entry } = await this.resolve(requested);
    progress(`verifying ${entry.path}`);
    const v = await this.verify(entry.path);
    if (!v.valid) throw conflict('backup_verify_failed', `Backup ${entry.path} failed verification and was not restored: ${v.error}`, { ...v });
    const folder = this.folder();
    // The restored file knows only what was recorded before it was made: the records of this
    // database (backups, versions) are carried over into it afterwards.
    const heldBackups = await this.read();
    const heldVersions = await this.versions.records();
    progress('maintenance: waiting for in-flight work, closing the database');
    const replaced = await this.ctx.maintenance(`restoring backup ${entry.path}`, async ({ path: dbFile }) => {
      const at = new Date();
      const keptName = this.freeName('-pre-restore', at);
      const kept = path.join(folder, keptName);
      const staged = path.join(path.dirname(dbFile), `.${path.basename(dbFile)}.restore.tmp`);
      let sha256: string;
      try {
        ({ sha256 } = await copyHashed(abs, staged));
      } catch (e) {
        fs.rmSync(staged, { force: true });
        throw noSpaceOr(e);
      }
      if (sha256 !== entry.sha256) {
        fs.rmSync(staged, { force: true });
        throw conflict('backup_verify_failed', `Backup ${entry.path} changed while it was being restored; nothing was replaced`, { path: entry.path });
      }
      // The current file becomes a backup of its own (a copy when it lives on another device),
      // written under a temporary name and renamed once complete: a kill never leaves a truncated
      // copy under a backup's name.
      const keptTmp = path.join(folder, `.${keptName}.${process.pid}.tmp`);
      let keptInfo: { sha256: string; size: number };
      try {
        keptInfo = await copyHashed(dbFile, keptTmp);
        fs.renameSync(keptTmp, kept);
        fsyncPath(folder);
      } catch (e) {
        fs.rmSync(staged, { force: true });
        fs.rmSync(keptTmp, { force: true });
        throw noSpaceOr(e);
      }
      fs.renameSync(staged, dbFile);
      fsyncPath(path.dirname(dbFile));
      // A WAL left beside the old file belongs to it, not to the restored one.
      const wal = `${dbFile}.wal`;
      if (fs.existsSync(wal)) fs.renameSync(wal, `${kept}.wal`);
      progress(`restored ${entry.path}; the replaced file is ${BACKUPS_DIR}/${keptName}`);
      return { path: `${BACKUPS_DIR}/${keptName}`, size_bytes: keptInfo.size, sha256: keptInfo.sha256, timestamp: at.toISOString(), note: `replaced by ${entry.path}`, kind: 'pre-restore' as const };
    });
    await this.serial(async () => {
      const present = new Set((await this.read()).map((e) => e.path));
      for (const e of heldBackups) if (!present.has(e.path) && fs.existsSync(path.join(folder, path.basename(e.path)))) await this.add(e);
      await this.add(replaced);
      await this.mirror();
    });
    await this.versions.carryOver(heldVersions);
    return { restored: entry.path, sha256: entry.sha256, replaced_backup: replaced };
  }

  /**
   * Keeps the newest `keep` of the user's own backups (kind `manual`) and the newest automatic
   * `pre-restore` copy (the undo of the last restore); deletes the rest, each path checked inside
   * `_backups/` first. Answers what it deleted and what it kept.
   */
  cleanup(keep: unknown): Promise<{ deleted: string[]; kept: number; kept_backups: string[] }> {
    const n = checkKeep(keep);
    return this.serial(async () => {
      const all = await this.list();
      const own = all.filter((e) => e.kind === 'manual').slice(0, n);
      const undo = all.find((e) => e.kind === 'pre-restore');
      const keeping = new Set([...own, ...(undo ? [undo] : [])].map((e) => e.path));
      const drop = all.filter((e) => !keeping.has(e.path));
      const folder = this.folder();
      const files = drop.map((e) => insideFolder(folder, path.basename(e.path), 'backup_path_outside', `Backup path '${e.path}'`));
      for (const [i, f] of files.entries()) {
        fs.rmSync(f, { force: true });
        fs.rmSync(`${f}.wal`, { force: true });
        await this.ctx.db.run('DELETE FROM _service.backup_history WHERE path = $1', [drop[i].path]);
      }
      await this.mirror();
      const kept = all.filter((e) => keeping.has(e.path)).map((e) => e.path);
      return { deleted: drop.map((e) => e.path), kept: kept.length, kept_backups: kept };
    });
  }
}
