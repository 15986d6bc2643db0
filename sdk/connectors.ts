/**
 * The connector contract: a connector type is a contribution to the connectors plugin's
 * CONNECTOR_TYPES extension point. The thirteen built-in types and third-party ones alike
 * implement it; the connectors plugin owns setup, CDC state, syncing and the routes.
 */
import type { ProjectInfo } from './config.js';
import type { DatabasePort } from './db.js';
import { createExtensionPoint, createHookRef } from './refs.js';

/**
 * JSON schema (draft-07 object schema) of a type's parameters. A property marked
 * `"x-secret": true` is a secret: written to `.env` as `<CONNECTION_NAME>_<PARAM>`, referenced as
 * `${VAR}` in project.yml, never echoed in a response, a script or a log.
 */
export type ConnectorParamsSchema = Record<string, unknown>;

export interface ConnectorColumn {
  name: string;
  /** DuckDB type name (`BIGINT`, `VARCHAR`, `TIMESTAMP`, `DECIMAL(18,2)`...). */
  type: string;
}

export interface DiscoveredTable {
  /** Source schema or folder, when the source has one. */
  schema?: string;
  name: string;
  columns: ConnectorColumn[];
}

/**
 * What the connectors plugin hands a type besides its config: the project (relative paths such as
 * a csv folder resolve inside it) and DuckDB (types that read files through DuckDB's own readers:
 * `read_csv`, `read_parquet`, `read_json`). Always passed by the connectors plugin; optional so a
 * test may call a type without it.
 */
export interface ConnectorRuntime {
  project: ProjectInfo;
  db: DatabasePort;
}

/** One read of one source table; `cursor` set for incremental (high-watermark) reads. */
export interface ConnectorReadRequest {
  table: string;
  schema?: string;
  /** Only these columns, when given. */
  columns?: string[];
  /** High watermark: rows with `cursor.column > cursor.after` (all rows when `after` is null), ordered by it. */
  cursor?: { column: string; after: unknown };
  /**
   * A custom SELECT in the source's own dialect (project.yml `source_query`) read instead of the
   * whole table; with `cursor`, the type filters and orders its result by the cursor column.
   */
  sourceQuery?: string;
  /** Preferred batch size (rows). */
  batchRows?: number;
  signal: AbortSignal;
  runtime?: ConnectorRuntime;
}

/**
 * A batch of rows in `columns` order; memory stays bounded by one batch. A reader yields at least
 * one batch, even when the source has no rows (then `rows` is empty), so the target table gets its
 * columns.
 */
export interface ConnectorBatch {
  columns: ConnectorColumn[];
  rows: unknown[][];
}

/**
 * A column of a CSV source: its DuckDB type, and when DuckDB's CSV reader cannot parse the
 * source's text as that type directly, the type it reads (`csvType`, VARCHAR) and the SQL that
 * converts the read value (`fromCsv(quotedColumn)`, e.g. `unhex(substr("data", 3))` for bytea).
 */
export interface ConnectorCsvColumn extends ConnectorColumn {
  csvType?: string;
  fromCsv?(quotedColumn: string): string;
}

/**
 * A type's bulk path (optional `readCsv`): the rows as CSV text, parsed by DuckDB's own CSV
 * reader from a pipe while the source still sends, so a sync does no per-row work in JS
 * (postgres: `COPY … TO STDOUT`). Memory stays bounded by the pipe's buffer.
 */
export interface ConnectorCsvSource {
  columns: ConnectorCsvColumn[];
  /**
   * Writes every row as CSV (RFC 4180, comma, `"` quotes doubled, no header; NULL is an unquoted
   * empty field, an empty string a quoted one `""`) into `sink`, then ends it. Honours the sink's
   * backpressure; rejects when the source fails or the sink errors (the reader went away).
   */
  writeTo(sink: NodeJS.WritableStream): Promise<void>;
  /** Frees the source (connection, transaction), whatever happened; safe to call twice. */
  close(): Promise<void>;
}

export interface ConnectorTestResult {
  ok: boolean;
  /** On failure, the cause in words: `connection refused`, `host not found`, `authentication failed`. */
  message: string;
}

export interface ConnectorType {
  /** Identifier used in `dp connect <type>` and project.yml (`postgres`, `rest_api`). */
  type: string;
  label: string;
  description?: string;
  params: ConnectorParamsSchema;
  /** Never hangs past its timeout; never throws for an unreachable source (answers ok:false). */
  testConnection(config: Record<string, unknown>, signal: AbortSignal, runtime?: ConnectorRuntime): Promise<ConnectorTestResult>;
  discover(config: Record<string, unknown>, signal: AbortSignal, runtime?: ConnectorRuntime): Promise<DiscoveredTable[]>;
  /**
   * The TypeScript source of `ingest/connector_<name>.ts` for these tables. Secrets appear only as
   * `ctx.env.<VAR>` / `${VAR}` references, never as values.
   */
  generateScript(connection: { name: string; type: string; config: Record<string, unknown> }, tables: string[], targetSchema: string): string;
  /** The streaming reader syncs and generated scripts use. */
  read(config: Record<string, unknown>, request: ConnectorReadRequest): AsyncIterable<ConnectorBatch>;
  /**
   * Optional bulk path a sync prefers over `read`: the same rows (cursor filter included) as CSV.
   * For a cursor read the rows need not be ordered: the sync takes the greatest cursor value itself.
   */
  readCsv?(config: Record<string, unknown>, request: ConnectorReadRequest): Promise<ConnectorCsvSource>;
  /**
   * Optional path a sync prefers over both: one SELECT over DuckDB's own readers (a file in the
   * project), cursor filter included, that the sync runs as `INSERT … SELECT` in one engine call.
   * No row passes through JS, so a large sync never holds the server's event loop (issue 34).
   */
  readSql?(config: Record<string, unknown>, request: ConnectorReadRequest): string;
  /** CDC modes the type supports; default `['full_refresh']`. */
  cdcModes?: CdcMode[];
  /**
   * For `file_tracking`: the source's modification time of a table (a file's mtime, an object's
   * Last-Modified) in seconds since the epoch, or null when unknown (then the table always syncs).
   */
  modifiedTime?(config: Record<string, unknown>, table: string, signal: AbortSignal, runtime?: ConnectorRuntime): Promise<number | null>;
}

export type CdcMode = 'high_watermark' | 'file_tracking' | 'full_refresh';

/** One table's sync result (docs/decisions.md "CDC"). */
export interface CDCSyncResult {
  table: string;
  status: 'success' | 'skipped' | 'error';
  rows_synced: number;
  duration_ms: number;
  cdc_mode: CdcMode;
  watermark_before: string | null;
  watermark_after: string | null;
  error: string | null;
}

/**
 * The `connectors` field of a script's ctx (SCRIPT_CONTEXT): what a generated
 * `ingest/connector_<name>.ts` calls. `sync` throws a DpError 404 for an unknown connector and
 * otherwise answers per table (a failed table has status `error`; the others still sync).
 */
export interface ConnectorsScriptApi {
  sync(connectorName: string, options?: { tables?: string[] }): Promise<CDCSyncResult[]>;
}

/**
 * The standard generated script: it delegates to the connectors plugin (`ctx.connectors.sync`),
 * so project.yml stays the one place a connector is configured and the script never holds a
 * secret. `targets` (`landing.orders`) are named in its header so the full DAG links the script to
 * the tables it loads. Types use it from `generateScript` unless they need something else.
 */
export function connectorScript(connection: { name: string; type: string }, tables: string[], targetSchema: string): string {
  const name = JSON.stringify(connection.name);
  const targets = tables.map((t) => `${targetSchema}.${t.includes('.') ? t.slice(t.lastIndexOf('.') + 1) : t}`);
  return [
    '/**',
    ` * Connector ${connection.name} (type ${connection.type}), generated by dp. Regenerate with`,
    ` * \`dp connectors regenerate ${connection.name}\`; change tables and CDC modes under \`connectors.${connection.name}\``,
    ' * in project.yml. Credentials stay in .env (referenced there as ${VAR}), never here.',
    ' *',
    ...targets.map((t) => ` * Loads INSERT INTO ${t}`),
    ' */',
    'export default async (ctx: { connectors: { sync(name: string): Promise<Array<{ table: string; status: string; rows_synced: number; error: string | null }>> }; log: { info(m: string): void } }) => {',
    `  const results = await ctx.connectors.sync(${name});`,
    '  for (const r of results) ctx.log.info(`${r.table}: ${r.status}, ${r.rows_synced} rows`);',
    '  const failed = results.filter((r) => r.status === \'error\');',
    "  if (failed.length) throw new Error(failed.map((r) => `${r.table}: ${r.error}`).join('; '));",
    '  return results;',
    '};',
    '',
  ].join('\n');
}

export const CONNECTOR_TYPES = createExtensionPoint<ConnectorType>('connectors.types');

export interface SyncContext {
  readonly connector: string;
  readonly table: string;
  readonly cdcMode: string;
  /** Aborted on shutdown, maintenance or an environment switch (the connector's `ctx.signal`). */
  readonly signal?: AbortSignal;
  status: 'success' | 'skipped' | 'error';
  rowsSynced: number;
  error?: string;
}

/** Fired by the connectors plugin after it synced one table (CDC). */
export const TABLE_SYNCED = createHookRef<[SyncContext]>('connectors.tableSynced');
