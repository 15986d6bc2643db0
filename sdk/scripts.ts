/**
 * The contracts of the scripts plugin (the script runner: compile, console capture, run) and of
 * the streams plugin, shared with the plugins that build on them (connectors, notebooks,
 * versioning). Types and refs only: those plugins implement them.
 */
import type { Caller } from './auth.js';
import type { DbConnection, DatabasePort } from './db.js';
import type { Logger } from './plugin.js';
import type { NotebookCell } from './project-files.js';
import type { ProjectProblem } from './services.js';
import { createHookRef } from './hooks.js';
import { createExtensionPoint, createServiceRef } from './plugin.js';

/**
 * What an ingest/export script's default export receives: `export default async (ctx) => {}`.
 * Other plugins add fields through SCRIPT_CONTEXT (the connectors plugin adds `connectors`).
 */
export interface ScriptContext {
  /** The server's connection pool: `bulkLoad` (appender) for fast loads, never one INSERT per row. */
  db: Pick<DatabasePort, 'all' | 'query' | 'bulkLoad' | 'withConnection'> & Pick<DbConnection, 'run' | 'value'>;
  /** The kernel's keys of project.yml (`connections`, `database`...; `${VAR}` resolved), frozen. */
  config: Readonly<Record<string, unknown>>;
  /** Variables from the project's .env. */
  env: Readonly<Record<string, string>>;
  /** Secrets by name (never logged). */
  secrets: { get(name: string): string | undefined };
  /** Captured into the run's output. */
  log: Logger;
  /** Aborted when the run is cancelled, on shutdown or maintenance. */
  signal: AbortSignal;
  /** Contributions of other plugins (SCRIPT_CONTEXT), by key. */
  [extension: string]: unknown;
}

export interface ScriptRunOptions {
  caller?: Caller;
  signal?: AbortSignal;
  /** Receives each captured output line as it happens (live progress). */
  onOutput?: (line: string) => void;
  /** Why it runs: `cli`, `api`, `stream:<name>`, `schedule`. */
  trigger?: string;
}

export interface ScriptRunResult {
  /** Project-relative path that ran. */
  path: string;
  status: 'success' | 'error' | 'cancelled';
  duration_ms: number;
  /** Captured console and `ctx.log` lines. */
  output: string[];
  /** The thrown message; `stack` trimmed to the script's own frames. */
  error?: string;
  stack?: string;
}

/** What a script can be: TypeScript or JavaScript modules, and notebooks. */
export const SCRIPT_EXTENSIONS: readonly string[] = Object.freeze(['.ts', '.js', '.mjs', '.dpnb']);

export interface ScriptsService {
  /**
   * Checks a script path before anything runs and answers it project-relative: 400
   * `script_path_refused` outside ingest/, export/ or notebooks/ (symlinks resolved), 400
   * `unsupported_script_language`, 404 `file_not_found`.
   */
  locate(projectPath: string): { path: string };
  /**
   * Runs a `.ts`/`.js`/`.mjs` script or a `.dpnb` notebook under `ingest/`, `export/` or
   * `notebooks/` (symlinks resolved), under the kernel's write lock. Throws DpError 400 for any
   * other path or language (404 when absent); a script that fails or is cancelled resolves with
   * that status. `.env` values in output, error and stack show as `${VAR}`.
   */
  run(projectPath: string, options?: ScriptRunOptions): Promise<ScriptRunResult>;
  /**
   * The `ctx` a script run gets (the same guarded `db`, config, env, secrets and SCRIPT_CONTEXT
   * contributions), for code that runs script-like cells itself (notebook sessions). Its
   * database calls are refused and its borrowed connections interrupted once `signal` aborts.
   */
  context(projectPath: string, options: { signal: AbortSignal; log: Logger }): ScriptContext;
  /**
   * Compiles a notebook code/ingest cell (one compile path with scripts: esbuild, the module
   * store in `.dp/scripts/`). The module's default export takes `{console, ctx, scope}` and
   * returns `{value, exports}`; `scopeNames` are the earlier cells' exports it may read. Throws a
   * NotebookCellCompileFailure when the cell does not compile.
   */
  compileNotebookCell(label: string, source: string, scopeNames: string[]): Promise<CompiledNotebookCell>;
  /** The 1-based cell line of the first frame of `error` inside the compiled cell. */
  notebookCellErrorLine(error: unknown, compiled: CompiledNotebookCell): number | null;
  /** The stack of an error a cell threw, trimmed to the cell's frames on its own lines (`notebooks/a.dpnb#cell3:2:7`). */
  notebookCellStack(error: unknown, compiled: CompiledNotebookCell, label: string): string | undefined;
}

export const SCRIPTS_SERVICE = createServiceRef<ScriptsService>('scripts');

/** A notebook code/ingest cell compiled to a module (ScriptsService.compileNotebookCell). */
export interface CompiledNotebookCell {
  url: string;
  file: string;
  /** Exported name → local name. */
  exports: Record<string, string>;
  /** True when the cell's last statement is an expression whose value is returned. */
  hasValue: boolean;
  /** The 1-based cell line of a 1-based line of the compiled module. */
  cellLine(moduleLine: number, column: number): number | null;
}

/** Why a notebook cell did not compile (thrown as a plain object by compileNotebookCell). */
export interface NotebookCellCompileFailure {
  message: string;
  /** 1-based line within the cell. */
  line: number | null;
}

export function isNotebookCellCompileFailure(e: unknown): e is NotebookCellCompileFailure {
  return Boolean(e) && typeof e === 'object' && 'message' in (e as object) && 'line' in (e as object) && !(e instanceof Error);
}

/** A field other plugins add to every script's ctx; `create` runs once per script run. */
export interface ScriptContextContribution {
  key: string;
  create(run: { signal: AbortSignal; log: Logger; path: string }): unknown;
}

/**
 * The notebook cell rules of a script run (`dp run`, a stream's step): the notebooks plugin
 * contributes one, so a pipeline run gives cells what an interactive session gives them (earlier
 * cells' exports, sql cells named by id). Without one the scripts plugin runs each cell on its
 * own. One contribution at most.
 */
export interface NotebookCellRunner {
  /** State for one run of the notebook at `path`; `push` takes output lines. */
  start(path: string, ctx: ScriptContext, push: (line: string) => void): {
    /** Runs `cells[index]` (code, ingest or sql); throws when it fails (the message names the line within the cell when known). */
    runCell(cells: NotebookCell[], index: number): Promise<void>;
  };
}

export const NOTEBOOK_CELL_RUNNER = createExtensionPoint<NotebookCellRunner>('scripts.notebookCellRunner');

/** Offered by the scripts plugin (extension point names start with their owner's name). */
export const SCRIPT_CONTEXT = createExtensionPoint<ScriptContextContribution>('scripts.scriptContext');

/** A finished script run, as the scripts plugin's `scripts.runEnded` hook point gives it. */
export interface ScriptRunRecord {
  run_id: string;
  /** Project-relative path that ran. */
  path: string;
  trigger: string;
  status: ScriptRunResult['status'];
  started_at: string;
  finished_at: string;
  duration_ms: number;
  error: string | null;
  /** The run's console and ctx.log lines, the last SCRIPT_HISTORY_OUTPUT_LINES of them (the run history keeps them). */
  output: string[];
}

/** How many of a run's last output lines its ScriptRunRecord carries (so a run opened later shows them). */
export const SCRIPT_HISTORY_OUTPUT_LINES = 1000;

/** Fired by the scripts plugin after every run (the streams plugin records it in its run history). */
export const SCRIPT_RUN_ENDED = createHookRef<[ScriptRunRecord]>('scripts.runEnded');

// ---------------------------------------------------------------- streams

/** One step of a stream: an action and its targets (`['all']` for every one). */
export interface StreamStep {
  action: 'ingest' | 'seed' | 'transform' | 'export';
  targets: string[];
}

/** A `streams:` entry of project.yml, defaults filled in. */
export interface StreamDefinition {
  name: string;
  description: string;
  schedule: string | null;
  retries: number;
  /** Seconds between retries of a failed step. */
  retry_delay: number;
  webhook_url: string | null;
  steps: StreamStep[];
}

/** A stream as another plugin defines it (StreamsService.define): the steps, and what differs from the defaults. */
export interface StreamInput {
  description?: string;
  schedule?: string | null;
  retries?: number;
  retry_delay?: number;
  webhook_url?: string | null;
  steps: StreamStep[];
}

/** What one step of a stream run did. */
export interface StreamStepResult {
  index: number;
  action: StreamStep['action'];
  targets: string[];
  status: 'success' | 'error' | 'cancelled' | 'skipped';
  duration_ms: number;
  attempts: number;
  error?: string;
  /** Per target (script path, seed or model) outcomes. */
  items: Array<{ name: string; status: string; duration_ms?: number; error?: string }>;
}

export interface StreamRunResult {
  run_id: string;
  stream_name: string;
  trigger: string;
  status: 'success' | 'error' | 'cancelled';
  started_at: string;
  finished_at: string;
  duration_ms: number;
  steps: StreamStepResult[];
  error?: string;
}

/** The active pipeline snapshot (`GET /api/stream/active`, SPEC "Stream (pipeline) configuration"). */
export interface ActivePipeline {
  running: boolean;
  operation: string | null;
  operation_label: string | null;
  stream_name: string | null;
  started_at: string | null;
  total_events: number;
  finished: boolean;
  status: 'idle' | 'running' | 'success' | 'error' | 'cancelled';
  duration_seconds: number | null;
  run_id?: string | null;
  step?: { index: number; action: string; targets: string[]; attempt: number } | null;
  /** Clients listening to `GET /api/stream/events` right now. */
  listeners?: number;
}

/** The streams plugin's service: what the UI, notebooks and connectors reach streams through. */
export interface StreamsService {
  list(): StreamDefinition[];
  /**
   * Starts a run in the background: `started`, or `already_running` while any run is active
   * (`force` cancels that run and starts this one after it). A bad target is a 400 before anything runs.
   */
  start(name: string, options?: { force?: boolean; trigger?: string }): Promise<{ status: 'started' | 'already_running'; stream_name: string; run_id?: string }>;
  /** Runs to the end and returns the result (CLI, legacy single-shot endpoint, schedules). */
  run(name: string, options?: { trigger?: string; onEvent?: (event: string, payload: Record<string, unknown>) => void }): Promise<StreamRunResult>;
  /** Stops the active run at the next step boundary and aborts its running script; false when nothing runs. */
  cancel(): boolean;
  active(): ActivePipeline;
  /** Problems of the streams without running anything: bad cron expressions, targets that do not exist (for `dp validate`). */
  validate(): Promise<ProjectProblem[]>;
  /**
   * Adds or replaces the stream `name` in project.yml's `streams:` (the streams plugin's key,
   * edited through the live config: comments kept, validated, written atomically). The running
   * server lists, runs and schedules it at once. DpError 400 `config_edit_invalid` when the
   * definition does not validate (project.yml unchanged). How other plugins define streams
   * (the connectors plugin's sync streams): never by writing the key themselves.
   */
  define(name: string, stream: StreamInput): void;
  /** Removes the stream `name` from project.yml; false when there is none. */
  remove(name: string): boolean;
}

export const STREAMS_SERVICE = createServiceRef<StreamsService>('streams');
