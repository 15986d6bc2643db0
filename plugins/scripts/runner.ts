/**
 * The scripts plugin's runner (the `scripts` service): runs an ingest/export script or a `.dpnb` notebook
 * in the server's process (DuckDB allows one writer process), under the kernel's write lock,
 * with a `ctx` of `db`, `config`, `env`, `secrets`, `log`, `signal` and the fields other plugins
 * contribute through SCRIPT_CONTEXT.
 *
 * Only files under `ingest/`, `export/` or `notebooks/` run, checked on the path as written and
 * again on its real path (a symlink from ingest/ to anywhere else is refused), before anything
 * is compiled. Output (console and ctx.log) is captured per run through an AsyncLocalStorage, so
 * two runs at once never mix their lines. Cancelling aborts `ctx.signal`, interrupts the run's
 * queries and makes its next database call throw; a script that ignores all of that is reported
 * cancelled after a grace period and can no longer touch the database.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import {
  badRequest,
  errorMessage,
  isDpError,
  notFound,
  readNotebook,
  scriptConsole,
  scriptConsoleLine,
  SCRIPT_EXTENSIONS,
  SCRIPT_HISTORY_OUTPUT_LINES,
  withEnvReferences,
  type BulkTarget,
  type BulkWriter,
  type CompiledNotebookCell,
  type DbConnection,
  type Logger,
  type NotebookCellRunner,
  type PluginContext,
  type ScriptContext,
  type ScriptContextContribution,
  type ScriptRunOptions,
  type ScriptRunResult,
  type ScriptsService,
  type ScriptRunRecord,
} from '../../sdk/index.js';
import { compileCell, compileScript, SCRIPT_CONSOLE, scriptStack, type CompiledScript } from './compile.js';
import { cellStack, compileNotebookCell, errorLine } from './notebook-cells.js';

export const SCRIPT_FOLDERS = ['ingest', 'export', 'notebooks'] as const;
export const MODULE_EXTENSIONS = ['.ts', '.js', '.mjs'] as const;
const SUPPORTED: readonly string[] = SCRIPT_EXTENSIONS;

/** Lines of output kept per run; later lines are counted, not kept (a chatty loop cannot fill memory). */
const MAX_OUTPUT_LINES = 10_000;
/** How long a cancelled script that ignores its signal may go on before the run is reported cancelled. */
const CANCEL_GRACE_MS = 5_000;

interface RunOutput {
  push(line: string): void;
}

const currentRun = new AsyncLocalStorage<RunOutput>();

/** `20260302104501`: a run id's time part, as the streams plugin's run ids have it. */
function startStamp(): string {
  return new Date().toISOString().replace(/[-:T]/g, '').slice(0, 14);
}

/** The last `max` lines, with a first line counting the ones left out. */
function lastLines(lines: string[], max: number): string[] {
  if (lines.length <= max) return [...lines];
  return [`... ${lines.length - max + 1} earlier lines not kept`, ...lines.slice(-(max - 1))];
}

/**
 * The `console` compiled scripts see (compile.ts's banner): inside a run its lines go to that
 * run's output; outside one (a timer that outlived its run) to the process console.
 */
function installScriptConsole(): void {
  const g = globalThis as unknown as Record<symbol, unknown>;
  if (g[SCRIPT_CONSOLE]) return;
  g[SCRIPT_CONSOLE] = scriptConsole((level) => (...args) => {
    const run = currentRun.getStore();
    if (run) run.push(scriptConsoleLine(level, args));
    else console[level](...args);
  });
}

/** A project-relative script path, checked: inside the script folders, a supported language, present. */
export interface ScriptFile {
  /** Project-relative, forward slashes. */
  path: string;
  abs: string;
  kind: 'module' | 'notebook';
}

function cancelledError(signal: AbortSignal): Error {
  const reason = signal.reason;
  return new Error(`The run was cancelled${reason instanceof Error && reason.message ? ` (${reason.message})` : typeof reason === 'string' ? ` (${reason})` : ''}`);
}

/**
 * The database as a script sees it: the server's pool, every call refused once the run is
 * cancelled, and the run's borrowed connections interrupted at that moment.
 */
function scriptDatabase(ctx: PluginContext, signal: AbortSignal): ScriptContext['db'] {
  /** Each borrowed connection and the script's work on it. */
  const lent = new Map<DbConnection, Promise<unknown>>();
  const guard = () => {
    if (signal.aborted) throw cancelledError(signal);
  };
  // Repeated until the work settled: DuckDB forgets an interrupt that lands before the statement started on a worker.
  signal.addEventListener('abort', () => lent.forEach((work, c) => void c.interruptUntilSettled(work)), { once: true });
  const guarded = <T extends object>(target: T): T =>
    new Proxy(target, {
      get(t, key) {
        const v = Reflect.get(t, key, t);
        if (typeof v !== 'function') return v;
        return (...args: unknown[]) => {
          guard();
          return (v as (...a: unknown[]) => unknown).apply(t, args);
        };
      },
    });
  const withConnection = <T>(fn: (c: DbConnection) => Promise<T>): Promise<T> => {
    guard();
    return ctx.db.withConnection(async (c) => {
      const work = fn(guarded(c));
      lent.set(c, work);
      try {
        return await work;
      } finally {
        lent.delete(c);
      }
    });
  };
  const bulkLoad = (target: BulkTarget & { transaction?: boolean }, fn: (w: BulkWriter) => Promise<void>) =>
    withConnection((c) => {
      const load = (on: DbConnection) => on.bulkLoad(target, (w) => fn(guarded(w)));
      return target.transaction ? c.transaction(load) : load(c);
    });
  return Object.freeze({
    withConnection,
    bulkLoad,
    all: (sql: string, params?: never) => withConnection((c) => c.all(sql, params)),
    query: (sql: string, params?: never) => withConnection((c) => c.query(sql, params)),
    run: (sql: string, params?: never) => withConnection((c) => c.run(sql, params)),
    value: (sql: string, params?: never) => withConnection((c) => c.value(sql, params)),
  }) as ScriptContext['db'];
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value as Record<string, unknown>)) deepFreeze(v);
  }
  return value;
}

export class ScriptRunner implements ScriptsService {
  constructor(
    private readonly ctx: PluginContext,
    private readonly contributions: ScriptContextContribution[],
    /** The notebooks plugin's cell runner, when enabled (filled during setup). */
    private readonly cellRunners: NotebookCellRunner[] = [],
    /** Taps of `scripts.runEnded` (the streams plugin records the run in its history). */
    private readonly runEnded: (record: ScriptRunRecord) => Promise<void> = async () => {},
  ) {
    installScriptConsole();
  }

  /**
   * Checks a script path before anything runs: 400 `script_path_refused` outside the script
   * folders (as written or once symlinks are resolved), 400 `unsupported_script_language` for
   * any other extension, 404 `file_not_found` when absent.
   */
  locate(scriptPath: string): ScriptFile {
    const root = this.ctx.project.root;
    const raw = String(scriptPath ?? '').trim();
    const asWritten = path.isAbsolute(raw) ? path.relative(root, raw) : raw;
    const rel = path.posix.normalize(asWritten.split(path.sep).join('/')).replace(/^\.\//, '');
    const refuse = () =>
      badRequest('script_path_refused', `Scripts run only from ${SCRIPT_FOLDERS.map((f) => `${f}/`).join(', ')} of the project: '${raw}' is not inside them`, {
        path: raw,
        allowed: [...SCRIPT_FOLDERS],
      });
    const inFolders = (p: string) => {
      const parts = p.split('/');
      return parts.length >= 2 && (SCRIPT_FOLDERS as readonly string[]).includes(parts[0]) && !parts.includes('..') && parts.every((x) => x !== '');
    };
    if (!raw || !inFolders(rel)) throw refuse();
    const ext = path.extname(rel).toLowerCase();
    if (!SUPPORTED.includes(ext)) {
      throw badRequest(
        'unsupported_script_language',
        `${rel}: ${ext === '.py' ? 'Python scripts cannot run here; scripts' : 'scripts'} are TypeScript or JavaScript (${MODULE_EXTENSIONS.join(', ')}) or notebooks (.dpnb)`,
        { path: rel, supported: SUPPORTED },
      );
    }
    const abs = this.ctx.project.resolveReadable(rel);
    if (!fs.existsSync(abs) || !fs.statSync(abs).isFile()) throw notFound('file_not_found', `No script at ${rel}`, { path: rel });
    const real = path.relative(fs.realpathSync(root), fs.realpathSync(abs)).split(path.sep).join('/');
    if (!inFolders(real) || path.extname(real).toLowerCase() !== ext) throw refuse();
    return { path: rel, abs, kind: ext === '.dpnb' ? 'notebook' : 'module' };
  }

  async run(scriptPath: string, options: ScriptRunOptions = {}): Promise<ScriptRunResult> {
    const file = this.locate(scriptPath);
    const trigger = options.trigger ?? 'api';
    const runId = `script_${startStamp()}_${crypto.randomBytes(3).toString('hex')}`;
    const startedAt = new Date();
    const t0 = performance.now();
    const output: string[] = [];
    let dropped = 0;
    // A .env value a script prints shows as its ${VAR} reference: output goes to editors, who may not read secrets.
    const env = this.ctx.env;
    const push = (raw: string) => {
      const line = withEnvReferences(raw, env);
      if (output.length < MAX_OUTPUT_LINES) output.push(line);
      else dropped++;
      options.onOutput?.(line);
    };
    const controller = new AbortController();
    const stops = [options.signal, this.ctx.signal].filter((s): s is AbortSignal => Boolean(s));
    // Taken off again when the run ends: the plugin's signal lives as long as the server.
    const onStop = (event: Event) => controller.abort((event.target as AbortSignal).reason);
    for (const s of stops) {
      if (s.aborted) controller.abort(s.reason);
      else s.addEventListener('abort', onStop, { once: true });
    }
    const signal = controller.signal;
    const log = this.scriptLogger(push);

    const outcome = await this.ctx.db.exclusive(async () => {
      try {
        if (signal.aborted) throw cancelledError(signal);
        if (file.kind === 'notebook') await this.runNotebook(file, signal, log, push);
        else {
          const compiled = await compileScript(this.ctx.project.root, file.abs);
          await this.invoke(compiled, file.path, this.scriptContext(file.path, signal, log), push, signal);
        }
        // A script that noticed the cancel and returned was still cancelled.
        if (signal.aborted) return { status: 'cancelled' as const, error: errorMessage(cancelledError(signal)) };
        return { status: 'success' as const };
      } catch (e) {
        if (signal.aborted) return { status: 'cancelled' as const, error: errorMessage(cancelledError(signal)) };
        const failure = e as { message?: string; stack?: string; scriptStack?: string };
        return { status: 'error' as const, error: isDpError(e) ? e.message : errorMessage(e), stack: failure.scriptStack };
      }
    }).finally(() => stops.forEach((s) => s.removeEventListener('abort', onStop)));
    if (dropped) output.push(`... ${dropped} more lines not kept`);
    const result: ScriptRunResult = {
      path: file.path,
      status: outcome.status,
      duration_ms: Math.round((performance.now() - t0) * 100) / 100,
      output,
      ...(outcome.status !== 'success' ? { error: withEnvReferences(outcome.error ?? '', env) } : {}),
      ...('stack' in outcome && outcome.stack ? { stack: withEnvReferences(outcome.stack, env) } : {}),
    };
    try {
      await this.runEnded({
        run_id: runId,
        path: file.path,
        trigger,
        status: result.status,
        started_at: startedAt.toISOString(),
        finished_at: new Date().toISOString(),
        duration_ms: result.duration_ms,
        error: result.error ?? null,
        output: lastLines(output, SCRIPT_HISTORY_OUTPUT_LINES),
      });
    } catch (e) {
      this.ctx.log.warn('a scripts.runEnded tap failed', { path: file.path, error: errorMessage(e) });
    }
    this.ctx.log.info(`script ${file.path} ${result.status}`, { trigger, duration_ms: result.duration_ms });
    return result;
  }

  /** Calls a compiled module's default export inside the run's output scope; a cancelled run stops waiting after the grace. */
  private async invoke(compiled: CompiledScript, rel: string, scriptCtx: ScriptContext | Record<string, unknown>, push: (line: string) => void, signal: AbortSignal): Promise<void> {
    const output: RunOutput = { push };
    await currentRun.run(output, async () => {
      const mod = (await import(compiled.url)) as { default?: unknown };
      const fn = mod.default;
      if (typeof fn !== 'function') throw badRequest('invalid_script', `${rel} has no default export: write \`export default async (ctx) => { ... }\``, { path: rel });
      const running = Promise.resolve().then(() => (fn as (c: unknown) => unknown)(scriptCtx));
      let graceTimer: NodeJS.Timeout | undefined;
      const cancelled = new Promise<never>((_, reject) => {
        const onAbort = () => {
          graceTimer = setTimeout(() => reject(cancelledError(signal)), CANCEL_GRACE_MS);
          graceTimer.unref();
        };
        if (signal.aborted) onAbort();
        else signal.addEventListener('abort', onAbort, { once: true });
      });
      try {
        await Promise.race([running, cancelled]);
      } catch (e) {
        const stack = scriptStack(e, compiled);
        if (e && typeof e === 'object') (e as { scriptStack?: string }).scriptStack = stack;
        else throw Object.assign(new Error(String(e)), { scriptStack: stack });
        throw e;
      } finally {
        clearTimeout(graceTimer);
      }
    });
  }

  compileNotebookCell(label: string, source: string, scopeNames: string[]): Promise<CompiledNotebookCell> {
    return compileNotebookCell(this.ctx.project.root, label, source, scopeNames);
  }

  notebookCellErrorLine(error: unknown, compiled: CompiledNotebookCell): number | null {
    return errorLine(error, compiled);
  }

  notebookCellStack(error: unknown, compiled: CompiledNotebookCell, label: string): string | undefined {
    return cellStack(error, compiled, label);
  }

  context(projectPath: string, options: { signal: AbortSignal; log: Logger }): ScriptContext {
    return this.scriptContext(projectPath, options.signal, options.log);
  }

  /** What `export default async (ctx) => {}` receives. */
  private scriptContext(rel: string, signal: AbortSignal, log: Logger): ScriptContext {
    const secrets = this.ctx.secrets;
    const scriptCtx: ScriptContext = {
      db: scriptDatabase(this.ctx, signal),
      config: deepFreeze(structuredClone(this.ctx.project.config)) as unknown as ScriptContext['config'],
      env: Object.freeze({ ...this.ctx.env }),
      secrets: Object.freeze({ get: (name: string) => secrets.get(name) }),
      log,
      signal,
    };
    for (const c of this.contributions) {
      if (c.key in scriptCtx) throw new Error(`A script context contribution uses the reserved key '${c.key}'`);
      scriptCtx[c.key] = c.create({ signal, log, path: rel });
    }
    return Object.freeze(scriptCtx);
  }

  /** ctx.log: lines into the run's output (and the server's log at debug). */
  private scriptLogger(push: (line: string) => void): Logger {
    const line = (level: string) => (msg: string, data?: Record<string, unknown>) => push(`${level === 'info' ? '' : `[${level}] `}${msg}${data && Object.keys(data).length ? ` ${JSON.stringify(data)}` : ''}`);
    return { info: line('info'), warn: line('warn'), error: line('error'), debug: line('debug') };
  }

  /**
   * SPEC's pipeline rules for notebooks: markdown skipped; code, ingest and SQL cells run top to
   * bottom with `db` injected; the first failing cell stops the run (its number in the error).
   */
  private async runNotebook(file: ScriptFile, signal: AbortSignal, log: Logger, push: (line: string) => void): Promise<void> {
    const { cells } = readNotebook(fs.readFileSync(file.abs, 'utf8'), file.path);
    const scriptCtx = this.scriptContext(file.path, signal, log);
    const cellSession = this.cellRunners[0]?.start(file.path, scriptCtx, push);
    for (const [i, cell] of cells.entries()) {
      if (signal.aborted) throw cancelledError(signal);
      const label = `cell ${i} (${cell.type})`;
      try {
        if (cell.type === 'markdown') continue;
        if (!cell.source.trim()) continue;
        if (cellSession && (cell.type === 'sql' || cell.type === 'code' || cell.type === 'ingest')) {
          await currentRun.run({ push }, () => cellSession.runCell(cells, i));
          push(`${label}: ok`);
        } else if (cell.type === 'sql') {
          await scriptCtx.db.run(cell.source);
          push(`${label}: ok`);
        } else if (cell.type === 'code' || cell.type === 'ingest') {
          const compiled = await compileCell(this.ctx.project.root, `${file.path}#cell${i + 1}`, cell.source);
          await this.invoke(compiled, file.path, scriptCtx, push, signal);
          push(`${label}: ok`);
        } else throw new Error(`unknown cell type '${cell.type}' (markdown, code, ingest, sql)`);
      } catch (e) {
        const message = isDpError(e) ? e.message : errorMessage(e);
        throw Object.assign(new Error(`${label} failed: ${message}`), { scriptStack: (e as { scriptStack?: string }).scriptStack });
      }
    }
  }
}
