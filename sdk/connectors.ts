/**
 * The connector contract: a connector type is a contribution to the connectors plugin's
 * CONNECTOR_TYPES extension point. The thirteen built-in types and third-party ones alike
 * implement it; the connectors plugin owns setup, CDC state, syncing and the routes.
 */
import { createExtensionPoint } from './plugin.js';

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

/** One read of one source table; `cursor` set for incremental (high-watermark) reads. */
export interface ConnectorReadRequest {
  table: string;
  schema?: string;
  /** Only these columns, when given. */
  columns?: string[];
  /** High watermark: rows with `cursor.column > cursor.after` (all rows when `after` is null), ordered by it. */
  cursor?: { column: string; after: unknown };
  /** Preferred batch size (rows). */
  batchRows?: number;
  signal: AbortSignal;
}

/** A batch of rows in `columns` order; memory stays bounded by one batch. */
export interface ConnectorBatch {
  columns: ConnectorColumn[];
  rows: unknown[][];
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
  testConnection(config: Record<string, unknown>, signal: AbortSignal): Promise<ConnectorTestResult>;
  discover(config: Record<string, unknown>, signal: AbortSignal): Promise<DiscoveredTable[]>;
  /**
   * The TypeScript source of `ingest/connector_<name>.ts` for these tables. Secrets appear only as
   * `ctx.env.<VAR>` / `${VAR}` references, never as values.
   */
  generateScript(connection: { name: string; type: string; config: Record<string, unknown> }, tables: string[], targetSchema: string): string;
  /** The streaming reader syncs and generated scripts use. */
  read(config: Record<string, unknown>, request: ConnectorReadRequest): AsyncIterable<ConnectorBatch>;
  /** CDC modes the type supports; default `['full_refresh']`. */
  cdcModes?: Array<'high_watermark' | 'file_tracking' | 'full_refresh'>;
}

export const CONNECTOR_TYPES = createExtensionPoint<ConnectorType>('connectors.types');
