/**
 * Versions: full copies of every user table as Parquet, one file per table plus `_manifest.json`
 * in `_snapshots/<version_id>/`, with a record in `_service.version_history`.
 *
 * Crash safety: a version is written into a hidden temporary folder (`.tmp-<id>-<pid>`), its
 * files and manifest synced, recorded in `_service.version_history`, and only then renamed to
 * `<version_id>` (one atomic rename). A process killed before the rename leaves a temporary
 * folder (and maybe a record without its folder), which the next start removes. Either way a
 * version lists complete or not at all. All tables are read in one transaction, so a version is
 * one consistent state of the warehouse.
 *
 * Trust: the record in `_service` is the only description a restore or a diff believes. It holds
 * each table's columns, key, file name and the SHA-256 of its Parquet file; the `_manifest.json`
 * on disk is for people and is never read back. A folder in `_snapshots/` without a record (put
 * there by git, a copied project, a script) is not listed and cannot be restored, and a file whose
 * bytes differ from the recorded SHA-256 is refused. A restore builds tables from the recorded
 * columns, never from SQL text.
 */
import fs from 'node:fs';
import path from 'node:path';
import { badRequest, conflict, errorMessage, noSpaceLeft, notFound, qualified, quoteIdent, quoteLiteral, WAREHOUSE_TARGET_SERVICE, type DbConnection, type FireableHook, type PluginContext, type TABLES_RESTORED, type TablesRestoredContext } from '../../sdk/index.js';
import type { ColumnInfo, RestoreResult, RestoreTableResult, TimelineEntry, VersionDetail, VersionRecord } from './api-types.js';
import { columnsHash, matchTable, userTables, type TableInfo } from './catalog.js';
import { assertVersionId, fsyncPath, hashFile, insideFolder, ownFolder, SNAPSHOTS_DIR, stamp, VERSION_ID, withoutRoot, writeFileDurably } from './paths.js';

export const VERSION_MIGRATIONS = [
  {
    id: 'versioning-001',
    sql: `CREATE TABLE IF NOT EXISTS _service.version_history (
     version_id VARCHAR PRIMARY KEY,
     number INTEGER NOT NULL,
     created_at VARCHAR NOT NULL,
     description VARCHAR,
     trigger VARCHAR NOT NULL,
     table_count INTEGER NOT NULL,
     total_rows BIGINT NOT NULL,
     size_bytes BIGINT NOT NULL,
     tables JSON NOT NULL
   )`,
  },
];

export type VersionTrigger = 'manual' | 'restore' | 'pipeline';

/** One table of a version (in `_manifest.json` and the record's `tables`). */
export interface VersionTable {
  table: string;
  schema: string;
  name: string;
  /** The Parquet file, relative to the version folder. */
  file: string;
  row_count: number;
  columns: ColumnInfo[];
  key: string[];
  bytes: number;
  /** SHA-256 of the Parquet file as written: a restore or diff reads only a file that still matches. */
  sha256?: string;
}

export interface VersionManifest {
  format: 1;
  version_id: string;
  number: number;
  created_at: string;
  description: string | null;
  trigger: VersionTrigger;
  total_rows: number;
  size_bytes: number;
  tables: VersionTable[];
}

export interface CreateOptions {
  description?: string | null;
  trigger?: VersionTrigger;
  /** Called after each table is written. */
  onTable?: (table: string, rows: number, index: number, total: number) => void;
}

const MANIFEST = '_manifest.json';
const TMP_PREFIX = '.tmp-';

/** A file name for a table: its name with anything outside [A-Za-z0-9_.-] replaced (never a path). */
function fileNameFor(t: TableInfo, taken: Set<string>): string {
  const safe = `${t.schema}.${t.name}`.replace(/[^A-Za-z0-9_.-]/g, '_').replace(/^\.+/, '_');
  let name = `${safe}.parquet`;
  for (let i = 2; taken.has(name.toLowerCase()); i++) name = `${safe}_${i}.parquet`;
  taken.add(name.toLowerCase());
  return name;
}

export interface RecordRow {
  version_id: string;
  number: number;
  created_at: string;
  description: string | null;
  trigger: string;
  table_count: number;
  total_rows: number | bigint;
  size_bytes: number | bigint;
  tables: string | VersionTable[];
}

function toRecord(r: RecordRow): VersionRecord {
  return {
    version_id: r.version_id,
    created_at: r.created_at,
    description: r.description,
    trigger: r.trigger,
    table_count: Number(r.table_count),
    total_rows: Number(r.total_rows),
    size_bytes: Number(r.size_bytes),
  };
}

function tablesOf(r: RecordRow): VersionTable[] {
  return typeof r.tables === 'string' ? (JSON.parse(r.tables) as VersionTable[]) : r.tables;
}

export class VersionStore {
  /** Creates, deletes and cleanups of this process run one at a time (version numbers stay unique). */
  private queue: Promise<unknown> = Promise.resolve();

  /**
   * @param compression Parquet compression of version files (`versioning.compression`).
   * @param tablesRestored The `tablesRestored` hook, fired after a restore replaced tables.
   */
  constructor(
    private readonly ctx: PluginContext,
    private readonly compression: string,
    private readonly tablesRestored: FireableHook<typeof TABLES_RESTORED>,
  ) {}

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.queue.then(fn, fn);
    this.queue = next.catch(() => undefined);
    return next;
  }

  /** `_snapshots/`, created when missing (real path). */
  folder(): string {
    return ownFolder(this.ctx.project, SNAPSHOTS_DIR);
  }

  private versionFolder(id: string): string {
    assertVersionId(id);
    return insideFolder(this.folder(), id, 'version_path_outside', `Version folder ${id}`);
  }

  // ------------------------------------------------------------------ create

  create(options: CreateOptions = {}): Promise<VersionRecord> {
    return this.serial(() => this.createNow(options));
  }

  private async nextNumber(): Promise<number> {
    const fromRecords = Number((await this.ctx.db.value<number>('SELECT max(number) FROM _service.version_history')) ?? 0);
    let fromFolders = 0;
    for (const name of fs.readdirSync(this.folder())) {
      const m = /^(?:\.tmp-)?v(\d+)-/.exec(name);
      if (m) fromFolders = Math.max(fromFolders, Number(m[1]));
    }
    return Math.max(fromRecords, fromFolders) + 1;
  }

  private async createNow(options: CreateOptions): Promise<VersionRecord> {
    this.ctx.services.find(WAREHOUSE_TARGET_SERVICE)?.assertLocalOnly('Versions');
    const folder = this.folder();
    const at = new Date();
    const number = await this.nextNumber();
    const id = `v${number}-${stamp(at)}`;
    const tmp = path.join(folder, `${TMP_PREFIX}${id}-${process.pid}`);
    fs.mkdirSync(tmp);
    const compression = this.compression;
    let recorded = false;
    try {
      const tables = await this.ctx.db.withConnection((c) =>
        c.transaction(async (tx) => {
          const infos = await userTables(tx);
          const taken = new Set<string>();
          const out: VersionTable[] = [];
          for (const [i, t] of infos.entries()) {
            const file = fileNameFor(t, taken);
            const target = path.join(tmp, file);
            // COPY answers the number of rows it wrote: no second scan to count them.
            const written = await tx.value<number | bigint>(
              `COPY (SELECT * FROM ${qualified(t.schema, t.name)}) TO ${quoteLiteral(target)} (FORMAT parquet, COMPRESSION ${compression})`,
            );
            const rows = Number(written ?? 0);
            out.push({ table: t.table, schema: t.schema, name: t.name, file, row_count: rows, columns: t.columns, key: t.key, bytes: 0 });
            options.onTable?.(t.table, rows, i + 1, infos.length);
          }
          return out;
        }),
      );
      // Durable before the rename makes the version exist; the files are synced (and hashed) side by side.
      await Promise.all(
        tables.map(async (t) => {
          const file = path.join(tmp, t.file);
          const handle = await fs.promises.open(file, 'r');
          try {
            t.bytes = (await handle.stat()).size;
            await handle.sync();
          } finally {
            await handle.close();
          }
          t.sha256 = await hashFile(file);
        }),
      );
      const manifest: VersionManifest = {
        format: 1,
        version_id: id,
        number,
        created_at: at.toISOString(),
        description: options.description ?? null,
        trigger: options.trigger ?? 'manual',
        total_rows: tables.reduce((s, t) => s + t.row_count, 0),
        size_bytes: tables.reduce((s, t) => s + t.bytes, 0),
        tables,
      };
      writeFileDurably(path.join(tmp, MANIFEST), JSON.stringify(manifest, null, 2) + '\n');
      fsyncPath(tmp);
      // Recorded before the folder takes its name: every version folder dp made has a record, so
      // a folder without one was not written by this database and is never trusted.
      await this.record(manifest);
      recorded = true;
      // The one step that makes the version exist: the folder appears complete or not at all.
      fs.renameSync(tmp, path.join(folder, id));
      fsyncPath(folder);
      return this.recordOf(manifest);
    } catch (e) {
      fs.rmSync(tmp, { recursive: true, force: true });
      if (recorded) await this.ctx.db.run('DELETE FROM _service.version_history WHERE version_id = $1', [id]).catch(() => undefined);
      throw noSpaceLeft(e, `version ${id}`) ?? e;
    }
  }

  private recordOf(m: VersionManifest): VersionRecord {
    return {
      version_id: m.version_id,
      created_at: m.created_at,
      description: m.description,
      trigger: m.trigger,
      table_count: m.tables.length,
      total_rows: m.total_rows,
      size_bytes: m.size_bytes,
    };
  }

  private async record(m: VersionManifest, c?: DbConnection): Promise<void> {
    const db = c ?? this.ctx.db;
    await db.run(
      `INSERT INTO _service.version_history (version_id, number, created_at, description, trigger, table_count, total_rows, size_bytes, tables)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::JSON)`,
      [m.version_id, m.number, m.created_at, m.description, m.trigger, m.tables.length, m.total_rows, m.size_bytes, JSON.stringify(m.tables)],
    );
  }

  // ------------------------------------------------------------------ read

  async list(): Promise<VersionRecord[]> {
    const rows = await this.ctx.db.all<RecordRow>('SELECT * EXCLUDE (tables), \'[]\' AS tables FROM _service.version_history ORDER BY number DESC');
    return rows.map(toRecord);
  }

  private async row(id: string): Promise<RecordRow> {
    assertVersionId(id);
    const [r] = await this.ctx.db.all<RecordRow>('SELECT * FROM _service.version_history WHERE version_id = $1', [id]);
    if (!r) throw notFound('version_not_found', `No version '${id}'`, { version_id: id });
    return r;
  }

  /** The record with each table's row count and columns. */
  async show(id: string): Promise<VersionDetail> {
    const r = await this.row(id);
    return { ...toRecord(r), tables: tablesOf(r).map((t) => ({ table: t.table, row_count: t.row_count, columns: t.columns, key: t.key, bytes: t.bytes })) };
  }

  /**
   * What dp recorded about a version when it wrote it (`_service.version_history`), with the
   * absolute path of each table's Parquet file. Nothing is taken from the folder but the data
   * files, and each is checked: a plain, visible file directly in the version's folder (400
   * `version_path_outside`), present (409 `version_incomplete`) and with the bytes whose SHA-256
   * was recorded (409 `version_not_trusted`).
   */
  async manifest(id: string): Promise<{ manifest: VersionManifest; files: Map<string, string> }> {
    const r = await this.row(id);
    const dir = this.versionFolder(id);
    if (fs.existsSync(dir) && fs.lstatSync(dir).isSymbolicLink()) {
      throw badRequest('version_path_outside', `Version folder ${id} is a link; it is not followed`, { version_id: id });
    }
    const tables = tablesOf(r);
    const manifest: VersionManifest = {
      format: 1,
      version_id: r.version_id,
      number: Number(r.number),
      created_at: r.created_at,
      description: r.description,
      trigger: r.trigger as VersionTrigger,
      total_rows: Number(r.total_rows),
      size_bytes: Number(r.size_bytes),
      tables,
    };
    const files = new Map<string, string>();
    for (const t of tables) {
      const name = String(t.file);
      if (name.startsWith('.') || name !== path.basename(name)) throw badRequest('version_path_outside', `File '${name}' of version ${id} is not a visible file directly in its folder`, { path: name });
      const abs = insideFolder(dir, name, 'version_path_outside', `File '${name}' of version ${id}`);
      if (!fs.existsSync(abs)) throw conflict('version_incomplete', `Version ${id} lacks its file ${name}`, { version_id: id, file: name });
      const stat = fs.lstatSync(abs);
      if (!stat.isFile()) throw badRequest('version_path_outside', `File '${name}' of version ${id} is not a plain file`, { path: name });
      if (!t.sha256) throw conflict('version_not_trusted', `Version ${id} was recorded without checksums (before dp checked them): create a new version instead`, { version_id: id });
      if ((await this.checkedHash(abs, stat)) !== t.sha256) {
        throw conflict('version_not_trusted', `File ${name} of version ${id} is not the one dp wrote (its SHA-256 differs): it is not read`, { version_id: id, file: name });
      }
      files.set(t.table, abs);
    }
    return { manifest, files };
  }

  /** Hashes already checked, by file, size and mtime: a diff after a diff does not re-read every file. */
  private hashes = new Map<string, { size: number; mtimeMs: number; sha256: string }>();

  private async checkedHash(file: string, stat: fs.Stats): Promise<string> {
    const known = this.hashes.get(file);
    if (known && known.size === stat.size && known.mtimeMs === stat.mtimeMs) return known.sha256;
    const sha256 = await hashFile(file);
    this.hashes.set(file, { size: stat.size, mtimeMs: stat.mtimeMs, sha256 });
    return sha256;
  }

  /** Newest first: each version holding the table, with its row count and columns there. */
  async timeline(tableName: string): Promise<TimelineEntry[]> {
    const rows = await this.ctx.db.all<RecordRow>('SELECT * FROM _service.version_history ORDER BY number DESC');
    const names = [...new Set(rows.flatMap((r) => tablesOf(r).map((t) => t.table)))];
    const candidates = names.filter((n) => n.slice(n.indexOf('.') + 1) === tableName);
    if (!names.includes(tableName) && candidates.length > 1) {
      throw badRequest('ambiguous_table', `'${tableName}' names tables in several schemas (${candidates.join(', ')}): name one as schema.table`, { table: tableName, candidates });
    }
    const table = matchTable(tableName, names) ?? tableName;
    const out: TimelineEntry[] = [];
    for (const r of rows) {
      const t = tablesOf(r).find((x) => x.table === table);
      if (t) out.push({ version_id: r.version_id, created_at: r.created_at, row_count: t.row_count, columns: t.columns });
    }
    return out;
  }

  // ------------------------------------------------------------------ delete, cleanup

  delete(id: string): Promise<{ deleted: string }> {
    return this.serial(async () => {
      await this.row(id);
      await this.remove(id);
      return { deleted: id };
    });
  }

  /** The folder (checked inside _snapshots/, links included) and the record of one version. */
  private async remove(id: string): Promise<void> {
    const dir = this.versionFolder(id);
    if (fs.existsSync(dir) && fs.lstatSync(dir).isSymbolicLink()) {
      throw badRequest('version_path_outside', `Version folder ${id} is a link; it is not followed to delete`, { version_id: id });
    }
    fs.rmSync(dir, { recursive: true, force: true });
    await this.ctx.db.run('DELETE FROM _service.version_history WHERE version_id = $1', [id]);
  }

  cleanup(keep: unknown): Promise<{ deleted: string[]; kept: number }> {
    if (typeof keep !== 'number' || !Number.isInteger(keep) || keep < 1) throw badRequest('invalid_keep', "'keep' must be an integer of at least 1", { keep });
    return this.serial(async () => {
      const all = await this.list();
      const drop = all.slice(keep);
      // Every path is checked before anything is deleted.
      for (const v of drop) this.versionFolder(v.version_id);
      for (const v of drop) await this.remove(v.version_id);
      return { deleted: drop.map((v) => v.version_id), kept: all.length - drop.length };
    });
  }

  // ------------------------------------------------------------------ reconcile

  /**
   * At start: temporary folders of writes that never finished are removed, records whose folder
   * is gone (a process killed between the record and the rename, or a folder deleted by hand) are
   * dropped. A folder without a record is left where it is, unlisted: dp did not write it for
   * this database (or a backup from before it was restored), and its manifest is not believed.
   */
  async reconcile(): Promise<{ removedTemp: number; unrecorded: string[]; dropped: string[] }> {
    const folder = this.folder();
    let removedTemp = 0;
    const unrecorded: string[] = [];
    const dropped: string[] = [];
    const recorded = new Set((await this.ctx.db.all<{ version_id: string }>('SELECT version_id FROM _service.version_history')).map((r) => r.version_id));
    const present = new Set<string>();
    for (const name of fs.readdirSync(folder)) {
      const abs = path.join(folder, name);
      if (name.startsWith(TMP_PREFIX)) {
        fs.rmSync(abs, { recursive: true, force: true });
        removedTemp++;
        continue;
      }
      if (!VERSION_ID.test(name) || fs.lstatSync(abs).isSymbolicLink() || !fs.statSync(abs).isDirectory()) continue;
      present.add(name);
      if (!recorded.has(name)) unrecorded.push(name);
    }
    for (const id of recorded) {
      if (!present.has(id)) {
        await this.ctx.db.run('DELETE FROM _service.version_history WHERE version_id = $1', [id]);
        dropped.push(id);
      }
    }
    if (unrecorded.length) {
      this.ctx.log.warn(`version folders in ${SNAPSHOTS_DIR}/ that this database did not record are not listed and cannot be restored`, { folders: unrecorded });
    }
    if (removedTemp || dropped.length) this.ctx.log.info('versions reconciled with _snapshots/', { removed_temp: removedTemp, dropped });
    return { removedTemp, unrecorded, dropped };
  }

  /** Every record, as it is (a backup restore carries them over into the restored database). */
  async records(): Promise<RecordRow[]> {
    return this.ctx.db.all<RecordRow>('SELECT * FROM _service.version_history');
  }

  /**
   * After a backup restore: the records this process held before it, whose folders still exist,
   * are written back (the restored file knows only the versions made before the backup).
   */
  async carryOver(rows: RecordRow[]): Promise<string[]> {
    const folder = this.folder();
    const known = new Set((await this.records()).map((r) => r.version_id));
    const back: string[] = [];
    for (const r of rows) {
      if (known.has(r.version_id) || !VERSION_ID.test(r.version_id)) continue;
      const dir = path.join(folder, r.version_id);
      if (!fs.existsSync(dir) || fs.lstatSync(dir).isSymbolicLink()) continue;
      await this.ctx.db.run(
        `INSERT INTO _service.version_history (version_id, number, created_at, description, trigger, table_count, total_rows, size_bytes, tables)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9::JSON)`,
        [r.version_id, Number(r.number), r.created_at, r.description, r.trigger, Number(r.table_count), Number(r.total_rows), Number(r.size_bytes), JSON.stringify(tablesOf(r))],
      );
      back.push(r.version_id);
    }
    return back;
  }

  // ------------------------------------------------------------------ restore

  /**
   * Restores a version's tables (all, or those named). Unknown names are refused before anything
   * changes. Under the write lock: a version of the current data (trigger `restore`) is written
   * first, then each table is replaced in a transaction of its own, so a table that fails stays
   * as it was and reports `error` while the others are restored.
   */
  async restore(id: string, requested?: string[]): Promise<RestoreResult> {
    this.ctx.services.find(WAREHOUSE_TARGET_SERVICE)?.assertLocalOnly('Versions');
    const { manifest, files } = await this.manifest(id);
    const names = manifest.tables.map((t) => t.table);
    let selected = manifest.tables;
    if (requested && requested.length) {
      const chosen = new Set<string>();
      for (const r of requested) {
        const m = matchTable(r, names);
        if (!m) throw badRequest('table_not_in_version', `Version ${id} has no table '${r}'`, { version_id: id, table: r, tables: names });
        chosen.add(m);
      }
      selected = manifest.tables.filter((t) => chosen.has(t.table));
    }
    return this.ctx.db.exclusive(async () => {
      const safety = await this.create({ trigger: 'restore', description: `before restoring ${id}` });
      const current = new Map((await userTables(this.ctx.db)).map((t) => [t.table, t]));
      const results: RestoreTableResult[] = [];
      for (const t of selected) {
        try {
          const rows = await this.restoreTable(t, files.get(t.table)!, current.get(t.table));
          results.push({ table: t.table, status: 'success', rows });
        } catch (e) {
          results.push({ table: t.table, status: 'error', error: withoutRoot(errorMessage(e), this.ctx.project.root) });
        }
      }
      if (!requested?.length) {
        for (const name of current.keys()) if (!names.includes(name)) results.push({ table: name, status: 'skipped', reason: `not in version ${id}; left as it is` });
      }
      // State other plugins keep about these tables (sync watermarks, build hashes) described the
      // rows just replaced: they bring it in line and say what they did.
      const restored: TablesRestoredContext = { source: `version ${id}`, tables: results.filter((r) => r.status === 'success').map((r) => r.table), notes: [] };
      if (restored.tables.length && this.tablesRestored.isUsed()) {
        try {
          await this.tablesRestored.promise(restored);
        } catch (e) {
          restored.notes.push({ table: '*', plugin: 'versioning', message: `a plugin failed to bring its state in line with the restore: ${withoutRoot(errorMessage(e), this.ctx.project.root)}` });
        }
      }
      return {
        version_id: id,
        restore_version: safety.version_id,
        status: results.some((r) => r.status === 'error') ? 'error' : 'success',
        tables: results,
        notes: restored.notes,
      };
    });
  }

  private async restoreTable(t: VersionTable, file: string, now: TableInfo | undefined): Promise<number> {
    if (PROTECTED_SCHEMAS.has(t.schema.toLowerCase())) throw new Error(`${t.table}: a restore never writes into the ${t.schema} schema`);
    const target = qualified(t.schema, t.name);
    return this.ctx.db.withConnection((c) =>
      c.transaction(async (tx) => {
        if (now && columnsHash(now.columns) === columnsHash(t.columns)) {
          // Same columns: the table (its constraints, defaults, dependants) stays; only rows change.
          await tx.run(`DELETE FROM ${target}`);
        } else {
          await tx.run(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(t.schema)}`);
          if (now) await tx.run(`DROP TABLE ${target}`);
          // Built from the columns dp recorded, never from SQL text: names are quoted, each type is
          // one DuckDB type name, and the statement is checked to be one CREATE TABLE.
          const create = createTableSql(t);
          if ((await tx.countStatements(create)) !== 1) throw new Error(`${t.table}: the recorded columns do not make one CREATE TABLE statement`);
          await tx.run(create);
        }
        await tx.run(`INSERT INTO ${target} SELECT ${t.columns.map((col) => quoteIdent(col.name)).join(', ')} FROM read_parquet(${quoteLiteral(file)})`);
        const n = Number(await tx.value(`SELECT count(*) FROM ${target}`));
        if (n !== t.row_count) throw new Error(`${t.table}: ${n} rows after the restore, the version holds ${t.row_count}`);
        return n;
      }),
    );
  }
}

/** Schemas a restore never writes into (dp's bookkeeping, the masking pads, the system catalogues). */
const PROTECTED_SCHEMAS = new Set(['_service', '_masking', 'information_schema', 'pg_catalog', 'main_internal']);
/** A DuckDB type as `duckdb_columns().data_type` writes it: no quotes that end a literal, no statement separators, no comments. */
const TYPE_TEXT = /^[A-Za-z][A-Za-z0-9_ ,()[\]."]*$/;

/** `CREATE TABLE` of a version's table from its recorded columns and key (the key as a UNIQUE constraint: NULLs allowed as before). */
export function createTableSql(t: VersionTable): string {
  if (PROTECTED_SCHEMAS.has(t.schema.toLowerCase())) throw new Error(`${t.table}: a restore never writes into the ${t.schema} schema`);
  if (!Array.isArray(t.columns) || t.columns.length === 0) throw new Error(`${t.table}: the version records no columns for it`);
  const cols = t.columns.map((c) => {
    if (!TYPE_TEXT.test(c.type) || c.type.includes('--')) throw new Error(`${t.table}: column '${c.name}' has the type '${c.type}', which is not a DuckDB type name`);
    return `${quoteIdent(c.name)} ${c.type}`;
  });
  const names = new Set(t.columns.map((c) => c.name));
  const key = (t.key ?? []).filter((k) => names.has(k));
  if (key.length) cols.push(`UNIQUE (${key.map(quoteIdent).join(', ')})`);
  return `CREATE TABLE ${qualified(t.schema, t.name)} (${cols.join(', ')})`;
}
