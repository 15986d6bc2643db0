/** A pooled DuckDB connection (the sdk's DbConnection) and the catalog lookups its database shares. */
import type { DuckDBConnection, DuckDBPreparedStatement } from '@duckdb/node-api';
import { duckdb } from './duckdb-api.js';

const { JsonDuckDBValueConverter } = duckdb;
import type { BulkLoadResult, BulkTarget, BulkWriter, DbConnection, Row, SqlParams, TabularResult } from '../../sdk/db.js';
import { CachedCatalog, type DbCatalog } from '../../sdk/db-catalog.js';
import { DuckCatalogSource } from '../db-catalog.js';
import { bulkLoadOn } from '../bulk.js';
import { leadingKeyword, NEUTRAL_STATEMENT_TYPES, READ_STATEMENT_TYPES, statementKind, type StatementKind } from '../statement-kind.js';
import { convertRows, toValues, typeNames } from './values.js';

/** Told after a statement that may have changed the catalog or data ran (its leading keyword). */
export type WriteObserver = (statement: string) => void;

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
