/**
 * The scripts plugin's public contract (the script runner: compile, console capture, run),
 * shared with the plugins that build on it (streams, connectors, notebooks). Types and refs only.
 * The streams plugin's contract is sdk/streams.ts.
 */
import type { Caller } from './auth.js';
import type { DbConnection, DatabasePort } from './db.js';
import type { Logger } from './plugin.js';
import type { NotebookCell } from './project-files.js';
import { createExtensionPoint, createHookRef, createServiceRef } from './refs.js';

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
