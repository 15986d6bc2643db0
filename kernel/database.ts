import {
  DuckDBConnection,
  DuckDBInstance,
  type DuckDBPreparedStatement,
  type DuckDBResult,
  type DuckDBResultReader,
  type DuckDBValue,
  JsonDuckDBValueConverter,
} from '@duckdb/node-api';
import { type DatabasePort, type DbConnection, type ParsedSql, type Row, type SerializedSql, type SqlParams, type TabularResult, writeTreeJson } from '../sdk/db.js';
import { DpError, errorMessage } from '../sdk/errors.js';
import { quoteIdent, quoteLiteral } from '../sdk/sql.js';

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
  const m = /^(Parser|Binder|Catalog|Conversion|Invalid Input|Constraint|Out of Range|Not implemented|Invalid)\s*Error:\s*([\s\S]*)$/i.exec(msg);
  if (m) return new DpError(400, 'sql_error', msg.split('\n')[0], { kind: m[1].toLowerCase().replace(/\s+/g, '_') });
  return e;
}

/** Prepared statements kept per pooled connection for readUntil (the guarded runner's queries). */
const STATEMENTS_PER_CONNECTION = 32;

export class Connection implements DbConnection {
  /** SQL text → its prepared statement, least recently used first. */
  private readonly statements = new Map<string, DuckDBPreparedStatement>();

  constructor(readonly raw: DuckDBConnection) {}

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
    for (const stmt of this.statements.values()) stmt.destroySync();
    this.statements.clear();
    this.raw.closeSync();
  }

  async all<T = Row>(sql: string, params?: SqlParams): Promise<T[]> {
    const r = await this.raw.runAndReadAll(sql, toValues(params));
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
    const r = await this.raw.runAndReadAll(sql, toValues(params));
    const column_types = typeNames(r);
    return { columns: r.columnNames(), column_types, rows: convertRows(column_types, r.getRowsJson() as unknown[][]) };
  }

  async run(sql: string, params?: SqlParams): Promise<void> {
    await this.raw.run(sql, toValues(params));
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
    const result = await this.raw.stream(sql, toValues(params));
    const column_types = typeNames(result);
    async function* chunks(): AsyncIterable<unknown[][]> {
      for await (const rows of result.yieldRowsJson()) yield convertRows(column_types, rows as unknown[][]);
    }
    return { columns: result.columnNames(), column_types, chunks: chunks() };
  }

  async transaction<T>(fn: (c: DbConnection) => Promise<T>): Promise<T> {
    await this.raw.run('BEGIN TRANSACTION');
    try {
      const out = await fn(this);
      await this.raw.run('COMMIT');
      return out;
    } catch (e) {
      try {
        await this.raw.run('ROLLBACK');
      } catch {
        /* the transaction may already be aborted */
      }
      throw e;
    }
  }

  interrupt(): void {
    this.raw.interrupt();
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

const PARSE_CACHE_MAX = 1000;
/** DuckDB's parser, prepared once per pooled connection like any repeated statement. */
const SERIALIZE_SQL = 'SELECT json_serialize_sql($1::VARCHAR)';

/** The kernel's DuckDB adapter: one instance per process, pooled connections. */
export class DuckDatabase implements DatabasePort {
  private instance: DuckDBInstance | null = null;
  private idle: Connection[] = [];
  private parseCache = new Map<string, ParsedSql>();
  private opening: Promise<DuckDBInstance> | null = null;
  /** Runs once right after the file opens (migrations). */
  onOpen: ((db: DuckDatabase) => Promise<void>) | null = null;

  constructor(readonly path: string) {}

  get isOpen(): boolean {
    return this.instance !== null;
  }

  /** Opens lazily, so CLI commands that never touch the database never lock it. */
  private async open(): Promise<DuckDBInstance> {
    if (this.instance) return this.instance;
    if (!this.opening) {
      this.opening = (async () => {
        try {
          const inst = await DuckDBInstance.create(this.path);
          this.instance = inst;
          if (this.onOpen) await this.onOpen(this);
          return inst;
        } catch (e) {
          this.instance = null;
          const msg = errorMessage(e);
          if (/lock/i.test(msg)) {
            const pid = /PID (\d+)/.exec(msg)?.[1];
            throw new DpError(
              409,
              'database_locked',
              `The database file ${this.path} is in use by another process${pid ? ` (PID ${pid})` : ''}, most likely a running 'dp serve'. Stop it, or send the work through its API.`,
              { path: this.path, pid: pid ? Number(pid) : null },
            );
          }
          throw new DpError(500, 'database_open_failed', `Could not open database ${this.path}: ${msg.split('\n')[0]}`, { path: this.path });
        } finally {
          this.opening = null;
        }
      })();
    }
    return this.opening;
  }

  private async acquire(): Promise<Connection> {
    const pooled = this.idle.pop();
    if (pooled) return pooled;
    const inst = await this.open();
    return new Connection(await inst.connect());
  }

  private release(c: Connection): void {
    if (this.instance && this.idle.length < 16) this.idle.push(c);
    else c.close();
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
      else c.close();
    }
  }

  async connect(): Promise<DbConnection & { close(): void }> {
    const inst = await this.open();
    return new Connection(await inst.connect());
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
      parsed = { ok: false, error, errorType: tree.error_type, notSelect: /only SELECT statements/i.test(error) };
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

  async checkpoint(): Promise<void> {
    if (this.path === ':memory:') return;
    await this.run('CHECKPOINT');
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
    if (this.instance) {
      this.instance.closeSync();
      this.instance = null;
    }
  }
}

/** Migrations table and runner; each owner's steps run once, in order. */
export async function runMigrations(db: DatabasePort, sets: Array<{ owner: string; steps: string[] }>): Promise<void> {
  await db.run(`CREATE SCHEMA IF NOT EXISTS _service;
    CREATE TABLE IF NOT EXISTS _service.migrations (owner VARCHAR, step INTEGER, applied_at TIMESTAMP DEFAULT current_timestamp, PRIMARY KEY (owner, step))`);
  const done = await db.all<{ owner: string; step: number }>('SELECT owner, step FROM _service.migrations');
  const applied = new Set(done.map((r) => `${r.owner}#${r.step}`));
  for (const set of sets) {
    for (let i = 0; i < set.steps.length; i++) {
      if (applied.has(`${set.owner}#${i}`)) continue;
      await db.withConnection((c) =>
        c.transaction(async () => {
          await c.run(set.steps[i]);
          await c.run('INSERT INTO _service.migrations (owner, step) VALUES ($1, $2)', [set.owner, i]);
        }),
      );
    }
  }
}
