/**
 * What a model's `@config` line may say, per materialization, read into a typed configuration.
 *
 *   table        CREATE OR REPLACE TABLE ... AS <sql> (the default)
 *   view         CREATE OR REPLACE VIEW ... AS <sql>
 *   incremental  a table that each run adds the new rows to (unique_key, incremental_strategy,
 *                incremental_filter, on_schema_change)
 *   scd2         a table keeping the history of slowly changing rows (type 2): unique_key,
 *                strategy=timestamp + updated_at, or strategy=check + check_cols, hard_deletes.
 *                Not called "snapshot": that word is the versioning plugin's project snapshots.
 *
 * A key the materialization does not know, or a value outside its set, is an error naming the
 * file and line: a misspelt `unique_kye` must never be ignored.
 */

export const MATERIALIZATIONS = ['table', 'view', 'incremental', 'scd2'] as const;
export type Materialization = (typeof MATERIALIZATIONS)[number];

export const INCREMENTAL_STRATEGIES = ['append', 'merge', 'delete+insert'] as const;
export type IncrementalStrategy = (typeof INCREMENTAL_STRATEGIES)[number];
export const SCHEMA_CHANGE_POLICIES = ['fail', 'append_new_columns', 'sync_all_columns'] as const;
export type SchemaChangePolicy = (typeof SCHEMA_CHANGE_POLICIES)[number];
export const SCD2_STRATEGIES = ['timestamp', 'check'] as const;
export const HARD_DELETE_POLICIES = ['ignore', 'invalidate'] as const;

/** The placeholder an incremental_filter uses for the model's own table (dbt's spelling). */
export const THIS_PLACEHOLDER = /\{\{\s*this\s*\}\}/g;

export interface IncrementalConfig {
  uniqueKey: string[];
  strategy: IncrementalStrategy;
  /** A boolean SQL expression over the model's rows; `{{ this }}` names the existing table. */
  filter: string | null;
  onSchemaChange: SchemaChangePolicy;
}

export interface Scd2Config {
  uniqueKey: string[];
  strategy: 'timestamp' | 'check';
  /** The column whose increase marks a new version (strategy=timestamp). */
  updatedAt: string | null;
  /** The columns whose change marks a new version (strategy=check); null means every column. */
  checkCols: string[] | null;
  hardDeletes: 'ignore' | 'invalidate';
}

export interface ModelConfig {
  materialized: Materialization;
  incremental: IncrementalConfig | null;
  scd2: Scd2Config | null;
}

export interface ConfigProblem {
  line: number | undefined;
  key: string;
  code: 'invalid_materialization' | 'invalid_config';
  message: string;
}

/** `unique_key` on a table or view tells `dp diff` how to match rows. */
// dialect, order_by and sharding_key are read by a warehouse target (docs/targets.md); DuckDB ignores them.
const COMMON_KEYS = ['materialized', 'schema', 'unique_key', 'dialect', 'order_by', 'sharding_key'];
const KEYS: Record<Materialization, string[]> = {
  table: COMMON_KEYS,
  view: COMMON_KEYS,
  incremental: [...COMMON_KEYS, 'incremental_strategy', 'incremental_filter', 'on_schema_change'],
  scd2: [...COMMON_KEYS, 'strategy', 'updated_at', 'check_cols', 'hard_deletes'],
};

/** The materialization that knows a key, for the hint in an error. */
function ownerOf(key: string): Materialization | null {
  for (const m of ['incremental', 'scd2'] as const) if (KEYS[m].includes(key)) return m;
  return null;
}

/** `id`, `a, b`, `(a, b)` or `[a, b]` as a list of column names. */
export function columnList(value: string): string[] {
  return value
    .replace(/^[([]\s*|\s*[)\]]$/g, '')
    .split(',')
    .map((s) => s.trim().replace(/^"(.*)"$/, '$1'))
    .filter(Boolean);
}

/**
 * Reads `@config` into a ModelConfig. `problems` receives every error (with its line); the
 * returned configuration is usable as far as it could be read (a bad value falls back to the
 * default so that the remaining keys are still checked).
 */
export function readModelConfig(config: Record<string, string>, lines: Record<string, number>, problems: ConfigProblem[]): ModelConfig {
  const problem = (key: string, message: string, code: ConfigProblem['code'] = 'invalid_config') => problems.push({ key, line: lines[key], code, message });
  const oneOf = <T extends string>(key: string, allowed: readonly T[], fallback: T): T => {
    const raw = config[key];
    if (raw === undefined) return fallback;
    const value = raw.toLowerCase();
    if ((allowed as readonly string[]).includes(value)) return value as T;
    problem(key, `${key} must be one of ${allowed.map((a) => `'${a}'`).join(', ')}, got '${raw}'`);
    return fallback;
  };
  const rawMaterialized = (config.materialized ?? 'table').toLowerCase();
  let materialized: Materialization = 'table';
  if ((MATERIALIZATIONS as readonly string[]).includes(rawMaterialized)) materialized = rawMaterialized as Materialization;
  else {
    const hint = rawMaterialized === 'snapshot' ? " (slowly changing history is materialized=scd2; 'snapshot' is the versioning plugin's project snapshots)" : '';
    problem('materialized', `materialized must be one of ${MATERIALIZATIONS.map((m) => `'${m}'`).join(', ')}, got '${config.materialized}'${hint}`, 'invalid_materialization');
  }
  for (const key of Object.keys(config)) {
    if (KEYS[materialized].includes(key)) continue;
    const owner = ownerOf(key);
    problem(key, owner ? `@config ${key} applies to materialized=${owner} only (this model is ${materialized})` : `unknown @config key '${key}' (known for materialized=${materialized}: ${KEYS[materialized].join(', ')})`);
  }
  // SQL in another dialect runs on that target as written (sdk nativeDialect); a misspelt dialect must not build as DuckDB SQL.
  oneOf('dialect', ['duckdb', 'clickhouse'], 'duckdb');
  const uniqueKey = config.unique_key !== undefined ? columnList(config.unique_key) : [];
  if (config.unique_key !== undefined && uniqueKey.length === 0) problem('unique_key', 'unique_key names no column');

  let incremental: IncrementalConfig | null = null;
  let scd2: Scd2Config | null = null;
  if (materialized === 'incremental') {
    const strategy = oneOf('incremental_strategy', INCREMENTAL_STRATEGIES, uniqueKey.length ? 'merge' : 'append');
    if (strategy !== 'append' && uniqueKey.length === 0) {
      problem(config.incremental_strategy !== undefined ? 'incremental_strategy' : 'materialized', `incremental_strategy=${strategy} needs unique_key (the columns that identify a row)`);
    }
    const filter = config.incremental_filter?.trim() || null;
    if (config.incremental_filter !== undefined && !filter) problem('incremental_filter', 'incremental_filter is empty');
    incremental = { uniqueKey, strategy, filter, onSchemaChange: oneOf('on_schema_change', SCHEMA_CHANGE_POLICIES, 'fail') };
  } else if (materialized === 'scd2') {
    if (uniqueKey.length === 0) problem(config.unique_key !== undefined ? 'unique_key' : 'materialized', 'materialized=scd2 needs unique_key (the columns that identify a row)');
    const strategy = oneOf('strategy', SCD2_STRATEGIES, config.updated_at !== undefined ? 'timestamp' : 'check');
    const updatedAt = config.updated_at?.trim() || null;
    if (strategy === 'timestamp' && !updatedAt) problem(config.strategy !== undefined ? 'strategy' : 'materialized', 'strategy=timestamp needs updated_at=<column>');
    if (strategy === 'check' && config.updated_at !== undefined) problem('updated_at', 'updated_at applies to strategy=timestamp; strategy=check compares check_cols');
    if (strategy === 'timestamp' && config.check_cols !== undefined) problem('check_cols', 'check_cols applies to strategy=check; strategy=timestamp compares updated_at');
    const rawCols = config.check_cols?.trim();
    const checkCols = !rawCols || rawCols.toLowerCase() === 'all' ? null : columnList(rawCols);
    scd2 = { uniqueKey, strategy, updatedAt, checkCols, hardDeletes: oneOf('hard_deletes', HARD_DELETE_POLICIES, 'ignore') };
  }
  return { materialized, incremental, scd2 };
}

/** The kind of relation a materialization leaves in the warehouse. */
export function relationKind(m: Materialization): 'table' | 'view' {
  return m === 'view' ? 'view' : 'table';
}
