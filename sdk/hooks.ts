import type { AsyncSeriesBailHook, AsyncSeriesHook } from 'tapable';
import type { Caller } from './auth.js';
import type { DatabasePort, SerializedSql, TabularResult } from './db.js';
import type { Materialization } from './models.js';
import type { MaskedResultColumn } from './masking.js';
import type { QueryTarget } from './query-target.js';

/**
 * Why a user query runs: an open string, so a new plugin (semantic layer, notebooks) names its
 * own purpose without changing the sdk. The purposes dp's plugins use are the constants below;
 * table endpoints (`sample`, `profile`) also set `QueryContext.table` (masking still matches
 * policies by column name there, as for any query: an endpoint is no way around a mask).
 */
export type QueryPurpose = string;

export const QUERY_PURPOSES = Object.freeze({
  /** `POST /api/query`, `dp query`. */
  query: 'query',
  /** `POST /api/query/explain`. */
  explain: 'explain',
  /** Streamed CSV export. */
  export: 'export',
  /** Sample rows of one table or model. */
  sample: 'sample',
  /** Column statistics of one table. */
  profile: 'profile',
  /** Queries a semantic layer compiles. */
  semantic: 'semantic',
  /** Notebook SQL cells. */
  notebook: 'notebook',
} as const);

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
  /** Set for table endpoints (sample, profile): the relation the endpoint reads. */
  readonly table?: { schema: string; table: string };
  /** Applied to every batch of result rows (buffered or streamed) before it leaves the server. */
  rowTransforms: Array<(columns: string[], rows: unknown[][]) => unknown[][]>;
  /**
   * True when the kernel itself runs this query and applies `rowTransforms` to every row it
   * returns (`queries.run`, `queries.stream`); false for `queries.prepare`, whose caller runs
   * `sql` itself. A tap may leave values to a row transform only when this is true.
   */
  readonly runsRowTransforms?: boolean;
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
  /** The warehouse target the query runs on (its catalog is what names resolve in), or absent for the DuckDB file. */
  readonly target?: QueryTarget;
  /**
   * Set by a beforeQuery tap that masks: which result columns it masked, given the result's
   * column names (called once per result, never per row). Absent when nothing is masked.
   */
  maskedColumns?: (columns: string[]) => MaskedResultColumn[];
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
  /** Result columns the server masked for the caller (empty when none). */
  masked_columns?: MaskedResultColumn[];
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
 * Tables whose rows a restore replaced (a data version put back). Plugins that keep state about a
 * table's rows (a connector's sync watermark, a model's build hash) bring it in line and say so
 * in `notes`, which the restore's answer carries. The versioning plugin fires it and knows none of them.
 */
export interface TablesRestoredContext {
  /** What the rows came from, for people (`version v3-20260101-120000`). */
  readonly source: string;
  /** `schema.table` of every table restored. */
  readonly tables: readonly string[];
  /** One line per table a tap changed state for: which plugin, what it did. */
  notes: Array<{ table: string; plugin: string; message: string }>;
}

// ---------------------------------------------------------------- hook points

/** `series`: every tap runs in turn. `bail`: the first tap that returns a value answers. */
export type HookKind = 'series' | 'bail';

/**
 * One hook point: its kind, argument names, who may fire it, and what it is for. The type
 * parameters carry the tap arguments (`A`) and a bail hook's answer (`R`), so taps and
 * firers are typed from this one declaration.
 */
export interface HookDeclaration<A extends unknown[] = unknown[], R = void, K extends HookKind = HookKind> {
  readonly kind: K;
  readonly args: readonly string[];
  /**
   * `kernel`: only the kernel fires it (no manifest may list it under `fires`).
   * `plugins`: fired by the plugins whose manifest lists it under `contributes.fires`.
   */
  readonly firedBy: 'kernel' | 'plugins';
  readonly description: string;
  /** Type carrier only (never set). */
  readonly __signature?: (...args: A) => R;
}

function declareHook<A extends unknown[], R = void, K extends HookKind = 'series'>(
  d: Omit<HookDeclaration<A, R, K>, '__signature'>,
): HookDeclaration<A, R, K> {
  return Object.freeze({ ...d, args: Object.freeze([...d.args]) });
}

/**
 * Every hook point the kernel declares, once (like webpack's `Compiler.hooks`). The manifest
 * schema's `hooks`/`fires` enums and the hook table of docs/architecture.md are generated from
 * this object by scripts/generate.mjs; a plugin's own hook points are declared in its
 * manifest (`contributes.hookPoints`) instead.
 */
export const KERNEL_HOOKS = Object.freeze({
  interceptQuery: declareHook<[QueryContext], QueryResult | undefined, 'bail'>({
    kind: 'bail',
    args: ['query'],
    firedBy: 'kernel',
    description: 'A tap may answer a user query itself (masking commands); the first result wins',
  }),
  beforeQuery: declareHook<[QueryContext]>({
    kind: 'series',
    args: ['query'],
    firedBy: 'kernel',
    description: 'Rewrite the SQL, add row transforms or final checks, or throw a DpError to refuse',
  }),
  afterQuery: declareHook<[QueryContext, QueryResult]>({
    kind: 'series',
    args: ['query', 'result'],
    firedBy: 'kernel',
    description: 'A user query answered (buffered results)',
  }),
  valuesHiddenFrom: declareHook<[Caller], boolean, 'bail'>({
    kind: 'bail',
    args: ['caller'],
    firedBy: 'plugins',
    description: 'Whether raw data values are hidden from a caller (masking binds them): error texts shown to them lose their quoted values (sdk errorTextsFor)',
  }),
  beforeTransform: declareHook<[TransformRunContext]>({
    kind: 'series',
    args: ['run'],
    firedBy: 'plugins',
    description: 'A transform run starts',
  }),
  afterModelBuild: declareHook<[ModelBuildContext]>({
    kind: 'series',
    args: ['build'],
    firedBy: 'plugins',
    description: 'One model was built (or failed): assertions, profiles, anomalies',
  }),
  afterTransform: declareHook<[TransformRunContext]>({
    kind: 'series',
    args: ['run'],
    firedBy: 'plugins',
    description: 'A transform run ended',
  }),
  onSync: declareHook<[SyncContext]>({
    kind: 'series',
    args: ['sync'],
    firedBy: 'plugins',
    description: 'A connector synced one table (CDC)',
  }),
  tablesRestored: declareHook<[TablesRestoredContext]>({
    kind: 'series',
    args: ['restore'],
    firedBy: 'plugins',
    description: 'A restore replaced the rows of tables: state kept about them (sync watermarks, build hashes) follows',
  }),
  pipelineStart: declareHook<[PipelineContext]>({
    kind: 'series',
    args: ['pipeline'],
    firedBy: 'plugins',
    description: 'A stream run starts',
  }),
  pipelineStep: declareHook<[PipelineContext]>({
    kind: 'series',
    args: ['pipeline'],
    firedBy: 'plugins',
    description: 'A stream run starts one step',
  }),
  pipelineEnd: declareHook<[PipelineContext]>({
    kind: 'series',
    args: ['pipeline'],
    firedBy: 'plugins',
    description: 'A stream run ended: alerts, completion webhooks',
  }),
});

export type HookName = keyof typeof KERNEL_HOOKS;
export const HOOK_NAMES = Object.freeze(Object.keys(KERNEL_HOOKS) as HookName[]);

type ArgsOf<D> = D extends HookDeclaration<infer A, any, any> ? A : never;
type AnswerOf<D> = D extends HookDeclaration<any, infer R, any> ? R : never;
type TapableOf<D> =
  D extends HookDeclaration<infer A, infer R, 'bail'> ? AsyncSeriesBailHook<A, R> : D extends HookDeclaration<infer A, any, 'series'> ? AsyncSeriesHook<A> : never;

/**
 * The kernel's tapable hook objects, typed from KERNEL_HOOKS. Plugins never hold these: they
 * tap through `ctx.tap()` (checked against `contributes.hooks`) and fire through `ctx.hook()`
 * (checked against `contributes.fires`).
 */
export type KernelHooks = { readonly [K in HookName]: TapableOf<(typeof KERNEL_HOOKS)[K]> };

/**
 * A hook point a plugin declares in its manifest's `contributes.hookPoints` (named
 * `<plugin>.<point>`), typed for both sides: `export const RUN_QUEUED = createHookRef<[Run]>('streams.runQueued')`.
 * Like service refs, the ref lives where both the owner and its tappers can import it (the sdk,
 * or the owner's published types).
 */
export interface HookRef<A extends unknown[] = unknown[], R = void> {
  readonly id: string;
  readonly __signature?: (...args: A) => R;
}

export function createHookRef<A extends unknown[], R = void>(id: string): HookRef<A, R> {
  return Object.freeze({ id });
}

/** A kernel hook by name, or a plugin's hook point by ref. */
export type HookTarget = HookName | HookRef<any, any>;

type TargetArgs<T> = T extends HookName ? ArgsOf<(typeof KERNEL_HOOKS)[T]> : T extends HookRef<infer A, any> ? A : never;
type TargetAnswer<T> = T extends HookName ? AnswerOf<(typeof KERNEL_HOOKS)[T]> : T extends HookRef<any, infer R> ? R : never;

/** Tap callback of a hook (promise taps); a bail hook's tap returns its answer or undefined. */
export type TapFn<T extends HookTarget> = (...args: TargetArgs<T>) => Promise<TargetAnswer<T> | void | undefined>;

/** The firing side of a hook, as `ctx.hook()` hands it to a plugin that declared it under `fires`. */
export interface FireableHook<T extends HookTarget> {
  /** Runs the taps in order; a bail hook resolves to the first answer. */
  promise(...args: TargetArgs<T>): Promise<TargetAnswer<T> | undefined>;
  /** True when at least one plugin tapped the hook (fire only then when building the arguments costs). */
  isUsed(): boolean;
}
