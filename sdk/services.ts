/**
 * Interfaces of the services and extension points plugins offer each other, with their typed
 * refs (`ctx.services.get(MODELS_SERVICE)`, `ctx.extend(MODEL_CHECKS, ...)`). A plugin depends
 * on these types only, never on another plugin's files.
 */
import type { Caller } from './auth.js';
import type { ModelBuildStatus } from './hooks.js';
import type { Materialization } from './models.js';
import { createExtensionPoint, createServiceRef, type QueryStopSignal } from './plugin.js';
import type { QueryTarget } from './query-target.js';

export interface SourceTable {
  name: string;
  description?: string;
  loaded_at_column?: string;
  columns?: Array<{ name: string; description?: string }>;
}

/** A `sources:` entry of project.yml (owned by the models plugin), `schema` defaulting to `name`. */
export interface SourceConfig {
  name: string;
  schema: string;
  description?: string;
  connection?: string;
  freshness_hours?: number;
  tables: SourceTable[];
}

/** An `exposures:` entry of project.yml (owned by the lineage plugin). */
export interface ExposureConfig {
  name: string;
  description?: string;
  owner?: string;
  type?: string;
  url?: string;
  depends_on: string[];
}

export interface ModelInfo {
  /** Bare model name (file stem). */
  name: string;
  schema: string;
  /** `schema.name`. */
  full_name: string;
  materialized: Materialization;
  /**
   * The kind of relation the model leaves in the warehouse (incremental and scd2 models are
   * tables). The models service always fills it; absent means `materialized === 'view' ? 'view' : 'table'`.
   */
  kind?: 'table' | 'view';
  /** Upstream relations as `schema.name` (models, seeds, sources). */
  depends_on: string[];
  /** Project-relative path, e.g. `transform/staging/stg_orders.sql`. */
  path: string;
  /** SHA-256 of the file. */
  content_hash: string;
  /** The SQL with directive comments as written. */
  sql: string;
  /**
   * The model's statement as DuckDB's parser serializes it (for analysis such as lineage): the
   * SQL without directives and final semicolon, a simplified PIVOT given a stand-in IN list.
   * The models service always fills it; absent means `sql`.
   */
  query?: string;
  /** Inline assertion expressions from `@assert` / `assert:`. */
  assertions: string[];
  /** Raw `@config` key/values. */
  config: Record<string, string>;
  /**
   * False for a model written natively for a target (`@config dialect=clickhouse`) whose SQL no
   * parser read: `depends_on` is only what `@depends_on` declares, so what it reads is not known.
   */
  referencesKnown?: boolean;
}

export interface SeedInfo {
  name: string;
  schema: string;
  full_name: string;
  path: string;
  content_hash: string;
}

export interface DagNode {
  id: string;
  type: 'source' | 'seed' | 'ingest' | 'import' | 'table' | 'view' | 'exposure';
  label: string;
  [k: string]: unknown;
}

export interface DagEdge {
  source: string;
  target: string;
}

export interface ModelBuildResult {
  model: string;
  status: ModelBuildStatus;
  duration_ms: number;
  error?: string;
  extras?: Record<string, unknown>;
}

export interface TransformSummary {
  run_id: string;
  status: 'success' | 'error';
  duration_ms: number;
  results: ModelBuildResult[];
}

export interface SeedLoadResult {
  seed: string;
  status: 'built' | 'skipped' | 'error';
  rows?: number;
  error?: string;
}

export interface ModelsService {
  /** Discovers models (cached until files change); throws DpError naming files on cycles, duplicates, unknown refs. */
  list(): Promise<ModelInfo[]>;
  /** By `schema.name` or bare name. */
  get(name: string): Promise<ModelInfo | undefined>;
  seeds(): Promise<SeedInfo[]>;
  /** Models-only DAG. */
  dag(): Promise<{ nodes: DagNode[]; edges: DagEdge[] }>;
  transform(options: { targets?: string[] | null; force?: boolean; fullRefresh?: boolean; trigger?: string }): Promise<TransformSummary>;
  loadSeeds(options: { force?: boolean; schema?: string; targets?: string[] | null }): Promise<SeedLoadResult[]>;
  /** The project's `sources:` (the models plugin owns that key), with `schema` and `tables` defaulted. */
  sources(): SourceConfig[];
  /** The latest transform runs, newest first (what `GET /api/transform/runs` answers). */
  runs(limit?: number): Promise<Array<Record<string, unknown>>>;
  /** What `dp check` runs (validation, inline assertions, contracts) and its report; `status` `fail` when `dp check` exits 1. */
  check(): Promise<CheckReportSummary>;
}

/** `dp check`'s report as other plugins see it (the models plugin's report has these fields and more). */
export interface CheckReportSummary {
  status: 'pass' | 'fail';
  exit_code: 0 | 1;
  validation: { passed: number; failed: number; models: Array<{ model: string; valid: boolean; errors: string[]; warnings: string[] }>; errors: Array<{ code: string; message: string }> };
  assertions: { evaluated: boolean; total: number; passed: number; failed: number; results: Array<{ model: string; expression: string; passed: boolean }> };
  contracts: { evaluated: boolean; total?: number; passed?: number; failed?: number; results?: Array<{ contract_name: string; model: string; passed: boolean; severity: string; error: string | null }> };
}

export interface AssertionOutcome {
  expression: string;
  passed: boolean;
  detail: Record<string, unknown>;
}

export interface ContractRunResult {
  total: number;
  passed: number;
  failed: number;
  results: Array<{
    contract_name: string;
    model: string;
    passed: boolean;
    severity: 'error' | 'warn';
    duration_ms: number;
    error: string | null;
    assertions: AssertionOutcome[];
  }>;
}

/** A contract as written in `contracts/*.yml` (SPEC "Contract"), with the file that defines it. */
export interface ContractDefinition {
  name: string;
  model: string;
  description: string;
  severity: 'error' | 'warn';
  assertions: string[];
  file: string;
}

export interface QualityService {
  /** The contracts of `contracts/*.yml` without running them, and what is wrong with the files that did not load. */
  contracts(): { contracts: ContractDefinition[]; errors: Array<{ file: string; index?: number; reason: string }> };
  /** Evaluates assertion expressions against a relation (`schema.table`). */
  evaluateAssertions(relation: string, expressions: string[]): Promise<AssertionOutcome[]>;
  /** Runs contracts, optionally filtered by contract name or model. */
  runContracts(filter?: string): Promise<ContractRunResult>;
  /** Profile of one relation; sample values go through the guarded query runner (masked). */
  profile(schema: string, table: string, caller: Caller): Promise<Record<string, unknown>>;
}

export interface ColumnSource {
  source_table: string;
  source_column: string;
}

export interface ModelLineage {
  model: string;
  columns: Record<string, ColumnSource[]>;
  depends_on: string[];
  /** `not_analysed`: a model written natively for a target (`@config dialect=clickhouse`); its columns are not traced. */
  method?: 'parser' | 'regex' | 'not_analysed';
  /** With `not_analysed`: false when even the relations it reads are not known (see ModelInfo.referencesKnown). */
  reads_known?: boolean;
  /**
   * Output column → how its value relates to its sources: `pass` keeps a source value (a
   * reference, rename or cast), `count` is a plain count(col), `computed` is anything else.
   * The masking plugin propagates policies by it.
   */
  kinds?: Record<string, 'pass' | 'computed' | 'count'>;
}

/** What a change to a model (or one of its columns) reaches downstream (`dp impact`). */
export interface ImpactResult {
  model: string;
  column?: string;
  /** Every model downstream, transitively, nearest first. */
  downstream_models: string[];
  affected_columns: Array<{ model: string; column: string }>;
  /** The model and each downstream model → the models that depend on it directly. */
  impact_chain: Record<string, string[]>;
}

export interface LineageService {
  lineage(model: string): Promise<ModelLineage>;
  /** Lineage of every model (cached per model by content hash and upstream columns). */
  all(): Promise<ModelLineage[]>;
  /** The project's `exposures:` (the lineage plugin owns that key), `depends_on` defaulted to []. */
  exposures(): ExposureConfig[];
  /** Impact of a model (or a seed or source models read); with `column`, of that column only. Throws 404 `model_not_found` / `column_not_found`. */
  impact(model: string, column?: string): Promise<ImpactResult>;
}

export interface MaskingService {
  /** Columns of `schema.table` the caller would see masked. */
  maskedColumns(caller: Caller, schema: string, table: string): Promise<string[]>;
  /**
   * Lower-case names of every column some policy masks for the caller, whatever its table: an
   * ad-hoc query masks by column name alone (docs/decisions.md "Masking policy" rule 4), so a data file holding a
   * column of one of these names is a raw copy the caller may not read.
   */
  maskedColumnNames(caller: Caller): Promise<string[]>;
}

/** What a masking method knows about the column it masks. */
export interface MaskingColumnInfo {
  /** DuckDB type name of the column when known (`VARCHAR`, `DATE`, `DECIMAL(10,2)`). */
  type?: string;
}

/**
 * A masking method, built in or contributed through the masking plugin's `masking.methods`
 * extension point. `expression` compiles to DuckDB SQL so masking runs inside the query.
 */
export interface MaskingMethod {
  /** Lower-case identifier used in policies (`hash`, `partial`, ...). */
  name: string;
  description: string;
  /** JSON schema (an object schema with defaults) of the method's `method_config`. */
  configSchema: Record<string, unknown>;
  /**
   * A SQL expression masking `column` (an already-quoted SQL expression). `config` has the
   * schema's defaults filled in. NULL in gives NULL out; the raw value must never come out.
   */
  expression(column: string, config: Record<string, any>, info: MaskingColumnInfo): string;
  /** The same masking on one value in JavaScript, for the post-execution fallback; without it the fallback yields NULL. */
  apply?(value: unknown, config: Record<string, any>, info: MaskingColumnInfo): unknown;
}

/** The warehouse's tables and views, as the tables plugin lists them. */
export interface TablesService {
  /**
   * With `rowCounts`, each table carries `rows` (exact) and each view `rows: null` (counting would
   * run it). With `reader` as well, the counts run as that caller's read: in a query slot of its
   * role, under its deadline (408), stopped when `signal` fires (a viewer starts them through
   * /api/overview, /api/sources and the docs routes).
   */
  list(schema?: string, options?: { rowCounts?: boolean; reader?: { caller: Caller; signal?: QueryStopSignal } }): Promise<Array<{ schema: string; name: string; type: 'table' | 'view'; rows?: number | null }>>;
  describe(schema: string, table: string): Promise<{ schema: string; name: string; type: string; columns: Array<{ name: string; type: string; nullable: boolean }> }>;
}

// ---------------------------------------------------------------- refs

export const MODELS_SERVICE = createServiceRef<ModelsService>('models');
export const QUALITY_SERVICE = createServiceRef<QualityService>('quality');
export const LINEAGE_SERVICE = createServiceRef<LineageService>('lineage');
export const MASKING_SERVICE = createServiceRef<MaskingService>('masking');
export const TABLES_SERVICE = createServiceRef<TablesService>('tables');

/** Masking methods from other plugins (a method or a list of them). */
export const MASKING_METHODS = createExtensionPoint<MaskingMethod | MaskingMethod[]>('masking.methods');

/**
 * What `dp check` / `POST /api/check` runs beyond its own validation: a plugin that evaluates
 * data checks (quality) extends the models plugin with this, so models never looks it up.
 */
export interface ModelChecker {
  /** The plugin's name, shown in reports. */
  name: string;
  evaluateAssertions(relation: string, expressions: string[]): Promise<AssertionOutcome[]>;
  runContracts(filter?: string): Promise<ContractRunResult>;
}
export const MODEL_CHECKS = createExtensionPoint<ModelChecker>('models.checks');

/**
 * A section of a model's view (`GET /api/models/:name/notebook-view`), keyed by `section`;
 * the lineage plugin fills `lineage`. A section that throws is answered as `<section>_error`.
 */
export interface ModelViewSection {
  section: string;
  render(model: ModelInfo): Promise<unknown>;
}
export const MODEL_VIEW = createExtensionPoint<ModelViewSection>('models.view');

/** One problem `dp validate` reports: file (project-relative), line when known, message. */
export interface ProjectProblem {
  file: string;
  line?: number;
  message: string;
}

/**
 * What `dp validate` checks beyond models, without building anything: each plugin that owns
 * project files or keys (streams, metrics, contracts) extends the models plugin with its own
 * validator, so `dp validate` lists every problem of the project in one run.
 */
export interface ProjectValidator {
  /** The plugin's name, shown in reports. */
  name: string;
  validate(): Promise<ProjectProblem[]>;
}
export const PROJECT_VALIDATORS = createExtensionPoint<ProjectValidator>('models.validators');

/** What a target plugin offers the query surfaces (`dp query`, `/api/query`, the SQL page). */
export interface QueryTargetService {
  /** The active environment's target for user queries, or null when queries run on the DuckDB file. */
  active(): Promise<QueryTarget | null>;
  /** Schemas, tables and their columns on the active target, for the SQL page's browser (null without a target). */
  browse(): Promise<{ schemas: string[]; tables: Array<{ schema: string; name: string; type: string; columns: Array<{ name: string; type: string }> }> } | null>;
}

export const QUERY_TARGET_SERVICE = createServiceRef<QueryTargetService>('query-target');
