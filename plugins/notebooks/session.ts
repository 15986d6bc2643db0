/**
 * Cell execution: one session per notebook and user in the server, keyed by the notebook's
 * project path and the caller, holding what that user's earlier cells exported (and the rows of
 * sql cells with an id) for that user's later code cells: nothing one user's cells leave is seen
 * by another user's. A session is released after `notebooks.session_idle_seconds` without a run;
 * runs of one session go one at a time, in the order they arrive, and a user may have at most
 * `notebooks.max_pending_runs` runs waiting or running across all notebooks (429
 * `notebook_queue_full` past it), so one user's queue never holds anyone else's runs.
 *
 * - `sql` cells go through the kernel's guarded runner as the caller (read-only validation,
 *   masking, the role's timeout and query slots, `notebooks.row_limit` rows). A statement the
 *   read-only validation refuses (CREATE, INSERT...) runs as a write only for callers with the
 *   `execute` permission, under the write lock and the same role deadline; a viewer gets the 400.
 * - Names across cells: a sql cell with an `id` is a table expression later sql cells select
 *   from by that id (`WITH <id> AS (<its SQL>) <the cell>`, only the ids the cell names, with
 *   theirs in turn), and its returned rows (objects by column) a variable later code cells read.
 * - `code`/`ingest` cells need `execute` (403 for a viewer); they run with the same ctx a script
 *   gets (the scripts plugin's ScriptsService.context), under the write lock and the caller's
 *   role timeout: past it the cell's signal aborts, its database calls are interrupted and the
 *   answer is 408 `query_timeout`, the code given that the queries return.
 */
import { format } from 'node:util';
import {
  badRequest,
  deadlineTimeout,
  DpError,
  errorMessage,
  hasPermission,
  isDpError,
  isNotebookCellCompileFailure,
  requirePermission,
  scriptConsole,
  withEnvReferences,
  type Caller,
  type Logger,
  type PluginContext,
  type ScriptsService,
  WAREHOUSE_TARGET_SERVICE,
} from '../../sdk/index.js';
import type { CellResult, CodeCellResult, CodeOutputLine, Notebook, SqlCellResult } from './api-types.js';
import { stripTrailingSemicolons, withReferences } from './names.js';
import { jsonSafe } from './render.js';
import { cellSource } from './schema.js';

export interface ExecuteRequest {
  path: string;
  notebook: Notebook;
  cellIndex: number;
  caller: Caller;
  /** Aborted when the client leaves. */
  signal?: AbortSignal;
}

interface Session {
  /** The sessions map's key: path and user. */
  key: string;
  path: string;
  user: string;
  /** What each run cell left for later cells, by cell index. */
  values: Map<number, Record<string, unknown>>;
  /** The idle release, armed on ctx.clock. */
  timer: unknown;
  /** Runs of this notebook, one after the other. */
  queue: Promise<unknown>;
}

const round = (ms: number) => Math.round(ms * 100) / 100;

/** Lines of output kept per cell run. */
const MAX_OUTPUT_LINES = 10_000;

/** Whose session a caller's runs belong to: the signed-in user, or the one local user of a server without auth. */
const userOf = (caller: Caller): string => (caller.authenticated && caller.username ? `user:${caller.username}` : 'local');

export class NotebookSessions {
  private readonly sessions = new Map<string, Session>();
  /** Runs waiting or running, per user. */
  private readonly pending = new Map<string, number>();

  constructor(
    private readonly ctx: PluginContext,
    private readonly scripts: ScriptsService,
    private readonly settings: { idleSeconds: number; rowLimit: number; maxPendingRuns: number },
  ) {}

  /** Paths of the notebooks that have a session now (one entry per notebook, whoever holds it). */
  active(): string[] {
    return [...new Set([...this.sessions.values()].map((s) => s.path))];
  }

  releaseAll(): void {
    for (const s of this.sessions.values()) if (s.timer) this.ctx.clock.clearTimeout(s.timer);
    this.sessions.clear();
  }

  /** Releases every user's session of `path`. */
  release(path: string): boolean {
    let released = false;
    for (const s of [...this.sessions.values()]) {
      if (s.path !== path) continue;
      if (s.timer) this.ctx.clock.clearTimeout(s.timer);
      this.sessions.delete(s.key);
      released = true;
    }
    return released;
  }

  private session(path: string, caller: Caller): Session {
    const user = userOf(caller);
    const key = `${user}\0${path}`;
    let s = this.sessions.get(key);
    if (!s) {
      s = { key, path, user, values: new Map(), timer: null, queue: Promise.resolve() };
      this.sessions.set(key, s);
    }
    return s;
  }

  private touch(s: Session): void {
    if (s.timer) this.ctx.clock.clearTimeout(s.timer);
    // On ctx.clock (the system clock's timers do not hold the process open): a test moves its own.
    s.timer = this.ctx.clock.setTimeout(() => {
      if (this.sessions.get(s.key) === s) this.sessions.delete(s.key);
      this.ctx.log.debug('notebook session released', { path: s.path });
    }, this.settings.idleSeconds * 1000);
  }

  execute(req: ExecuteRequest): Promise<CellResult> {
    const cell = req.notebook.cells[req.cellIndex];
    if (cell.type === 'markdown') return Promise.resolve({ type: 'markdown', cell_index: req.cellIndex });
    // Checked before queueing: a refused viewer creates no session.
    if (cell.type === 'code' || cell.type === 'ingest') requirePermission(req.caller, 'execute');
    const user = userOf(req.caller);
    const pending = this.pending.get(user) ?? 0;
    if (pending >= this.settings.maxPendingRuns) {
      throw new DpError(429, 'notebook_queue_full', `You already have ${pending} notebook cell runs waiting or running (notebooks.max_pending_runs); wait for one to finish or stop it`, {
        pending_runs: pending,
        max_pending_runs: this.settings.maxPendingRuns,
      });
    }
    this.pending.set(user, pending + 1);
    const s = this.session(req.path, req.caller);
    const run = s.queue.then((): Promise<CellResult> => (cell.type === 'sql' ? this.runSql(s, req) : this.runCode(s, req)));
    s.queue = run.catch(() => undefined);
    return run.finally(() => {
      const left = (this.pending.get(user) ?? 1) - 1;
      if (left > 0) this.pending.set(user, left);
      else this.pending.delete(user);
      this.touch(s);
    });
  }

  // ---------------------------------------------------------------- sql

  private async runSql(s: Session, req: ExecuteRequest): Promise<SqlCellResult> {
    const cell = req.notebook.cells[req.cellIndex];
    const source = stripTrailingSemicolons(cellSource(cell.source));
    const t0 = performance.now();
    if (!source.trim()) return { type: 'sql', cell_index: req.cellIndex, columns: [], column_types: [], rows: [], truncated: false, duration_ms: 0 };
    const { sql, addedLines } = withReferences(req.notebook.cells, req.cellIndex);
    let result: Omit<SqlCellResult, 'type' | 'cell_index' | 'duration_ms'>;
    try {
      try {
        const r = await this.ctx.queries.run({ sql, limit: this.settings.rowLimit, caller: req.caller, purpose: 'notebook', signal: req.signal });
        result = { columns: r.columns, column_types: r.column_types, rows: r.rows, truncated: r.truncated };
      } catch (e) {
        // A statement that writes: only for callers who may change the warehouse, as the pipeline would.
        if (!(isDpError(e) && e.code === 'read_only_violation' && hasPermission(req.caller, 'execute'))) throw e;
        result = await this.runWrite(cellSource(cell.source), req);
      }
    } catch (e) {
      throw withCell(e, req, addedLines);
    }
    if (cell.id) s.values.set(req.cellIndex, { [cell.id]: result.rows.map((row) => Object.fromEntries(result.columns.map((c, i) => [c, row[i]]))) });
    else s.values.delete(req.cellIndex);
    return { type: 'sql', cell_index: req.cellIndex, ...result, duration_ms: round(performance.now() - t0) };
  }

  private runWrite(sql: string, req: ExecuteRequest): Promise<Omit<SqlCellResult, 'type' | 'cell_index' | 'duration_ms'>> {
    return this.ctx.db.exclusive(() =>
      this.ctx.queries.withDeadline({ caller: req.caller, purpose: 'notebook', signal: req.signal }, async (c) => {
        await c.run(sql);
        return { columns: [], column_types: [], rows: [], truncated: false, statement: 'write' as const };
      }),
    );
  }

  // ---------------------------------------------------------------- code

  private scopeFor(s: Session, index: number): Record<string, unknown> {
    const scope: Record<string, unknown> = {};
    for (const i of [...s.values.keys()].sort((a, b) => a - b)) if (i < index) Object.assign(scope, s.values.get(i));
    return scope;
  }

  private async runCode(s: Session, req: ExecuteRequest): Promise<CodeCellResult> {
    const t0 = performance.now();
    const source = cellSource(req.notebook.cells[req.cellIndex].source);
    const env = this.ctx.env;
    const output: CodeOutputLine[] = [];
    let dropped = 0;
    const push = (stream: CodeOutputLine['stream'], text: string) => {
      if (output.length < MAX_OUTPUT_LINES) output.push({ stream, text: withEnvReferences(text, env) });
      else dropped++;
    };
    const scope = this.scopeFor(s, req.cellIndex);
    const label = `${req.path}#cell${req.cellIndex}`;
    this.ctx.services.find(WAREHOUSE_TARGET_SERVICE)?.assertLocalOnly('Notebook TypeScript cells');
    let compiled;
    try {
      compiled = await this.scripts.compileNotebookCell(label, source, Object.keys(scope));
    } catch (e) {
      if (isNotebookCellCompileFailure(e)) {
        throw badRequest('notebook_cell_error', `cell ${req.cellIndex}${e.line ? ` line ${e.line}` : ''}: ${e.message}`, { path: req.path, cell_index: req.cellIndex, line: e.line });
      }
      throw e;
    }

    const timeoutSeconds = this.ctx.project.config.query.timeout_seconds[req.caller.role];
    const controller = new AbortController();
    const timedOut = new DpError(408, 'query_timeout', `Cell ${req.cellIndex} ran past the ${timeoutSeconds} s timeout of role '${req.caller.role}' and was stopped`, {
      timeout_seconds: timeoutSeconds,
      role: req.caller.role,
      cell_index: req.cellIndex,
    });
    const stops = [req.signal, this.ctx.signal].filter((x): x is AbortSignal => Boolean(x));
    for (const stop of stops) {
      if (stop.aborted) controller.abort(stop.reason);
      else stop.addEventListener('abort', () => controller.abort(stop.reason), { once: true });
    }
    const line = (stream: CodeOutputLine['stream'], level: string) => (msg: string, data?: Record<string, unknown>) =>
      push(stream, `${level ? `[${level}] ` : ''}${msg}${data && Object.keys(data).length ? ` ${JSON.stringify(data)}` : ''}`);
    const log: Logger = { info: line('stdout', ''), warn: line('stderr', 'warn'), error: line('stderr', 'error'), debug: line('stderr', 'debug') };
    const cellConsole = scriptConsole((level) => (...args) => push(level === 'log' || level === 'info' ? 'stdout' : 'stderr', format(...args)));

    let timer: unknown;
    const outcome = await this.ctx.db.exclusive(async () => {
      // The role's deadline counts from here, like a query's counts from its slot, on ctx.clock
      // like the query deadlines (a test moves a clock it owns).
      const deadline = new Promise<never>((_, reject) => {
        // Held open: a cell waiting on nothing still ends at its deadline.
        timer = deadlineTimeout(this.ctx.clock, () => {
          controller.abort(timedOut);
          reject(timedOut);
        }, timeoutSeconds * 1000);
      });
      const left = new Promise<never>((_, reject) => {
        if (controller.signal.aborted) reject(controller.signal.reason);
        controller.signal.addEventListener('abort', () => reject(controller.signal.reason), { once: true });
      });
      deadline.catch(() => undefined);
      left.catch(() => undefined);
      try {
        const mod = (await import(compiled.url)) as { default: (dp: unknown) => Promise<{ value: unknown; exports: Record<string, unknown> }> };
        const scriptCtx = this.scripts.context(req.path, { signal: controller.signal, log });
        const running = mod.default({ console: cellConsole, ctx: scriptCtx, scope });
        return { ok: true as const, result: await Promise.race([running, deadline, left]) };
      } catch (e) {
        return { ok: false as const, error: e };
      } finally {
        if (timer !== undefined) this.ctx.clock.clearTimeout(timer);
      }
    });
    if (dropped) output.push({ stream: 'stderr', text: `... ${dropped} more lines not kept` });
    if (!outcome.ok) {
      const e = outcome.error;
      if (e === timedOut || (controller.signal.aborted && controller.signal.reason === timedOut)) throw timedOut;
      if (isDpError(e) && (e.status === 408 || e.status === 503)) throw e;
      const message = withEnvReferences(isDpError(e) ? e.message : errorMessage(e), env);
      const at = this.scripts.notebookCellErrorLine(e, compiled);
      throw new DpError(400, 'notebook_cell_error', `cell ${req.cellIndex}${at ? ` line ${at}` : ''}: ${message}`, {
        path: req.path,
        cell_index: req.cellIndex,
        line: at,
        output,
      });
    }
    const exports = outcome.result.exports ?? {};
    s.values.set(req.cellIndex, exports);
    return {
      type: 'code',
      cell_index: req.cellIndex,
      output,
      value: compiled.hasValue ? jsonSafe(outcome.result.value, env) : null,
      exports: Object.keys(exports),
      duration_ms: round(performance.now() - t0),
    };
  }
}

/** A sql cell's error with the cell in its details and DuckDB's line counted within the cell. */
function withCell(e: unknown, req: ExecuteRequest, addedLines: number): unknown {
  if (!isDpError(e)) return e;
  const line = typeof e.details.line === 'number' ? Math.max(1, e.details.line - addedLines) : null;
  return new DpError(e.status, e.code, e.message, { ...e.details, path: req.path, cell_index: req.cellIndex, line }, e.headers);
}
