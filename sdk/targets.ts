/**
 * The warehouse-target port: where a project's models, seeds and queries run. The local DuckDB
 * file is its first implementation (`duckdbFileTarget`, a thin view over the `DatabasePort`, so
 * nothing changes for a project without a target); the target-clickhouse plugin is the second.
 * dp's own state (run history, parse cache, users, masking policies, lineage) always stays in
 * the DuckDB file: the control plane.
 *
 * An environment names its target in project.yml:
 *
 *   environments:
 *     prod:
 *       target: { type: clickhouse, url: http://127.0.0.1:8123, cluster: analytics, database: shop,
 *                 user: default, password: ${CLICKHOUSE_PASSWORD} }
 */
import type { DatabasePort, TabularResult } from './db.js';
import { quoteIdent, quoteLiteral } from './sql.js';
import { createServiceRef } from './refs.js';
import type { ModelBuildResult, ModelInfo, SeedInfo, SeedLoadResult, TransformSummary } from './models.js';

import type { CatalogRelation, CatalogSource } from './db-catalog.js';

export type TargetDialect = 'duckdb' | 'clickhouse';

/** What the connected engine can run, read from its version (never assumed from the type alone). */
export interface TargetCapabilities {
  /** The engine's version string, e.g. `18.16.1`. */
  version: string;
  windowFunctions: boolean;
  /** `WITH name AS (SELECT ...)`. */
  ctes: boolean;
  groupByAll: boolean;
  /** An atomic exchange of two tables in one statement (ClickHouse `EXCHANGE TABLES`, 21.8+ with Atomic databases). */
  exchangeTables: boolean;
  /** Multi-statement transactions (DuckDB yes, ClickHouse no). */
  transactions: boolean;
}

/** `environments.<name>.target` as written (after `${VAR}` expansion). */
export interface TargetConfig {
  type: 'duckdb' | 'clickhouse';
  url?: string;
  cluster?: string;
  database?: string;
  user?: string;
  password?: string;
}

export interface TargetQueryOptions {
  /** The id the engine knows the query by: `interrupt(queryId)` stops it. */
  queryId?: string;
  /** Aborting stops the query on the engine (ClickHouse: `KILL QUERY`; closing HTTP is not enough). */
  signal?: AbortSignal;
  /** Engine settings for this query (ClickHouse settings such as `join_use_nulls`). */
  settings?: Record<string, string | number>;
  /** Values of the query's parameters, sent beside its text (ClickHouse `{name:Type}` with `param_name`), never in it. */
  params?: Record<string, unknown>;
}

export interface WarehouseTarget extends CatalogSource {
  readonly dialect: TargetDialect;
  /** The database (ClickHouse) or catalog (DuckDB) models are built in. */
  readonly database: string;
  /** The cluster of the servers' `remote_servers` models are spread over, or null. */
  readonly cluster: string | null;
  capabilities(): Promise<TargetCapabilities>;
  /** One read; the whole result. */
  query(sql: string, options?: TargetQueryOptions): Promise<TabularResult>;
  /** One read as chunks of rows. */
  stream(sql: string, options?: TargetQueryOptions): Promise<{ columns: string[]; column_types: string[]; chunks: AsyncIterable<unknown[][]> }>;
  /** One statement that returns nothing (DDL, INSERT ... SELECT). */
  command(sql: string, options?: TargetQueryOptions): Promise<void>;
  /** Appends rows to an existing table in large batches (never row by row). */
  bulkInsert(table: { schema: string; name: string }, columns: string[], rows: AsyncIterable<unknown[][]> | unknown[][]): Promise<{ rows: number }>;
  /** Stops the query with this id on the engine. */
  interrupt(queryId: string): Promise<void>;
  /** A relation's metrics in one aggregate pass on the engine (the quality plugin's profile of a built model): rows, and per column its non-NULL and distinct counts. */
  profile(relation: { schema: string; name: string }, columns: string[]): Promise<RelationMetrics>;
  /** An identifier quoted for this engine. */
  ident(name: string): string;
  /** A string literal quoted for this engine. */
  literal(value: string): string;
  close(): Promise<void>;
}

/** What `WarehouseTarget.profile` counts: never a value of the relation. */
export interface RelationMetrics {
  rows: number;
  columns: Array<{ name: string; non_null: number; distinct: number }>;
}

/** The metrics of a profile's one row: `[rows, non-NULL of column 1, distinct of column 1, ...]`. */
export function metricsOfRow(row: unknown[], columns: string[]): RelationMetrics {
  return { rows: Number(row[0] ?? 0), columns: columns.map((name, i) => ({ name, non_null: Number(row[1 + 2 * i] ?? 0), distinct: Number(row[2 + 2 * i] ?? 0) })) };
}

/**
 * What the caller of a run on a target does around each model (the models plugin: run history,
 * events, the afterModelBuild hook), so a run on the target behaves as one on the DuckDB file.
 */
export interface TargetRunHooks {
  /** The run's id (recorded by the caller). */
  runId: string;
  /** How many models the run takes, once they are selected. */
  planned?(total: number): void;
  /** A model starts building (not called for a skipped or upstream-failed one). */
  started?(model: ModelInfo): void;
  /**
   * A model was built or failed: the caller's after-build work, which may flag it (`assertion_failed`).
   * Its answer is the model's result; a model it flags is not a failure for its downstream.
   */
  finished?(model: ModelInfo, result: ModelBuildResult): Promise<ModelBuildResult>;
}

/**
 * The DuckDB file as a target: every call goes to the kernel's `DatabasePort` unchanged (same
 * connection pool, sandbox, write lock and interrupts). Interrupt by id finds the connection
 * that runs the query.
 */
export function duckdbFileTarget(db: DatabasePort): WarehouseTarget {
  const running = new Map<string, { interrupt(): void }>();
  const onConnection = async <T>(options: TargetQueryOptions | undefined, fn: (c: Parameters<Parameters<DatabasePort['withConnection']>[0]>[0]) => Promise<T>): Promise<T> =>
    db.withConnection(async (c) => {
      const id = options?.queryId;
      const stop = () => c.interrupt();
      if (id) running.set(id, c);
      options?.signal?.addEventListener('abort', stop);
      try {
        return await fn(c);
      } finally {
        if (id) running.delete(id);
        options?.signal?.removeEventListener('abort', stop);
      }
    });
  return {
    dialect: 'duckdb',
    database: 'main',
    cluster: null,
    async capabilities() {
      const version = String((await db.value<string>('SELECT version()')) ?? '');
      return { version, windowFunctions: true, ctes: true, groupByAll: true, exchangeTables: false, transactions: true };
    },
    query: (sql, options) => onConnection(options, (c) => c.query(sql)),
    async stream(sql, options) {
      const c = await db.connect();
      const id = options?.queryId;
      if (id) running.set(id, c);
      try {
        const s = await c.stream(sql);
        const chunks = (async function* () {
          try {
            yield* s.chunks;
          } finally {
            if (id) running.delete(id);
            c.close();
          }
        })();
        return { columns: s.columns, column_types: s.column_types, chunks };
      } catch (e) {
        if (id) running.delete(id);
        c.close();
        throw e;
      }
    },
    command: (sql, options) => onConnection(options, (c) => c.run(sql)),
    async bulkInsert(table, columns, rows) {
      const result = await db.bulkLoad({ schema: table.schema, table: table.name, mode: 'append' }, async (w) => {
        const ordered = w.columns.map((name) => columns.indexOf(name));
        for await (const batch of batchesOf(rows)) await w.appendRows(batch.map((r) => ordered.map((i) => (i < 0 ? null : r[i]))));
      });
      return { rows: result.rows };
    },
    async interrupt(queryId) {
      running.get(queryId)?.interrupt();
    },
    async profile(relation, columns) {
      const aggregates = ['count(*)', ...columns.flatMap((c) => [`count(${quoteIdent(c)})`, `count(DISTINCT ${quoteIdent(c)})`])];
      return metricsOfRow((await db.query(`SELECT ${aggregates.join(', ')} FROM ${quoteIdent(relation.schema)}.${quoteIdent(relation.name)}`)).rows[0] ?? [], columns);
    },
    async relations(opts) {
      const rows = await db.all<CatalogRelation>(
        `SELECT schema_name AS schema, table_name AS name, 'table' AS kind FROM duckdb_tables() WHERE database_name = current_database() AND NOT internal
         UNION ALL SELECT schema_name, view_name, 'view' FROM duckdb_views() WHERE database_name = current_database() AND NOT internal
         ORDER BY 1, 2`,
      );
      return opts?.schema ? rows.filter((r) => r.schema === opts.schema) : rows;
    },
    async columns(opts) {
      const rows = await db.all<{ schema: string; table: string; name: string; type: string; nullable: boolean; ordinal: number | bigint }>(
        `SELECT schema_name AS schema, table_name AS "table", column_name AS name, data_type AS type, is_nullable AS nullable, column_index AS ordinal
           FROM duckdb_columns() WHERE database_name = current_database() AND NOT internal ORDER BY 1, 2, column_index`,
      );
      return rows
        .filter((r) => (!opts?.schema || r.schema === opts.schema) && (!opts?.table || r.table === opts.table))
        .map((r) => ({ ...r, ordinal: Number(r.ordinal) }));
    },
    ident: quoteIdent,
    literal: quoteLiteral,
    async close() {},
  };
}

/** Rows given as one array are one batch; an async iterable is a batch per item. */
export function batchesOf(rows: AsyncIterable<unknown[][]> | unknown[][]): AsyncIterable<unknown[][]> {
  if (!Array.isArray(rows)) return rows;
  return (async function* () {
    yield rows;
  })();
}

/** Options of `WarehouseTargetService.transform`. */
export interface TargetTransformOptions {
  targets?: string[] | null;
  /** Rebuild unchanged models too. */
  force?: boolean;
  fullRefresh?: boolean;
  /** Models discovery refused (a parse error, naming the file), by lower-case `schema.name`: reported as errors, never built. */
  invalid?: ReadonlyMap<string, string>;
  /** Models built at once, each after the models it reads (the target's default when not given). */
  concurrency?: number;
  /** Called as each model finishes, in the order they finish. */
  onModel?: (result: ModelBuildResult, done: number, total: number) => void;
  /** The caller's run history, events and after-build hooks (the models plugin). */
  hooks?: TargetRunHooks;
}

/** What a target plugin offers: the active environment's target, and runs on it. */
export interface WarehouseTargetService {
  /** The active environment's target config, or null when it builds into the DuckDB file. */
  config(): TargetConfig | null;
  /** The active environment's target (the DuckDB file when it names none). */
  target(): Promise<WarehouseTarget>;
  /** `dp transform` on the active environment's target (only called when config() is not null); `hooks` lets the caller record the run and fire its hooks. */
  transform(models: ModelInfo[], options: TargetTransformOptions): Promise<TransformSummary>;
  /** `dp seed` on the active environment's target, in large batches. */
  loadSeeds(seeds: SeedInfo[], options: { schema?: string; targets?: string[] | null }): Promise<SeedLoadResult[]>;
  /**
   * Rows read on this machine (a connector sync; columns with DuckDB types) landed in
   * `schema.table` on the active target in large batches: `replace` builds a new table and swaps
   * it in, `append` adds them in one statement once all have arrived (a failed load adds none).
   */
  loadRows(load: { schema: string; table: string; mode: 'replace' | 'append'; columns: ReadonlyArray<{ name: string; type: string }>; rows: AsyncIterable<unknown[][]> }): Promise<{ rows: number }>;
  /** The greatest value of `column` in `schema.table` on the active target as text; null when the table is absent or holds none (a high-watermark sync's watermark there). */
  greatestValue(schema: string, table: string, column: string): Promise<string | null>;
  /**
   * A read written in DuckDB SQL (a check's, a contract's, an assertion's) run where the models
   * are: on the DuckDB file as is; on ClickHouse checked for constructs the server lacks,
   * transpiled and verified with `DESCRIBE` like a model body (once per text). `what` names the
   * check in an error (`unsupported_on_target`, `untranslatable_sql`).
   */
  readDuckdbSql(sql: string, what: string): Promise<TabularResult>;
  /** `dp check`'s binding of a model on the active target: refused, transpiled and described as a build would, nothing built. */
  verifyModel(model: ModelInfo): Promise<void>;
  /** What dp built on the active target (recorded in the local file), by lower-case `schema.name`: the basis of skipping unchanged models. */
  builtStates(): Promise<Map<string, { kind: 'model' | 'seed'; content_hash: string; state_hash: string; materialized: string | null }>>;
  /**
   * Refuses (DpError 400 `not_on_target`) a DuckDB-only feature (versioning, backups, notebook
   * TypeScript cells, a sync's cdc_mode the target lacks) when the active environment builds into a ClickHouse target.
   */
  assertLocalOnly(feature: string): void;
}

export const WAREHOUSE_TARGET_SERVICE = createServiceRef<WarehouseTargetService>('warehouse-target');

/**
 * The target dialect a model is written in when it is not DuckDB SQL (`-- @config
 * dialect=clickhouse`): it runs on such a target as written, and dp neither transpiles nor
 * analyses it (lineage and masking say "not analysed"). Null for DuckDB SQL, the default.
 */
export function nativeDialect(config: Readonly<Record<string, string>>): Exclude<TargetDialect, 'duckdb'> | null {
  return (config.dialect ?? '').toLowerCase() === 'clickhouse' ? 'clickhouse' : null;
}
