/**
 * The models plugin's public contract: its service (discovery, DAG, transform, seeds, sources,
 * `dp check`), its extension points (checks, model view sections, project validators) and the
 * hook points a transform fires, with the types they carry. Other plugins reach models only
 * through these (sdk/index.ts re-exports them).
 */
import type { DatabasePort } from './db.js';
import { createEventRef, createExtensionPoint, createHookRef, createServiceRef } from './refs.js';

/**
 * How a model is materialized: `table` and `view` rebuild it; `incremental` adds the new rows
 * to the existing table; `scd2` keeps the history of changing rows (valid_from, valid_to,
 * is_current). `incremental` and `scd2` models are tables for every other purpose.
 */
export type Materialization = 'table' | 'view' | 'incremental' | 'scd2';

/** One model unit test's outcome (`dp test`, `POST /api/unit-tests/run`). */
export interface UnitTestResult {
  name: string;
  model: string;
  /** Project-relative path of the YAML file, with the test's line. */
  file: string;
  line: number | null;
  status: 'pass' | 'fail' | 'error';
  duration_ms: number;
  /** Expected rows the model did not produce (as column → value objects). */
  missing: Array<Record<string, unknown>>;
  /** Rows the model produced that were not expected. */
  unexpected: Array<Record<string, unknown>>;
  /** Why the test could not run (bad YAML, missing mock, SQL error). */
  error?: string;
}

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
  /** `concurrency`: models built at once, each after the models it reads (default: 2 to 4 by cores on the DuckDB file, 4 on a target). */
  transform(options: { targets?: string[] | null; force?: boolean; fullRefresh?: boolean; trigger?: string; concurrency?: number }): Promise<TransformSummary>;
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

export type ModelBuildStatus = 'built' | 'skipped' | 'error' | 'assertion_failed' | 'upstream_failed';

export interface ModelBuildContext {
  /** `schema.name`. */
  readonly model: string;
  readonly schema: string;
  readonly name: string;
  readonly materialized: Materialization;
  readonly path: string;
  readonly sql: string;
  /**
   * Inline assertion expressions of the model (`@assert` / `assert:`), when the runner knows them.
   * The quality plugin evaluates these; when absent it asks the models service for them.
   */
  readonly assertions?: readonly string[];
  readonly runId: string;
  /** Status so far; a tap may set `assertion_failed`. */
  status: ModelBuildStatus;
  readonly durationMs: number;
  error?: string;
  /** Extra per-model output plugins attach (assertion results, anomalies...). */
  extras: Record<string, unknown>;
  readonly db: DatabasePort;
  /** The run's signal (see TransformRunContext.signal). */
  readonly signal?: AbortSignal;
}

export interface TransformRunContext {
  readonly runId: string;
  readonly trigger: string;
  readonly targets: string[] | null;
  /**
   * Aborted when the run must end early: shutdown, maintenance or an environment switch
   * (`ctx.signal` of the plugin that runs it). Set by every runner; only hand-made contexts lack it.
   */
  readonly signal?: AbortSignal;
  results: Array<{ model: string; status: ModelBuildStatus; duration_ms: number; error?: string }>;
  status: 'running' | 'success' | 'error';
}

/** Fired by the models plugin when a transform run starts. */
export const BEFORE_TRANSFORM = createHookRef<[TransformRunContext]>('models.beforeTransform');
/** Fired by the models plugin after each model was built (or failed): assertions, profiles, anomalies. */
export const AFTER_MODEL_BUILD = createHookRef<[ModelBuildContext]>('models.afterModelBuild');
/** Fired by the models plugin when a transform run ended. */
export const AFTER_TRANSFORM = createHookRef<[TransformRunContext]>('models.afterTransform');

export const MODELS_SERVICE = createServiceRef<ModelsService>('models');

/**
 * The events a transform run emits on the bus (`ctx.events`), in this order: `transform_start`,
 * then per model `model_start` (only for a model that runs) and `model_end` (every model,
 * skipped and upstream-failed ones too), then `transform_end`. `GET /api/transform/events`
 * relays them; streams turns the model events into its pipeline events; masking refreshes on
 * `model_end` and `transform_end`.
 */
export interface TransformStartEvent {
  run_id: string;
  trigger: string;
  targets: string[] | null;
  /** How many models the run plans. */
  models: number;
}
export interface ModelStartEvent {
  run_id: string;
  model: string;
  materialized: Materialization;
}
export type ModelEndEvent = ModelBuildResult & { run_id: string };
export interface TransformEndEvent {
  run_id: string;
  status: 'success' | 'error';
  duration_ms: number;
  /** Models that ended in `error` or `upstream_failed`. */
  failed: number;
}
export const TRANSFORM_START = createEventRef<TransformStartEvent>('transform_start');
export const MODEL_START = createEventRef<ModelStartEvent>('model_start');
export const MODEL_END = createEventRef<ModelEndEvent>('model_end');
export const TRANSFORM_END = createEventRef<TransformEndEvent>('transform_end');

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
