/**
 * The database port. Plugins never import @duckdb/node-api: they go through these
 * interfaces, so a future adapter (MotherDuck, DuckLake) can replace the kernel's
 * implementation without touching a plugin.
 */
import crypto from 'node:crypto';
import type { DbCatalog } from './db-catalog.js';
import { createEventRef } from './refs.js';

export type SqlParams = Record<string, unknown> | unknown[];

/**
 * The bus event (`ctx.events`) the kernel emits after a statement that is not a read ran
 * through the database port (inside a transaction: at COMMIT; a rollback emits nothing), with
 * payload `{statement}`: its leading keyword (`CREATE`, `INSERT`...). Caches of the catalog
 * (masking) refresh on it. Reads, including every user query, never emit it.
 */
export const CATALOG_CHANGED = createEventRef<CatalogChange>('catalog.changed');

/** The payload of CATALOG_CHANGED. */
export interface CatalogChange {
  /** The statement's leading keyword (`CREATE`, `INSERT`...). */
  statement: string;
}

export type Row = Record<string, unknown>;

export interface TabularResult {
  columns: string[];
  /** DuckDB type names, e.g. `BIGINT`, `DECIMAL(10,2)`, `VARCHAR[]`. */
  column_types: string[];
  /** One array per row, in `columns` order, JSON-safe values. */
  rows: unknown[][];
}

export interface DbConnection {
  /** Rows as objects. */
  all<T = Row>(sql: string, params?: SqlParams): Promise<T[]>;
  /** Rows as arrays plus column names and types. */
  query(sql: string, params?: SqlParams): Promise<TabularResult>;
  /** Executes one or more statements, discards results. */
  run(sql: string, params?: SqlParams): Promise<void>;
  /** First column of the first row, or null. */
  value<T = unknown>(sql: string, params?: SqlParams): Promise<T | null>;
  /** Streams a result in chunks of rows (arrays), with constant memory. */
  stream(sql: string, params?: SqlParams): Promise<{ columns: string[]; column_types: string[]; chunks: AsyncIterable<unknown[][]> }>;
  /** Runs fn inside BEGIN/COMMIT; rolls back when it throws. */
  transaction<T>(fn: (c: DbConnection) => Promise<T>): Promise<T>;
  /** Cancels the statement running on this connection (it rejects with an interrupt error). */
  interrupt(): void;
  /**
   * Interrupts this connection, and again every `everyMs` (default 25) until `settled` settles:
   * DuckDB forgets an interrupt that arrives before a statement began on its worker, so a single
   * one can be lost. Resolves once `settled` settled. The one way to stop work that must stop.
   */
  interruptUntilSettled(settled: Promise<unknown>, options?: { everyMs?: number }): Promise<void>;
  /** Number of top-level statements in sql (DuckDB's own splitter). */
  countStatements(sql: string): Promise<number>;
  /**
   * The catalog as this connection sees it (inside its transaction: that transaction's
   * snapshot). Nothing is kept: use `DatabasePort.catalog` outside a transaction.
   */
  readonly catalog: DbCatalog;
  /**
   * Bulk-loads rows into a table through DuckDB's appender, in column chunks: never one INSERT
   * per row. Runs on this connection, so inside `transaction()` the rows commit with the rest.
   */
  bulkLoad(target: BulkTarget, fn: (writer: BulkWriter) => Promise<void>): Promise<BulkLoadResult>;
}

/** A column of a table that `bulkLoad` creates: name and DuckDB type (`BIGINT`, `DECIMAL(18,4)`, `TIMESTAMP`, `VARCHAR`...). */
export interface BulkColumn {
  name: string;
  type: string;
}

export interface BulkTarget {
  schema?: string;
  table: string;
  /**
   * `append` (default) adds to an existing table; `create` creates it from `columns` when absent;
   * `replace` drops and recreates it from `columns`.
   */
  mode?: 'append' | 'create' | 'replace';
  /** Needed for `create` and `replace`. */
  columns?: BulkColumn[];
}

/**
 * Rows go in as JS values for the table's column types: numbers, bigints, strings, booleans;
 * `Date`, an ISO-8601 string or epoch milliseconds for DATE/TIMESTAMP/TIMESTAMPTZ; a decimal
 * string (exact), number or bigint for DECIMAL; objects for JSON; `null`/`undefined` for NULL.
 * Batches are flushed in chunks of DuckDB's vector size; memory stays bounded by one batch.
 */
export interface BulkWriter {
  /** Column names of the target table, in order (the order `appendRows` expects). */
  readonly columns: readonly string[];
  /** Row-major batch: one array per row, in column order. */
  appendRows(rows: ReadonlyArray<ReadonlyArray<unknown>>): Promise<void>;
  /** Column-major batch: one array per column, all the same length. */
  appendColumns(columns: ReadonlyArray<ReadonlyArray<unknown>>): Promise<void>;
  /** Rows appended so far. */
  readonly rows: number;
}

export interface BulkLoadResult {
  rows: number;
}

/**
 * DuckDB's parse tree of one SELECT (json_serialize_sql), or the parser's error. `tree` is
 * plain JSON.parse output, shared by every caller of the same SQL text: read it, never change
 * it. `json` is the text exactly as DuckDB wrote it; `readTreeJson(json)` gives a private,
 * lossless copy to modify and hand to `deparse`.
 */
export type ParsedSql =
  | { ok: true; tree: SerializedSql; json: string }
  | { ok: false; error: string; errorType?: string; notSelect: boolean; /** Byte offset of the error in the SQL, when the parser gives one. */ position?: number };

export interface SerializedSql {
  error: false;
  statements: Array<{ node: SqlNode; named_param_map?: unknown }>;
}

/** A node of DuckDB's serialized tree; shapes vary by `type`/`class`. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type SqlNode = Record<string, any>;

/**
 * One migration step. The id identifies it for good (`models-001`): an applied step is never
 * edited (its SQL hash is checked at boot) nor its id reused; a change is a new step.
 */
export interface MigrationStep {
  id: string;
  sql: string;
}

export interface MigrationSet {
  /** Owner of the migrations (the plugin name); ids are tracked per owner. */
  owner: string;
  /** Ordered, idempotent SQL steps; each id runs once per database, tracked in _service.migrations. */
  steps: MigrationStep[];
}

/** How a scratch database (`DatabasePort.scratch`) is set up; it never reaches the project's file. */
export interface ScratchOptions {
  /** Absolute folders its file readers may read (the caller made them for it). */
  readableDirectories?: string[];
  /** Worker threads (default: DuckDB's, one per core). */
  threads?: number;
  /** Its memory limit, e.g. `256MB` (default: the project's `database.memory_limit`). */
  memoryLimit?: string;
  /**
   * An absolute folder where a sort or join past the memory limit spills (default: DuckDB's
   * `.tmp` under the working directory, which is the project for dp serve).
   */
  spillDirectory?: string;
}

/** See DatabasePort.assertProjectFileReads. */
export interface FileReadOptions {
  builtRelations?: ReadonlySet<string>;
}

export interface DatabasePort {
  /** Absolute file path, or ':memory:'. */
  readonly path: string;
  /** Borrows a pooled connection for the duration of fn. */
  withConnection<T>(fn: (c: DbConnection) => Promise<T>): Promise<T>;
  /** A connection of its own (for long work that must be interruptible); close it when done. */
  connect(): Promise<DbConnection & { close(): void }>;
  /**
   * A connection to a new, empty in-memory DuckDB that shares nothing with the project's
   * database and can read no file except under `readableDirectories` (absolute folders the
   * caller made for it). Closing it discards everything: for work that must never touch the
   * warehouse, such as model unit tests on mock rows, or a connector's private reads and sorts.
   */
  scratch(options?: ScratchOptions): Promise<DbConnection & { close(): void }>;
  /**
   * Runs fn under the kernel's write lock: transform, seed, ingest, sync and restore run one at
   * a time (first come, first served); reads go on meanwhile. Re-entrant within fn.
   */
  exclusive<T>(fn: () => Promise<T>): Promise<T>;
  /** `DbConnection.bulkLoad` on a pooled connection; `transaction: true` commits all batches or none. */
  bulkLoad(target: BulkTarget & { transaction?: boolean }, fn: (writer: BulkWriter) => Promise<void>): Promise<BulkLoadResult>;
  all<T = Row>(sql: string, params?: SqlParams): Promise<T[]>;
  query(sql: string, params?: SqlParams): Promise<TabularResult>;
  run(sql: string, params?: SqlParams): Promise<void>;
  value<T = unknown>(sql: string, params?: SqlParams): Promise<T | null>;
  /** DuckDB's own parser: json_serialize_sql. Cached by SQL text. */
  parse(sql: string): Promise<ParsedSql>;
  /**
   * `parse` of many texts in one query (one DuckDB round trip instead of one per text), in the
   * order given; for callers that read a whole project (models, lineage). Answers already in the
   * parse cache are taken from it; new ones are not added (thousands would push out the texts
   * the query path repeats). `compact` leaves out null and empty fields (json_serialize_sql's
   * skip_null and skip_empty: a smaller tree that only a generic walk should read). Many texts
   * are parsed by a few queries side by side on separate connections, unless `split` is false:
   * one query, for a caller that already overlaps its own batches with other work.
   */
  parseMany(sqls: string[], options?: { compact?: boolean; split?: boolean }): Promise<ParsedSql[]>;
  /** json_deserialize_sql: a (modified) tree back to SQL text. */
  deparse(tree: SerializedSql): Promise<string>;
  /**
   * Throws 400 `file_read_refused` unless every file a SELECT reads (file functions and
   * replacement scans) is inside the project, in no hidden folder and no database file. For SQL
   * that editors write and the server runs as is: models, contracts, metrics, notebook cells.
   * `options.builtRelations`: relations (`schema.name`, lowercase) the caller created and
   * committed in this database moments ago (a transform's models built earlier in its run); a
   * reference naming one by schema and name is taken as found in the catalog without a lookup.
   */
  assertProjectFileReads(sql: string, options?: FileReadOptions): Promise<void>;
  /** Flushes the write-ahead log into the database file. */
  checkpoint(): Promise<void>;
  /**
   * Opens another DuckDB file (a backup copy, never the open one) read-only in a short-lived
   * instance of its own, lists its user tables with their row counts (reading each table), and
   * closes it. Throws DpError 400 `database_file_unreadable` when DuckDB cannot open or read it.
   */
  inspectFile(file: string): Promise<{ tables: Array<{ schema: string; name: string; rows: number }> }>;
  /**
   * The catalog port: relations, columns, kinds and existence, cached on the catalog version.
   * Plugins read the catalog only through it, never through the engine's catalog functions.
   */
  readonly catalog: DbCatalog;
  /** Quotes an identifier for SQL. */
  ident(name: string): string;
  /** Quotes a string literal for SQL. */
  literal(value: string): string;
}

/**
 * Lossless JSON for DuckDB parse trees. JSON.parse turns UINT64_MAX locations into floats,
 * drops the `.0` of DOUBLE constants (json_deserialize_sql then rejects `10` where it wants a
 * double) and rounds integers beyond 2^53. `readTreeJson` carries every number that is not a
 * safe integer literal through as a tagged string, and `writeTreeJson` writes it back exactly
 * as DuckDB wrote it. The tag holds a per-process random nonce and only a well-formed number
 * is ever written back bare, so a string constant in user SQL can neither pose as a number
 * nor inject JSON structure.
 */
const TREE_NUMBER_TAG = `\u0001dpnum:${crypto.randomBytes(12).toString('hex')}:`;
const TREE_TOKENS = /"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?/g;
/** A tagged number as JSON.stringify writes it; only a well-formed number matches. */
const TAGGED_IN_JSON = new RegExp(`"${JSON.stringify(TREE_NUMBER_TAG).slice(1, -1).replace(/\\/g, '\\\\')}(-?\\d+(?:\\.\\d+)?(?:[eE][+-]?\\d+)?)"`, 'g');

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function readTreeJson(text: string): any {
  const protectedText = text.replace(TREE_TOKENS, (m) => {
    if (m.startsWith('"')) return m;
    const plainInt = /^-?\d+$/.test(m) && Number.isSafeInteger(Number(m));
    return plainInt ? m : JSON.stringify(TREE_NUMBER_TAG + m);
  });
  return JSON.parse(protectedText);
}

/** JSON text of a tree from readTreeJson (a plain JSON.parse tree comes out as JSON.stringify writes it). */
export function writeTreeJson(tree: unknown): string {
  return JSON.stringify(tree).replace(TAGGED_IN_JSON, '$1');
}
