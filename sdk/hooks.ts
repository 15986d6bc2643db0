import type { AsyncSeriesBailHook, AsyncSeriesHook } from 'tapable';
import type { Caller } from './auth.js';
import type { DatabasePort, SerializedSql, TabularResult } from './db.js';

/** Why a user query runs; table endpoints match masking policies by exact table. */
export type QueryPurpose = 'query' | 'explain' | 'export' | 'sample' | 'profile' | 'semantic' | 'notebook';

/**
 * A user query on its way through the kernel's guarded runner: interceptQuery → read-only
 * validation of the SQL as sent → beforeQuery → (when a tap rewrote it) read-only validation of
 * the new SQL, then finalChecks → execute (role timeout) → rowTransforms → afterQuery.
 */
export interface QueryContext {
  /** The SQL to run; beforeQuery taps may rewrite it. */
  sql: string;
  /** The SQL as the caller sent it. */
  readonly originalSql: string;
  params?: Record<string, unknown>;
  readonly caller: Caller;
  readonly purpose: QueryPurpose;
  /** Set for table endpoints (sample, profile): policies match this exact table. */
  readonly table?: { schema: string; table: string };
  /** Applied to every batch of result rows (buffered or streamed) before it leaves the server. */
  rowTransforms: Array<(columns: string[], rows: unknown[][]) => unknown[][]>;
  /** Human notes returned with the result and logged (e.g. "masking applied after execution"). */
  notes: string[];
  /** Scratch space for plugins, keyed by plugin name. */
  state: Record<string, unknown>;
  /**
   * Run by the kernel on DuckDB's own parse of the SQL that will execute, right after its
   * read-only validation; throw a DpError to refuse. A beforeQuery tap that rewrote `sql`
   * uses this to confirm on the parser's reading of the final text that the rewrite does what
   * it meant (the kernel parses that text anyway, so a check costs no extra round trip).
   */
  finalChecks?: Array<(tree: SerializedSql) => void | Promise<void>>;
  /**
   * The user macros the SQL as sent calls, directly or through other macros, each with
   * DuckDB's parse of its body (`SELECT <body>`), as read-only validation found them. DuckDB
   * expands macros after beforeQuery, so a tap that guards tables must look inside these.
   */
  macros?: MacroBody[];
}

/** A user macro (`schema.name` when the call was qualified) and the parse of its body. */
export interface MacroBody {
  name: string;
  tree: SerializedSql;
}

export interface QueryResult extends TabularResult {
  truncated: boolean;
  offset: number;
  limit: number;
  notes?: string[];
}

export type ModelBuildStatus = 'built' | 'skipped' | 'error' | 'assertion_failed' | 'upstream_failed';

export interface ModelBuildContext {
  /** `schema.name`. */
  readonly model: string;
  readonly schema: string;
  readonly name: string;
  readonly materialized: 'table' | 'view';
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

export interface PipelineContext {
  readonly runId: string;
  readonly streamName: string;
  readonly trigger: string;
  status: 'running' | 'success' | 'error' | 'cancelled';
  readonly startedAt: Date;
  /** Aborted on shutdown, maintenance or an environment switch (the stream's `ctx.signal`). */
  readonly signal?: AbortSignal;
  step?: { index: number; action: string; targets: string[] };
  error?: string;
  durationMs?: number;
}

/**
 * The kernel's hook points. Taps declare themselves in their manifest's
 * `contributes.hooks`; `ctx.tap()` refuses an undeclared hook.
 */
export interface KernelHooks {
  /** A tap may answer the query itself (masking commands); the first non-undefined result wins. */
  interceptQuery: AsyncSeriesBailHook<[QueryContext], QueryResult | undefined>;
  /** Rewrite ctx.sql, add row transforms, or throw a DpError to refuse. */
  beforeQuery: AsyncSeriesHook<[QueryContext]>;
  afterQuery: AsyncSeriesHook<[QueryContext, QueryResult]>;
  beforeTransform: AsyncSeriesHook<[TransformRunContext]>;
  afterModelBuild: AsyncSeriesHook<[ModelBuildContext]>;
  afterTransform: AsyncSeriesHook<[TransformRunContext]>;
  onSync: AsyncSeriesHook<[SyncContext]>;
  pipelineStart: AsyncSeriesHook<[PipelineContext]>;
  pipelineStep: AsyncSeriesHook<[PipelineContext]>;
  pipelineEnd: AsyncSeriesHook<[PipelineContext]>;
}

export type HookName = keyof KernelHooks;
export const HOOK_NAMES: readonly HookName[] = [
  'interceptQuery',
  'beforeQuery',
  'afterQuery',
  'beforeTransform',
  'afterModelBuild',
  'afterTransform',
  'onSync',
  'pipelineStart',
  'pipelineStep',
  'pipelineEnd',
];

/** Tap callback types by hook name (promise taps). */
export type TapFn<H extends HookName> = KernelHooks[H] extends AsyncSeriesBailHook<infer A, infer R>
  ? (...args: A extends unknown[] ? A : never) => Promise<R | undefined>
  : KernelHooks[H] extends AsyncSeriesHook<infer A>
    ? (...args: A extends unknown[] ? A : never) => Promise<void>
    : never;
