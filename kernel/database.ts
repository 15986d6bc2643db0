import { errorLocation } from './sql-location.js';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  DuckDBConnection,
  DuckDBInstance,
  type DuckDBPreparedStatement,
  type DuckDBResult,
  type DuckDBResultReader,
  type DuckDBValue,
  JsonDuckDBValueConverter,
} from '@duckdb/node-api';
import {
  type BulkLoadResult,
  type BulkTarget,
  type BulkWriter,
  type DatabasePort,
  type DbConnection,
  type ParsedSql,
  type Row,
  type ScratchOptions,
  type SerializedSql,
  type SqlParams,
  type TabularResult,
  writeTreeJson,
} from '../sdk/db.js';
import { DpError, errorMessage } from '../sdk/errors.js';
import { quoteIdent, quoteLiteral } from '../sdk/sql.js';
import { CachedCatalog, type DbCatalog } from '../sdk/db-catalog.js';
import { DuckCatalogSource } from './db-catalog.js';
import { assertProjectFileReads } from './file-reads.js';
import { bulkLoadOn } from './bulk.js';
import { leadingKeyword, NEUTRAL_STATEMENT_TYPES, READ_STATEMENT_TYPES, statementKind, type StatementKind } from './statement-kind.js';
import { WriteLock } from './write-lock.js';

export { runMigrations } from './migrations.js';

/** Told after a statement that may have changed the catalog or data ran (its leading keyword). */
export type WriteObserver = (statement: string) => void;

type Values = DuckDBValue[] | Record<string, DuckDBValue>;

/** JSON conversion that keeps integers as numbers when they fit and DECIMALs as numbers. */
function fixValue(type: string, v: unknown): unknown {
  if (v === null || v === undefined) return null;
  if (typeof v === 'string') {
    if (/^(BIGINT|UBIGINT|HUGEINT|UHUGEINT)$/.test(type)) {
      const n = Number(v);
      return Number.isSafeInteger(n) ? n : v;
    }
    if (type.startsWith('DECIMAL')) return Number(v);
  }
  return v;
}

function needsFix(type: string): boolean {
  return /^(BIGINT|UBIGINT|HUGEINT|UHUGEINT)$/.test(type) || type.startsWith('DECIMAL');
}

function convertRows(types: string[], rows: unknown[][]): unknown[][] {
  const fixCols = types.map((t, i) => (needsFix(t) ? i : -1)).filter((i) => i >= 0);
  if (fixCols.length === 0) return rows;
  for (const row of rows) for (const i of fixCols) row[i] = fixValue(types[i], row[i]);
  return rows;
}

function typeNames(r: DuckDBResultReader | DuckDBResult): string[] {
  return r.columnTypes().map((t) => t.toString());
}

/** Binds JS values: DuckDB's node API infers INTEGER/DOUBLE/BOOLEAN/VARCHAR; bigints stay BIGINT. */
function toValues(params?: SqlParams): Values | undefined {
  if (params === undefined) return undefined;
  const conv = (v: unknown): DuckDBValue => {
    if (v === undefined) return null;
    if (v instanceof Date) return v.toISOString();
    if (typeof v === 'object' && v !== null) return JSON.stringify(v);
    return v as DuckDBValue;
  };
  if (Array.isArray(params)) return params.map(conv);
  const out: Record<string, DuckDBValue> = {};
  for (const [k, v] of Object.entries(params)) out[k] = conv(v);
  return out;
}

/** Rewrites DuckDB's own errors into DpErrors where the cause is the caller's. */
export function translateDbError(e: unknown): unknown {
  if (e instanceof DpError) return e;
  const msg = errorMessage(e);
  if (/INTERRUPT/i.test(msg) || /Interrupted/i.test(msg)) return new DpError(408, 'query_interrupted', 'The query was interrupted');
  // The engine's sandbox or a missing/unreadable file: the caller's SQL asked for it. The message
  // names the path the SQL itself wrote, nothing the caller did not send.
  if (/^Permission Error:/i.test(msg)) return new DpError(400, 'file_access_denied', 'The query tries to read or write a file outside what the engine allows', { kind: 'permission' });
  if (/^IO Error:.*(No files found|Cannot open file|Could not open file|No such file|does not exist|Is a directory|Permission denied)/i.test(msg)) return new DpError(400, 'file_access_denied', 'The query tries to read or write a file the engine cannot open', { kind: 'io' });
  const m = /^(Parser|Binder|Catalog|Conversion|Invalid Input|Constraint|Out of Range|Not implemented|Invalid)\s*Error:\s*([\s\S]*)$/i.exec(msg);
  if (m) return new DpError(400, 'sql_error', msg.split('\n')[0], { kind: m[1].toLowerCase().replace(/\s+/g, '_'), ...errorLocation(msg) });
  return e;
}

/** DuckDB's own catalog lookup of one quoted name (search path included); it never falls back to a file. */
const TABLE_LOOKUP = 'SELECT count(*) FROM pragma_table_info($1::VARCHAR)';
/** Kept lookups at most; past that the oldest goes. */
const LOOKUPS_MAX = 4096;

/**
 * Which names the catalog holds, as DuckDB answered, shared by one database's connections and
 * dropped whenever a statement that is not a read runs (the same signal as `catalog.changed`).
 * Read-only validation asks this for every table a user query names, so a repeated query pays
 * no catalog round trip (measured: 0.6 ms of server CPU per /api/query before the cache).
 */
export class CatalogLookups {
  /** Versions are unique in the process, so one never repeats for another database (an environment switch). */
  private static last = 0;
  private counter = ++CatalogLookups.last;
  private readonly known = new Map<string, boolean>();

  /** Changes on every invalidation: what was read of the catalog under another version is stale. */
  get version(): number {
    return this.counter;
  }

  invalidate(): void {
    this.counter = ++CatalogLookups.last;
    this.known.clear();
  }

  async tableExists(c: Connection, quotedName: string): Promise<boolean> {
    const hit = this.known.get(quotedName);
    if (hit !== undefined) return hit;
    const asked = this.counter;
    let found = true;
    try {
      await c.preparedValue(TABLE_LOOKUP, quotedName);
    } catch {
      found = false;
    }
    // A write that ran while DuckDB answered may have changed the answer: keep it only if none did.
    if (asked === this.counter) {
      if (this.known.size >= LOOKUPS_MAX) this.known.delete(this.known.keys().next().value as string);
      this.known.set(quotedName, found);
    }
    return found;
  }
}

/** How often interruptUntilSettled repeats its interrupt. */
const INTERRUPT_REPEAT_MS = 25;

/** Prepared statements kept per pooled connection for readUntil (the guarded runner's queries). */
const STATEMENTS_PER_CONNECTION = 32;

export class Connection implements DbConnection {
  /** SQL text → its prepared statement, least recently used first. */
  private readonly statements = new Map<string, DuckDBPreparedStatement>();

  /** Set by the database that lends this connection: hears of every statement that is not a read. */
  observer: WriteObserver | null = null;
  /** The lending database's catalog lookups (fresh ones for a connection made on its own). */
  lookups = new CatalogLookups();
  /** Inside BEGIN…COMMIT a write is reported at COMMIT, when other connections can see it. */
  private inTransaction = false;
  private pendingWrite: string | null = null;
  private closed = false;

  /** See DbConnection.catalog: read on this connection, kept nowhere. */
  readonly catalog: DbCatalog = new CachedCatalog(new DuckCatalogSource(this));

  constructor(readonly raw: DuckDBConnection) {}

  /** The statement's kind, asking DuckDB's parser only when the leading keyword cannot tell. */
  private async classify(sql: string): Promise<StatementKind> {
    const kind = statementKind(sql);
    if (kind !== 'unsure') return kind;
    try {
      const extracted = await this.raw.extractStatements(sql);
      let all: StatementKind | null = null;
      for (let i = 0; i < extracted.count; i++) {
        const stmt = await extracted.prepare(i);
        const type = stmt.statementType as number;
        stmt.destroySync();
        const one: StatementKind = READ_STATEMENT_TYPES.has(type) ? 'read' : NEUTRAL_STATEMENT_TYPES.has(type) ? 'neutral' : 'write';
        all = all === null || all === one ? one : 'write';
        if (all === 'write') break;
      }
      return all ?? 'neutral';
    } catch {
      // A later statement may depend on an earlier one (CREATE then INSERT): it binds only when run.
      return 'write';
    }
  }

  /** Reports a write now, or at COMMIT inside a transaction; follows BEGIN/COMMIT/ROLLBACK sent as SQL. */
  private noteStatement(sql: string, kind: StatementKind): void {
    if (kind === 'read') return;
    if (kind === 'neutral') {
      const word = leadingKeyword(sql);
      if (word === 'BEGIN' || word === 'START') this.inTransaction = true;
      else if (word === 'COMMIT' || word === 'END') this.endTransaction(true);
      else if (word === 'ROLLBACK' || word === 'ABORT') this.endTransaction(false);
      return;
    }
    const statement = leadingKeyword(sql) || 'SQL';
    if (this.inTransaction) this.pendingWrite = statement;
    else this.observer?.(statement);
  }

  private endTransaction(committed: boolean): void {
    const pending = this.pendingWrite;
    this.inTransaction = false;
    this.pendingWrite = null;
    if (committed && pending) this.observer?.(pending);
  }

  /** Runs a statement, telling the observer afterwards when it was not a read (failed ones too: part of a batch may have run). */
  private async observed<T>(sql: string, work: () => Promise<T>): Promise<T> {
    if (!this.observer) return work();
    const kind = await this.classify(sql);
    try {
      return await work();
    } finally {
      this.noteStatement(sql, kind);
    }
  }

  /**
   * The prepared statement of one SQL statement, kept for the next run of the same text: a
   * repeated query skips DuckDB's parse, bind and plan (DuckDB rebinds by itself when the
   * catalog changed since).
   */
  private async prepared(sql: string): Promise<DuckDBPreparedStatement> {
    const hit = this.statements.get(sql);
    if (hit) {
      this.statements.delete(sql);
      this.statements.set(sql, hit);
      return hit;
    }
    const stmt = await this.raw.prepare(sql);
    if (this.statements.size >= STATEMENTS_PER_CONNECTION) {
      const [oldestSql, oldest] = this.statements.entries().next().value as [string, DuckDBPreparedStatement];
      this.statements.delete(oldestSql);
      oldest.destroySync();
    }
    this.statements.set(sql, stmt);
    return stmt;
  }

  /** Whether DuckDB's catalog holds `quotedName` (a table or view), answered from the kept lookups when it can. */
  tableExists(quotedName: string): Promise<boolean> {
    return this.lookups.tableExists(this, quotedName);
  }

  /** The first cell of a statement with one VARCHAR parameter, run through its kept prepared statement. */
  async preparedValue(sql: string, value: string): Promise<unknown> {
    const stmt = await this.prepared(sql);
    stmt.clearBindings();
    stmt.bindVarchar(1, value);
    const result = await stmt.run();
    return result.chunkCount > 0 ? result.getChunk(0).getColumnVector(0).getItem(0) : null;
  }

  /** Closes the connection and its prepared statements. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const stmt of this.statements.values()) stmt.destroySync();
    this.statements.clear();
    this.raw.closeSync();
  }

  async all<T = Row>(sql: string, params?: SqlParams): Promise<T[]> {
    const r = await this.observed(sql, () => this.raw.runAndReadAll(sql, toValues(params)));
    const types = typeNames(r);
    const names = r.columnNames();
    const rows = convertRows(types, r.getRowsJson() as unknown[][]);
    return rows.map((row) => {
      const o: Record<string, unknown> = {};
      names.forEach((n, i) => (o[n] = row[i]));
      return o as T;
    });
  }

  async query(sql: string, params?: SqlParams): Promise<TabularResult> {
    const r = await this.observed(sql, () => this.raw.runAndReadAll(sql, toValues(params)));
    const column_types = typeNames(r);
    return { columns: r.columnNames(), column_types, rows: convertRows(column_types, r.getRowsJson() as unknown[][]) };
  }

  async run(sql: string, params?: SqlParams): Promise<void> {
    await this.observed(sql, () => this.raw.run(sql, toValues(params)));
  }

  /**
   * Streams until at least `target` rows are read, then stops: the query never materializes
   * more. `sql` is one statement (the runner validated it); its prepared statement is reused.
   */
  async readUntil(sql: string, target: number, params?: SqlParams): Promise<TabularResult> {
    const stmt = await this.prepared(sql);
    stmt.clearBindings();
    const values = toValues(params);
    if (values) stmt.bind(values);
    const r = await stmt.streamAndReadUntil(target);
    const column_types = typeNames(r);
    return { columns: r.columnNames(), column_types, rows: convertRows(column_types, r.getRowsJson() as unknown[][]) };
  }

  /**
   * The whole result of a query whose size its SQL bounds (the runner's page, `LIMIT` bound as a
   * parameter), materialized by DuckDB in one call and read without another: a streamed read
   * costs a call to start and one per chunk, each a hop to a libuv worker and back.
   */
  async readBounded(sql: string, params?: SqlParams): Promise<TabularResult> {
    const stmt = await this.prepared(sql);
    stmt.clearBindings();
    const values = toValues(params);
    if (values) stmt.bind(values);
    const result = await stmt.run();
    const column_types = typeNames(result);
    let rows: unknown[][] = [];
    for (let i = 0; i < result.chunkCount; i++) {
      const json = result.getChunk(i).convertRows(JsonDuckDBValueConverter) as unknown[][];
      rows = rows.length ? rows.concat(json) : json;
    }
    return { columns: result.columnNames(), column_types, rows: convertRows(column_types, rows) };
  }

  /**
   * Rows `skip` to `skip + take` of a query that has no page of its own in SQL: chunks wholly
   * before the window are dropped as they arrive, so memory holds at most `take` rows and one
   * chunk, however large `skip` is.
   */
  async readWindow(sql: string, skip: number, take: number, params?: SqlParams): Promise<TabularResult> {
    if (skip === 0) return this.readUntil(sql, take, params);
    const stmt = await this.prepared(sql);
    stmt.clearBindings();
    const values = toValues(params);
    if (values) stmt.bind(values);
    const result = await stmt.stream();
    const column_types = typeNames(result);
    const rows: unknown[][] = [];
    let toSkip = skip;
    while (rows.length < take) {
      const chunk = await result.fetchChunk();
      if (!chunk || chunk.rowCount === 0) break;
      if (toSkip >= chunk.rowCount) {
        toSkip -= chunk.rowCount;
        continue;
      }
      const json = chunk.convertRows(JsonDuckDBValueConverter) as unknown[][];
      rows.push(...json.slice(toSkip, toSkip + take - rows.length));
      toSkip = 0;
    }
    return { columns: result.columnNames(), column_types, rows: convertRows(column_types, rows) };
  }

  async value<T = unknown>(sql: string, params?: SqlParams): Promise<T | null> {
    const r = await this.query(sql, params);
    return (r.rows[0]?.[0] ?? null) as T | null;
  }

  async stream(sql: string, params?: SqlParams) {
    const result = await this.observed(sql, () => this.raw.stream(sql, toValues(params)));
    const column_types = typeNames(result);
    async function* chunks(): AsyncIterable<unknown[][]> {
      for await (const rows of result.yieldRowsJson()) yield convertRows(column_types, rows as unknown[][]);
    }
    return { columns: result.columnNames(), column_types, chunks: chunks() };
  }

  async transaction<T>(fn: (c: DbConnection) => Promise<T>): Promise<T> {
    await this.raw.run('BEGIN TRANSACTION');
    this.inTransaction = true;
    try {
      const out = await fn(this);
      await this.raw.run('COMMIT');
      this.endTransaction(true);
      return out;
    } catch (e) {
      this.endTransaction(false);
      try {
        await this.raw.run('ROLLBACK');
      } catch {
        /* the transaction may already be aborted */
      }
      throw e;
    }
  }

  async bulkLoad(target: BulkTarget, fn: (writer: BulkWriter) => Promise<void>): Promise<BulkLoadResult> {
    try {
      return await bulkLoadOn(this.raw, target, fn);
    } finally {
      this.noteStatement(target.mode && target.mode !== 'append' ? 'CREATE' : 'INSERT', 'write');
    }
  }

  interrupt(): void {
    if (!this.closed) this.raw.interrupt();
  }

  /**
   * The one loop that stops work on this connection (query deadlines, drains, aborted
   * transforms): DuckDB resets its interrupt flag when a statement starts on a worker, so an
   * interrupt that lands while the call still waits for a worker is lost. Repeating it until the
   * caller's work settled is what makes a stop hold.
   */
  interruptUntilSettled(settled: Promise<unknown>, options: { everyMs?: number } = {}): Promise<void> {
    this.interrupt();
    const repeat = setInterval(() => this.interrupt(), options.everyMs ?? INTERRUPT_REPEAT_MS);
    // The work itself keeps the process alive while it runs; the loop alone must not.
    repeat.unref();
    const stop = () => clearInterval(repeat);
    return settled.then(stop, stop);
  }

  async countStatements(sql: string): Promise<number> {
    const extracted = await this.raw.extractStatements(sql);
    return extracted.count;
  }
}

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
 * What the engine itself may touch besides its own database file, WAL and temp folder (DuckDB
 * allows those by itself). Applied right after the file opens, then locked: no SQL, whoever sends
 * it and whatever a validator misses, can widen it again.
 */
export interface EngineSandbox {
  /** Absolute folders DuckDB may read and write; the first is the project folder (seeds, exports, snapshots). */
  allowedDirectories: string[];
  /** DuckDB's memory_limit, e.g. `4GB` (default: half of the machine's RAM). */
  memoryLimit?: string;
}

/** Half the machine's memory: DuckDB spills to disk beyond it, and Node keeps room for itself. */
export function defaultMemoryLimit(): string {
  return `${Math.max(256, Math.floor(os.totalmem() / 2 / 1024 / 1024))}MB`;
}

/** `DP_MEMORY_LIMIT` (DuckDB syntax: `4GB`, `512MB`) from the process environment, else half the RAM. */
export function configuredMemoryLimit(env: NodeJS.ProcessEnv = process.env): string {
  const v = env.DP_MEMORY_LIMIT?.trim();
  if (!v) return defaultMemoryLimit();
  if (!/^\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)$/i.test(v)) {
    throw new DpError(400, 'invalid_memory_limit', `DP_MEMORY_LIMIT must be a size such as 4GB or 512MB (got '${v}')`, { value: v });
  }
  return v;
}

/**
 * Order matters: allowed_directories can only be set while external access is still on, and
 * lock_configuration comes last. Extension autoloading and installs stay off (the built-in
 * extensions are linked in).
 */
async function applySandbox(inst: DuckDBInstance, sandbox: EngineSandbox | null): Promise<void> {
  if (!sandbox) return;
  const conn = await inst.connect();
  try {
    const dirs = sandbox.allowedDirectories.map((d) => quoteLiteral(d.endsWith(path.sep) ? d : d + path.sep));
    await conn.run(`SET allowed_directories = [${dirs.join(', ')}]`);
    await conn.run(`SET memory_limit = ${quoteLiteral(sandbox.memoryLimit ?? defaultMemoryLimit())}`);
    await conn.run('SET autoinstall_known_extensions = false');
    await conn.run('SET autoload_known_extensions = false');
    await conn.run('SET allow_community_extensions = false');
    await conn.run('SET enable_external_access = false');
    await conn.run('SET lock_configuration = true');
  } finally {
    conn.closeSync();
  }
}

/**
 * What a process is, from its command line: `dp transform`, `dp serve`, or the program's name.
 * Options are left out (a `--password` must not end up in a message), and so is every path.
 */
export function describeHolder(pid: number | null): string | null {
  if (pid === null) return null;
  let argv: string[];
  try {
    argv = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
  } catch {
    return null;
  }
  if (!argv.length) return null;
  // node /path/to/bin/dp.js transform --env x  →  dp transform
  const dpAt = argv.findIndex((a) => /(^|[\\/])dp(\.js)?$/.test(a));
  if (dpAt < 0) return path.basename(argv[0]);
  const words = ['dp'];
  for (const a of argv.slice(dpAt + 1)) {
    if (a.startsWith('-') || path.isAbsolute(a) || words.length >= 3) break;
    words.push(a);
  }
  return words.join(' ');
}

function lockedError(file: string, msg: string): DpError {
  const m = /PID (\d+)/.exec(msg);
  const pid = m ? Number(m[1]) : null;
  const holder = describeHolder(pid);
  const who = holder ? ` ('${holder}', PID ${pid})` : pid !== null ? ` (PID ${pid})` : '';
  return new DpError(
    409,
    'database_locked',
    `The database file ${path.basename(file)} is in use by another process${who}. Wait for it to finish or stop it${holder?.startsWith('dp serve') ? ', or send the work through its API' : ''}.`,
    { file: path.basename(file), pid, holder },
  );
}

const PARSE_CACHE_MAX = 1000;
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
          inst = await DuckDBInstance.create(this.path);
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
          if (/lock/i.test(msg)) throw lockedError(this.path, msg);
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
    const inst = await DuckDBInstance.create(':memory:', {
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
    const json = await this.serialize(sql);
    const tree = readParseTree(json);
    let parsed: ParsedSql;
    if (tree.error) {
      const error = String(tree.error_message ?? 'unparseable SQL');
      const position = Number(tree.position);
      parsed = { ok: false, error, errorType: tree.error_type, notSelect: /only SELECT statements/i.test(error), ...(Number.isInteger(position) && position >= 0 ? { position } : {}) };
    } else {
      parsed = { ok: true, tree: tree as SerializedSql, json };
    }
    if (this.parseCache.size >= PARSE_CACHE_MAX) this.parseCache.delete(this.parseCache.keys().next().value as string);
    this.parseCache.set(sql, parsed);
    return parsed;
  }

  /** Accepts plain trees and lossless ones from readTreeJson (numbers are written back exactly). */
  async deparse(tree: SerializedSql): Promise<string> {
    const sql = await this.value<string>('SELECT json_deserialize_sql($1::JSON)', [writeTreeJson(tree)]);
    return sql ?? '';
  }

  async assertProjectFileReads(sql: string): Promise<void> {
    const root = this.sandbox?.allowedDirectories[0];
    if (!root) throw new DpError(500, 'no_project', 'This database has no project folder to check file reads against');
    await assertProjectFileReads(this, sql, { root });
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
