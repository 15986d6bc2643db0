/** The kernel's DuckDB adapter behind the sdk's DatabasePort (docs/architecture.md). */
import path from 'node:path';
import type { DuckDBInstance } from '@duckdb/node-api';
import { duckdb } from './duckdb-api.js';
import {
  type BulkLoadResult,
  type BulkTarget,
  type BulkWriter,
  type DatabasePort,
  type DbConnection,
  type FileReadOptions,
  type ParsedSql,
  type Row,
  type ScratchOptions,
  type SerializedSql,
  type SqlParams,
  type TabularResult,
  writeTreeJson,
} from '../../sdk/db.js';
import { DpError, errorMessage } from '../../sdk/errors.js';
import { quoteIdent, quoteLiteral } from '../../sdk/sql.js';
import { CachedCatalog, type DbCatalog } from '../../sdk/db-catalog.js';
import { DuckCatalogSource } from '../db-catalog.js';
import { assertProjectFileReads } from '../file-reads.js';
import { WriteLock } from '../write-lock.js';
import { CatalogLookups, Connection, type WriteObserver } from './connection.js';
import { isLockConflict, lockedError, translateDbError } from './errors.js';
import { applySandbox, defaultMemoryLimit, type EngineSandbox } from './sandbox.js';

/**
 * JSON.parse of DuckDB's parse tree. DuckDB writes a DOUBLE constant out of range (`1e999`) as
 * a bare `Infinity` (`NaN`, `-Infinity`), which is not JSON: those values are read as null. A
 * constant's value is nothing a check depends on; the text itself runs unchanged.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
function readParseTree(json: string): any {
  try {
    return JSON.parse(json);
  } catch {
    return JSON.parse(json.replace(/"(?:[^"\\]|\\.)*"|-?Infinity|NaN/g, (m) => (m.startsWith('"') ? m : 'null')));
  }
}

/**
 * A parse as `DatabasePort.parse` answers it, from json_serialize_sql's text. A parse that
 * succeeded reads its tree on first use: a caller that needs only the text (discovery's
 * reference scan over thousands of models) never builds it.
 */
function parsedFromJson(json: string): ParsedSql {
  if (json.startsWith('{"error":false,')) {
    let tree: SerializedSql | undefined;
    const parsed = { ok: true as const, json } as Extract<ParsedSql, { ok: true }>;
    Object.defineProperty(parsed, 'tree', {
      enumerable: true,
      get: () => (tree ??= readParseTree(json) as SerializedSql),
      set: (value: SerializedSql) => (tree = value),
    });
    return parsed;
  }
  const tree = readParseTree(json);
  if (!tree.error) return { ok: true, tree: tree as SerializedSql, json };
  const error = String(tree.error_message ?? 'unparseable SQL');
  const position = Number(tree.position);
  return { ok: false, error, errorType: tree.error_type, notSelect: /only SELECT statements/i.test(error), ...(Number.isInteger(position) && position >= 0 ? { position } : {}) };
}

const PARSE_CACHE_MAX = 1000;
/** Texts per parseMany batch below which one batch is cheaper than several. */
const PARSE_BATCH_MIN = 500;
/** parseMany batches run at once (DuckDB connections busy with parsing). */
const PARSE_BATCHES = 4;
/** DuckDB's parser, prepared once per pooled connection like any repeated statement. */
const SERIALIZE_SQL = 'SELECT json_serialize_sql($1::VARCHAR)';

export interface DatabaseOptions {
  /** The engine's own file sandbox, applied and locked at open; null only for scratch databases in tests. */
  sandbox?: EngineSandbox | null;
  /** The write lock behind `exclusive` (the app shares one across the files it opens). */
  lock?: WriteLock;
  /** Told after each statement that is not a read (the app emits `catalog.changed`). */
  onWrite?: WriteObserver;
}

export interface DrainReport {
  /** Connections (and the streams on them) that were out when the drain began. */
  lent: number;
  /** Interrupted because they were still out at the deadline. */
  interrupted: number;
  /** Closed under their holder because they did not come back even after the interrupt. */
  forced: number;
}

/** How long an interrupted connection gets to come back before it is closed under its holder. */
const INTERRUPT_GRACE_MS = 1000;

/**
 * The kernel's DuckDB adapter: one instance per process, pooled connections. It knows every
 * connection it has lent (pooled ones while `withConnection` runs, own ones from `connect` until
 * closed, and with them the streams and appenders on them), so maintenance can drain them.
 */
export class DuckDatabase implements DatabasePort {
  private instance: DuckDBInstance | null = null;
  private idle: Connection[] = [];
  private readonly lent = new Set<Connection>();
  /** Set while draining or closed for maintenance: new work gets this error (503). */
  private refusal: DpError | null = null;
  private parseCache = new Map<string, ParsedSql>();
  private opening: Promise<DuckDBInstance> | null = null;
  private readonly lock: WriteLock;
  private readonly observer: WriteObserver;
  /** Catalog lookups shared by this database's connections, dropped on every write and reopen. */
  private readonly lookups = new CatalogLookups();
  /** The catalog port (sdk DbCatalog), its answers kept under the same version as the lookups. */
  readonly catalog: DbCatalog = new CachedCatalog(new DuckCatalogSource(this), () => this.catalogVersion);
  /** The engine's own file sandbox (see EngineSandbox). */
  private readonly sandbox: EngineSandbox | null;
  /** Runs before the file opens (e.g. creates its folder). */
  beforeOpen: (() => void) | null = null;
  /** Runs once right after the file opens (migrations, then the plugins' start phase). */
  onOpen: ((db: DuckDatabase) => Promise<void>) | null = null;

  constructor(
    readonly path: string,
    options: DatabaseOptions = {},
  ) {
    this.lock = options.lock ?? new WriteLock();
    const onWrite = options.onWrite;
    this.observer = (statement) => {
      this.lookups.invalidate();
      onWrite?.(statement);
    };
    this.sandbox = options.sandbox ?? null;
  }

  get isOpen(): boolean {
    return this.instance !== null;
  }

  /**
   * Changes whenever the catalog may have changed (every statement that is not a read, every
   * reopen): answers derived from the catalog (read-only validations) are kept under it.
   */
  get catalogVersion(): number {
    return this.lookups.version;
  }

  /** Connections out on loan right now. */
  get lentCount(): number {
    return this.lent.size;
  }

  /** Opens lazily, so CLI commands that never touch the database never lock it. */
  private async open(): Promise<DuckDBInstance> {
    if (this.refusal) throw this.refusal;
    if (this.instance) return this.instance;
    if (!this.opening) {
      this.opening = (async () => {
        let inst: DuckDBInstance | null = null;
        try {
          this.beforeOpen?.();
          inst = await duckdb.DuckDBInstance.create(this.path);
          await applySandbox(inst, this.sandbox);
          this.instance = inst;
          this.lookups.invalidate();
          if (this.onOpen) await this.onOpen(this);
          return inst;
        } catch (e) {
          // A failed migration or plugin start must not leave the file locked by a half-open instance.
          if (this.instance) this.close();
          else inst?.closeSync();
          this.instance = null;
          if (e instanceof DpError) throw e;
          const msg = errorMessage(e);
          if (isLockConflict(msg)) throw lockedError(this.path, msg);
          throw new DpError(500, 'database_open_failed', `Could not open database ${path.basename(this.path)}: ${msg.split('\n')[0]}`, { file: path.basename(this.path) });
        } finally {
          this.opening = null;
        }
      })();
    }
    return this.opening;
  }

  private async newConnection(): Promise<Connection> {
    const inst = await this.open();
    const c = new Connection(await inst.connect());
    c.observer = this.observer;
    c.lookups = this.lookups;
    return c;
  }

  private async acquire(): Promise<Connection> {
    if (this.refusal) throw this.refusal;
    const c = this.idle.pop() ?? (await this.newConnection());
    this.lent.add(c);
    return c;
  }

  private release(c: Connection): void {
    // Already closed by a drain or close while its holder still had it.
    if (!this.lent.delete(c)) return;
    if (this.instance && !this.refusal && this.idle.length < 16) this.idle.push(c);
    else c.close();
  }

  private retire(c: Connection): void {
    if (!this.lent.delete(c)) return;
    c.close();
  }

  async withConnection<T>(fn: (c: DbConnection) => Promise<T>): Promise<T> {
    const c = await this.acquire();
    let healthy = true;
    try {
      return await fn(c);
    } catch (e) {
      // A connection left inside a failed transaction must not go back to the pool.
      healthy = false;
      throw translateDbError(e);
    } finally {
      if (healthy) this.release(c);
      else this.retire(c);
    }
  }

  async connect(): Promise<DbConnection & { close(): void }> {
    if (this.refusal) throw this.refusal;
    const c = await this.newConnection();
    this.lent.add(c);
    // Closing hands it back: close it at most once, whoever comes first (the holder or a drain).
    const closeRaw = c.close.bind(c);
    let closed = false;
    c.close = () => {
      this.lent.delete(c);
      if (closed) return;
      closed = true;
      closeRaw();
    };
    return c;
  }

  /** See DatabasePort.scratch: its own in-memory instance, no file access, closed with the connection. */
  async scratch(options: ScratchOptions = {}): Promise<DbConnection & { close(): void }> {
    if (this.refusal) throw this.refusal;
    const inst = await duckdb.DuckDBInstance.create(':memory:', {
      ...(options.threads !== undefined ? { threads: String(options.threads) } : {}),
      ...(options.spillDirectory !== undefined ? { temp_directory: options.spillDirectory } : {}),
    });
    try {
      const setup = await inst.connect();
      try {
        const dirs = (options.readableDirectories ?? []).map((d) => quoteLiteral(d.endsWith(path.sep) ? d : d + path.sep));
        await setup.run(`SET allowed_directories = [${dirs.join(', ')}]`);
        await setup.run(`SET memory_limit = ${quoteLiteral(options.memoryLimit ?? this.sandbox?.memoryLimit ?? defaultMemoryLimit())}`);
        await setup.run('SET autoinstall_known_extensions = false');
        await setup.run('SET autoload_known_extensions = false');
        await setup.run('SET enable_external_access = false');
        await setup.run('SET lock_configuration = true');
      } finally {
        setup.closeSync();
      }
      const c = new Connection(await inst.connect());
      const closeRaw = c.close.bind(c);
      let closed = false;
      c.close = () => {
        if (closed) return;
        closed = true;
        closeRaw();
        inst.closeSync();
      };
      return c;
    } catch (e) {
      inst.closeSync();
      throw e;
    }
  }

  exclusive<T>(fn: () => Promise<T>): Promise<T> {
    return this.lock.exclusive(fn);
  }

  bulkLoad(target: BulkTarget & { transaction?: boolean }, fn: (writer: BulkWriter) => Promise<void>): Promise<BulkLoadResult> {
    return this.withConnection((c) => (target.transaction ? c.transaction((t) => t.bulkLoad(target, fn)) : c.bulkLoad(target, fn)));
  }

  /**
   * Waits up to `graceMs` for every lent connection (and the query, stream or appender on it)
   * to come back, interrupts those still out, and after a short grace closes any that still did
   * not return. New work is still accepted (plugins' onStop may write): `refuse` stops that.
   */
  async drain(graceMs: number): Promise<DrainReport> {
    const report: DrainReport = { lent: this.lent.size, interrupted: 0, forced: 0 };
    const waitUntil = async (deadline: number) => {
      while (this.lent.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    };
    await waitUntil(Date.now() + graceMs);
    if (this.lent.size > 0) {
      report.interrupted = this.lent.size;
      const graceEnd = Date.now() + INTERRUPT_GRACE_MS;
      // Each still-lent connection is interrupted until it comes back or the grace ends.
      const back = (c: Connection) =>
        new Promise<void>((resolve) => {
          const check = setInterval(() => {
            if (this.lent.has(c) && Date.now() < graceEnd) return;
            clearInterval(check);
            resolve();
          }, 10);
        });
      await Promise.all([...this.lent].map((c) => c.interruptUntilSettled(back(c), { everyMs: 100 })));
    }
    for (const c of [...this.lent]) {
      report.forced++;
      this.retire(c);
    }
    return report;
  }

  /** From now on every use fails with `error` (maintenance, shutdown): the file is never reopened behind the caller's back. */
  refuse(error: DpError): void {
    this.refusal = error;
  }

  /** Interrupts whatever runs on the lent connections (shutdown at its deadline). */
  interruptAll(): number {
    for (const c of this.lent) c.interrupt();
    return this.lent.size;
  }

  all<T = Row>(sql: string, params?: SqlParams): Promise<T[]> {
    return this.withConnection((c) => c.all<T>(sql, params));
  }
  query(sql: string, params?: SqlParams): Promise<TabularResult> {
    return this.withConnection((c) => c.query(sql, params));
  }
  run(sql: string, params?: SqlParams): Promise<void> {
    return this.withConnection((c) => c.run(sql, params));
  }
  value<T = unknown>(sql: string, params?: SqlParams): Promise<T | null> {
    return this.withConnection((c) => c.value<T>(sql, params));
  }

  /** json_serialize_sql through the connection's kept prepared statement: DuckDB plans nothing per call. */
  private async serialize(sql: string): Promise<string> {
    const text = await this.withConnection((c) => (c as Connection).preparedValue(SERIALIZE_SQL, sql));
    return typeof text === 'string' ? text : '{}';
  }

  async parse(sql: string): Promise<ParsedSql> {
    const hit = this.parseCache.get(sql);
    if (hit) {
      // Least recently used goes first: a hit moves to the back.
      this.parseCache.delete(sql);
      this.parseCache.set(sql, hit);
      return hit;
    }
    const parsed = parsedFromJson(await this.serialize(sql));
    if (this.parseCache.size >= PARSE_CACHE_MAX) this.parseCache.delete(this.parseCache.keys().next().value as string);
    this.parseCache.set(sql, parsed);
    return parsed;
  }

  async parseMany(sqls: string[], options: { compact?: boolean; split?: boolean } = {}): Promise<ParsedSql[]> {
    const out: ParsedSql[] = new Array(sqls.length);
    const missing: number[] = [];
    sqls.forEach((sql, i) => {
      const hit = options.compact ? undefined : this.parseCache.get(sql);
      if (hit) out[i] = hit;
      else missing.push(i);
    });
    if (!missing.length) return out;
    const skip = options.compact ? ', skip_null := true, skip_empty := true' : '';
    // The parser runs on the calling DuckDB thread: a few batches on separate connections use more than one core.
    const batches = options.split === false || missing.length < 2 * PARSE_BATCH_MIN ? 1 : Math.min(PARSE_BATCHES, Math.ceil(missing.length / PARSE_BATCH_MIN));
    const size = Math.ceil(missing.length / batches);
    await Promise.all(
      Array.from({ length: batches }, async (_, b) => {
        const part = missing.slice(b * size, (b + 1) * size);
        // One statement over a list of texts: DuckDB's parser runs once per text, with no round trip each.
        const rows = await this.all<{ i: number; tree: string }>(
          `SELECT i, json_serialize_sql(l[i]${skip}) AS tree FROM (SELECT from_json($1::VARCHAR, '["VARCHAR"]') AS l) AS t, range(1, len(l) + 1) AS r(i)`,
          [JSON.stringify(part.map((i) => sqls[i]))],
        );
        for (const row of rows) out[part[Number(row.i) - 1]!] = parsedFromJson(row.tree);
      }),
    );
    return out;
  }

  /** Accepts plain trees and lossless ones from readTreeJson (numbers are written back exactly). */
  async deparse(tree: SerializedSql): Promise<string> {
    const sql = await this.value<string>('SELECT json_deserialize_sql($1::JSON)', [writeTreeJson(tree)]);
    return sql ?? '';
  }

  async assertProjectFileReads(sql: string, options: FileReadOptions = {}): Promise<void> {
    const root = this.sandbox?.allowedDirectories[0];
    if (!root) throw new DpError(500, 'no_project', 'This database has no project folder to check file reads against');
    await assertProjectFileReads(this, sql, { root, builtRelations: options.builtRelations });
  }

  async checkpoint(): Promise<void> {
    if (this.path === ':memory:') return;
    await this.run('CHECKPOINT');
  }

  /**
   * Opens another database file read-only inside a sandbox of its own: a scratch instance (in
   * memory, external access off, configuration locked) that may read only the project's folders,
   * which ATTACHes the file. A file outside the project is refused by the engine itself, and
   * nothing in the file can reach other files.
   */
  async inspectFile(file: string): Promise<{ tables: Array<{ schema: string; name: string; rows: number }> }> {
    if (path.resolve(file) === path.resolve(this.path)) throw new DpError(500, 'inspect_open_file', 'inspectFile is for other database files, not the open one');
    let conn: (DbConnection & { close(): void }) | null = null;
    try {
      conn = await this.scratch({ readableDirectories: this.sandbox?.allowedDirectories ?? [] });
      await conn.run(`ATTACH ${quoteLiteral(file)} AS candidate (READ_ONLY)`);
      const names = await conn.all<{ schema: string; name: string }>(
        "SELECT schema_name AS schema, table_name AS name FROM duckdb_tables() WHERE database_name = 'candidate' AND NOT internal AND NOT temporary ORDER BY 1, 2",
      );
      const tables: Array<{ schema: string; name: string; rows: number }> = [];
      for (const t of names) {
        const n = await conn.value<number | bigint>(`SELECT count(*) FROM candidate.${quoteIdent(String(t.schema))}.${quoteIdent(String(t.name))}`);
        tables.push({ schema: String(t.schema), name: String(t.name), rows: Number(n ?? 0) });
      }
      return { tables };
    } catch (e) {
      if (e instanceof DpError) throw e;
      // DuckDB's message names the file by its absolute path: keep only its base name.
      const msg = errorMessage(e).split('\n')[0].split(file).join(path.basename(file));
      throw new DpError(400, 'database_file_unreadable', `${path.basename(file)} does not open as a DuckDB database: ${msg}`, { file: path.basename(file) });
    } finally {
      conn?.close();
    }
  }

  ident(name: string): string {
    return quoteIdent(name);
  }
  literal(value: string): string {
    return quoteLiteral(value);
  }

  /** Closes every connection and the instance (environment switch, shutdown). */
  close(): void {
    for (const c of this.idle) c.close();
    this.idle = [];
    for (const c of [...this.lent]) this.retire(c);
    if (this.instance) {
      this.instance.closeSync();
      this.instance = null;
    }
  }
}
