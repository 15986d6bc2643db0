/**
 * A user query run on a warehouse target instead of the DuckDB file (issue 31, item 5). The
 * kernel's guarded runner keeps every step of a query (interceptQuery, read-only validation,
 * beforeQuery's masking rewrite, final checks, slots and the role's deadline) and hands only the
 * execution to the target: the SQL stays DuckDB SQL up to there, parsed by DuckDB, resolved
 * against the target's catalog, and the target transpiles the final (masked) text itself.
 */
import type { CatalogColumn } from './db-catalog.js';
import type { TabularResult } from './db.js';
import { createServiceRef } from './refs.js';

/** A table reference as written (empty strings where the SQL gave no catalog or schema). */
export interface QueryTargetRef {
  catalog: string;
  schema: string;
  table: string;
}

export interface QueryTargetRun {
  params?: Record<string, unknown>;
  /** Aborted at the role's deadline or when the client leaves: the target stops the query on its engine. */
  signal: AbortSignal;
  /** Milliseconds left of the role's deadline (the engine's own time limit, as a second line). */
  remainingMs: number;
  /**
   * Checks a DuckDB reading of the text the target is about to run (the transpiled SQL read back
   * into DuckDB SQL) with the same validation and final checks (masking) the DuckDB text passed:
   * what the transpiler changed must not have dropped a mask.
   */
  verify(duckdbSql: string): Promise<void>;
}

export interface QueryTarget {
  /** Distinguishes targets in caches (dialect and address, never a secret). */
  readonly id: string;
  /** Every column a query on the target can name, with DuckDB type names (masking plans its masks on these). */
  resolvableColumns(): Promise<{ current: string; columns: CatalogColumn[] }>;
  /** The references among refs the target's catalog does not hold (it may refuse one outright with its own error). */
  unresolved(refs: QueryTargetRef[]): Promise<QueryTargetRef[]>;
  /** One page of the final DuckDB SQL's result, transpiled and run on the target: `limit` rows from `offset`. */
  read(sql: string, window: { offset: number; limit: number }, run: QueryTargetRun): Promise<TabularResult>;
  /** The whole result of the final DuckDB SQL as chunks of rows. */
  stream(sql: string, run: QueryTargetRun): Promise<{ columns: string[]; column_types: string[]; chunks: AsyncIterable<unknown[][]> }>;
}

/** What a target plugin offers the query surfaces (`dp query`, `/api/query`, the SQL page). */
export interface QueryTargetService {
  /** The active environment's target for user queries, or null when queries run on the DuckDB file. */
  active(): Promise<QueryTarget | null>;
  /** Schemas, tables and their columns on the active target, for the SQL page's browser (null without a target). */
  browse(): Promise<{ schemas: string[]; tables: Array<{ schema: string; name: string; type: string; columns: Array<{ name: string; type: string }> }> } | null>;
}

export const QUERY_TARGET_SERVICE = createServiceRef<QueryTargetService>('query-target');
