import type { AsyncSeriesBailHook, AsyncSeriesHook } from 'tapable';
import type { Caller } from './auth.js';
import type { SerializedSql, TabularResult } from './db.js';
import type { MaskedResultColumn } from './masking.js';
import type { QueryTarget } from './query-target.js';
import type { HookRef } from './refs.js';

export { createHookRef, type HookRef } from './refs.js';

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

// ---------------------------------------------------------------- hook points

/** `series`: every tap runs in turn. `bail`: the first tap that returns a value answers. */
export type HookKind = 'series' | 'bail';

/**
 * One kernel hook point: its kind, argument names and what it is for. The type parameters carry
 * the tap arguments (`A`) and a bail hook's answer (`R`), so taps are typed from this one
 * declaration. Only the kernel fires its hooks.
 */
export interface HookDeclaration<A extends unknown[] = unknown[], R = void, K extends HookKind = HookKind> {
  readonly kind: K;
  readonly args: readonly string[];
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
 * Every hook point the kernel declares, once (like webpack's `Compiler.hooks`): the query path's,
 * which the kernel's guarded runner fires for every user query. The kernel knows no feature, so
 * a feature's hook points (a transform's, a sync's, a stream run's) are declared by the plugin
 * that fires them, in its manifest (`contributes.hookPoints`), and typed by a `createHookRef` in
 * its contract module of the sdk. The manifest schema's `hooks` enum and the hook table of
 * docs/architecture.md are generated from this object and the manifests by scripts/generate.mjs.
 */
export const KERNEL_HOOKS = Object.freeze({
  interceptQuery: declareHook<[QueryContext], QueryResult | undefined, 'bail'>({
    kind: 'bail',
    args: ['query'],
    description: 'A tap may answer a user query itself (masking commands); the first result wins',
  }),
  beforeQuery: declareHook<[QueryContext]>({
    kind: 'series',
    args: ['query'],
    description: 'Rewrite the SQL, add row transforms or final checks, or throw a DpError to refuse',
  }),
  afterQuery: declareHook<[QueryContext, QueryResult]>({
    kind: 'series',
    args: ['query', 'result'],
    description: 'A user query answered (buffered results)',
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
 * tap through `ctx.tap()` (checked against `contributes.hooks`); a plugin fires only hook
 * points, its own or another plugin's listed under `contributes.fires`, through `ctx.hook()`.
 */
export type KernelHooks = { readonly [K in HookName]: TapableOf<(typeof KERNEL_HOOKS)[K]> };

/** A kernel hook by name, or a plugin's hook point by ref. */
export type HookTarget = HookName | HookRef<any, any>;

type TargetArgs<T> = T extends HookName ? ArgsOf<(typeof KERNEL_HOOKS)[T]> : T extends HookRef<infer A, any> ? A : never;
type TargetAnswer<T> = T extends HookName ? AnswerOf<(typeof KERNEL_HOOKS)[T]> : T extends HookRef<any, infer R> ? R : never;

/** Tap callback of a hook (promise taps); a bail hook's tap returns its answer or undefined. */
export type TapFn<T extends HookTarget> = (...args: TargetArgs<T>) => Promise<TargetAnswer<T> | void | undefined>;

/** The firing side of a hook point, as `ctx.hook()` hands it to its owner or a plugin that lists it under `fires`. */
export interface FireableHook<T extends HookTarget> {
  /** Runs the taps in order; a bail hook resolves to the first answer. */
  promise(...args: TargetArgs<T>): Promise<TargetAnswer<T> | undefined>;
  /** True when at least one plugin tapped the hook (fire only then when building the arguments costs). */
  isUsed(): boolean;
}
