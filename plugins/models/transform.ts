/**
 * The transform engine: builds the selected models in topological order, several independent
 * models at once on their own DuckDB connections (sdk runInDependencyOrder), skipping those
 * whose SQL and upstream state are unchanged since their last successful build.
 *
 * A table model is built with `CREATE OR REPLACE TABLE ... AS <sql>` in its own transaction:
 * DuckDB builds the new table completely under a fresh catalog entry and swaps it in at commit,
 * so a failing model keeps its previous data. (An explicit temp-name + DROP + RENAME does the
 * same swap with three statements and measured 1.6-2.9x slower on small models.) When a model
 * changes between table and view, the old relation is dropped in the same transaction, and the
 * model's row in `_service.model_state` is written in it too (state survives a killed run).
 */
import crypto from 'node:crypto';
import os from 'node:os';
import {
  AFTER_MODEL_BUILD,
  AFTER_TRANSFORM,
  errorMessage,
  MODEL_END,
  MODEL_START,
  noSpaceLeft,
  qualified,
  quoteIdent,
  runInDependencyOrder,
  TRANSFORM_END,
  TRANSFORM_START,
  type DbConnection,
  type ModelBuildContext,
  type ModelBuildResult,
  type ModelBuildStatus,
  type PluginContext,
  type TransformSummary,
} from '../../sdk/index.js';
import { keyOf, selectModels, type GraphModel, type ModelGraph } from './dag.js';
import { sha256 } from './discovery.js';
import { applyIncremental, applyScd2, createStatement, type MaterializeOutcome } from './materialize.js';
import { nativeOnDuckdb } from './native.js';
import { beginRun, readCatalog, readStates, recordRun, stateWriteSql, type Relation, type StateRow } from './state.js';

export interface TransformOptions {
  targets?: string[] | null;
  force?: boolean;
  /** Rebuild incremental and scd2 models from scratch (implies force for them). */
  fullRefresh?: boolean;
  trigger?: string;
  /** Models built at once (default: up to 4, bounded by CPU count). */
  concurrency?: number;
  /** Called after each model finishes (CLI progress). */
  onModel?: (result: ModelBuildResult, done: number, total: number) => void;
}

export function newRunId(): string {
  const stamp = new Date().toISOString().replace(/[-:T]/g, '').slice(0, 14);
  return `run_${stamp}_${crypto.randomBytes(3).toString('hex')}`;
}

/**
 * Models built at once. A one-shot command (`dp transform`) has the machine to itself: 4,
 * whatever its cores (dbt's usual `threads: 4`, SQLMesh's `concurrent_tasks`). Each build also
 * waits on its commit (the write-ahead log, DuckDB's commit lock), so on a 2-core machine 4 at a
 * time keep both cores busy where 2 left them idle: a forced run of 200 small models took 1.14x a
 * bare process's time at 2 and 1.02x at 4, with less CPU, and CPU-bound models of 2 million rows
 * were no slower (bench/README.md "Transform overhead: four builds at a time"). `dp serve` keeps
 * one per core, between 2 and 4: its transforms share a small machine with the interactive
 * queries it answers meanwhile, whose p99 during a transform on 2 cores rose from 80–115 to
 * 130–140 ms at 4 at a time (bench/mixed-load.mjs).
 */
export function defaultConcurrency(ctx: Pick<PluginContext, 'serving'>): number {
  return ctx.serving ? Math.max(2, Math.min(4, os.cpus().length)) : 4;
}

/**
 * The statement(s) that rebuild a model from scratch (run in one transaction with its state
 * upsert): CREATE OR REPLACE, after dropping a relation of the other kind.
 */
export function buildStatements(m: GraphModel, existing: Relation | undefined, runStamp: string): string {
  const target = qualified(m.info.schema, m.info.name);
  const create = createStatement(m, runStamp);
  if (existing && existing.kind !== m.info.kind) {
    return `DROP ${existing.kind === 'table' ? 'TABLE' : 'VIEW'} ${target};\n${create}`;
  }
  return create;
}

function firstLine(message: string): string {
  return message.split('\n')[0];
}

export async function runTransform(ctx: PluginContext, graph: ModelGraph, options: TransformOptions): Promise<TransformSummary> {
  // Shutdown, maintenance or an environment switch: models not yet started are cancelled, running ones interrupted.
  const signal = ctx.signal;
  const selected = selectModels(graph, options.targets ?? null);
  const queue = graph.models.filter((m) => selected.has(keyOf(m.info.full_name)));
  const fullRefresh = Boolean(options.fullRefresh);
  const force = Boolean(options.force) || fullRefresh;
  const runId = newRunId();
  const startedAt = new Date();
  // One timestamp for the run: scd2 versions that change together share valid_from/valid_to.
  const runStamp = startedAt.toISOString().replace('T', ' ').replace('Z', '');
  const t0 = performance.now();
  const runCtx = await beginRun(ctx, { runId, trigger: options.trigger, targets: options.targets, force, startedAt, signal });
  ctx.events.emit(TRANSFORM_START, { run_id: runId, trigger: runCtx.trigger, targets: runCtx.targets, models: queue.length });

  const [states, catalog] = await Promise.all([ctx.db.withConnection((c) => readStates(c)), readCatalog(ctx)]);
  const schemas = [...new Set(queue.map((m) => m.info.schema))];
  if (schemas.length) await ctx.db.run(schemas.map((s) => `CREATE SCHEMA IF NOT EXISTS ${quoteIdent(s)};`).join('\n'));

  /** Models of this run that failed or were not built because an upstream failed: their downstream is not built. */
  const notBuilt = new Set<string>();

  // The relations this run has built and committed: a downstream model's reference to one needs no catalog lookup in its file-read check.
  const builtRelations = new Set<string>();

  const upstreamToken = (name: string): string => {
    const k = keyOf(name);
    return states.get(k)?.state_hash ?? (catalog.get(k) ? `external:${catalog.get(k)!.signature}` : 'absent');
  };

  const buildOne = async (m: GraphModel, conn: DbConnection): Promise<ModelBuildResult> => {
    const key = keyOf(m.info.full_name);
    const model = m.info.full_name;
    const blocker = m.upstreamModels.find((u) => notBuilt.has(u));
    if (blocker) return { model, status: 'upstream_failed', duration_ms: 0, error: `Upstream model ${graph.byKey.get(blocker)!.info.full_name} failed` };
    if (signal.aborted) return { model, status: 'error', duration_ms: 0, error: `Cancelled: ${errorMessage(signal.reason)}` };
    const token = sha256([m.file.content_hash, m.info.materialized, ...m.upstream.map((u) => `${keyOf(u)}=${upstreamToken(u)}`).sort()].join('\n'));
    const existing = catalog.get(key);
    // Incremental and scd2 models always run: finding the new rows is their job, and the cheap
    // signature of an external upstream (row count, width) does not see an UPDATE.
    const accumulates = m.info.materialized === 'incremental' || m.info.materialized === 'scd2';
    if (!force && !accumulates && states.get(key)?.state_hash === token && existing?.kind === m.info.kind) {
      return { model, status: 'skipped', duration_ms: 0 };
    }
    ctx.events.emit(MODEL_START, { run_id: runId, model, materialized: m.info.materialized });
    const started = performance.now();
    let status: ModelBuildStatus = 'built';
    let error: string | undefined;
    let outcome: MaterializeOutcome = {};
    const row: StateRow = { name: key, kind: 'model', content_hash: m.file.content_hash, state_hash: token, materialized: m.info.materialized, rows: null };
    const stateSql = () => stateWriteSql(row, states.has(key));
    if (m.file.parseError) {
      status = 'error';
      error = `${m.file.path}${m.file.parseErrorLine ? `:${m.file.parseErrorLine}` : ''}: ${m.file.parseError}`;
    } else if (m.file.dialect) {
      status = 'error';
      error = nativeOnDuckdb(m.file);
    } else if (m.file.configProblems.length) {
      status = 'error';
      error = m.file.configProblems.map((p) => `${m.file.path}:${p.line ?? 1}: ${p.message}`).join('; ');
    } else {
      // Incremental and scd2 tables that exist take their new rows; everything else is rebuilt.
      const applies =
        !fullRefresh &&
        existing?.kind === 'table' &&
        states.get(key)?.materialized === m.info.materialized &&
        (m.info.materialized === 'incremental' || m.info.materialized === 'scd2');
      try {
        // Model SQL may read project files (seeds), never the host, hidden files or the database.
        await ctx.db.assertProjectFileReads(m.file.query, { builtRelations });
        // The relation and its state commit together: a run killed at any point leaves every
        // model either as before with its old state or rebuilt with its new state, so the next
        // run neither skips a table no file describes nor rebuilds what was already built.
        if (applies) {
          outcome = await conn.transaction(async (c) => {
            const applied = m.info.materialized === 'incremental' ? await applyIncremental(c, m) : await applyScd2(c, m, runStamp);
            // Downstream models see new data as a new upstream state; a run that added nothing keeps the old one.
            const previous = states.get(key)?.state_hash;
            if (!applied.rows_applied && !applied.schema_changes && previous) row.state_hash = previous;
            else row.state_hash = sha256(`${token}\n${runId}`);
            await c.run(stateSql());
            return applied;
          });
        } else {
          // The build and the state upsert go to DuckDB as one text: one call instead of two runs
          // (a statement with parameters is three calls in the node client).
          if (accumulates) row.state_hash = sha256(`${token}\n${runId}`);
          const sql = buildStatements(m, existing, runStamp);
          if (m.file.query !== m.file.body) {
            // A simplified PIVOT (no IN list) reads its values first, which DuckDB refuses inside an
            // explicit transaction on a locked configuration: the CREATE OR REPLACE commits on its
            // own (still atomic) and the state follows; a kill in between costs one rebuild.
            if (accumulates) throw new Error(`a ${m.info.materialized} model's PIVOT needs an IN (...) list: DuckDB reads the values of a PIVOT without one outside the run's transaction`);
            await conn.run(sql);
            await conn.run(stateSql());
          } else await conn.transaction((c) => c.run(`${sql};\n${stateSql()}`));
        }
      } catch (e) {
        status = 'error';
        // A full disk is said plainly, without DuckDB's absolute path of the database or temp file.
        const full = noSpaceLeft(e, `the build of ${model}`);
        error = `${m.file.path}: ${full ? full.message : firstLine(errorMessage(e))}`;
      }
    }
    const durationMs = Math.round((performance.now() - started) * 100) / 100;
    if (status === 'built') {
      catalog.set(key, { kind: m.info.kind, signature: '' });
      states.set(key, row);
      builtRelations.add(key);
    }
    const buildCtx: ModelBuildContext = {
      model,
      schema: m.info.schema,
      name: m.info.name,
      materialized: m.info.materialized,
      path: m.info.path,
      sql: m.file.body,
      assertions: m.info.assertions,
      runId,
      status,
      durationMs,
      error,
      extras: { ...(outcome.rows_applied !== undefined ? { rows_applied: outcome.rows_applied } : {}), ...(outcome.schema_changes ? { schema_changes: outcome.schema_changes } : {}) },
      db: ctx.db,
      signal,
    };
    try {
      await ctx.hook(AFTER_MODEL_BUILD).promise(buildCtx);
    } catch (e) {
      ctx.log.warn(`afterModelBuild tap failed for ${model}`, { error: errorMessage(e) });
      buildCtx.extras.hook_error = errorMessage(e);
    }
    // A tap may flag assertion failures on built data; it cannot turn a failed build into a success.
    const finalStatus: ModelBuildStatus = status === 'error' ? 'error' : buildCtx.status;
    const result: ModelBuildResult = { model, status: finalStatus, duration_ms: durationMs };
    if (finalStatus === 'error') result.error = error ?? buildCtx.error;
    else if (buildCtx.error) result.error = buildCtx.error;
    if (Object.keys(buildCtx.extras).length) result.extras = buildCtx.extras;
    return result;
  };

  const connections: Array<DbConnection & { close(): void }> = [];
  // Aborted: every connection is interrupted (repeatedly, see interruptUntilSettled) until the run is over.
  let runOver!: () => void;
  const over = new Promise<void>((resolve) => (runOver = resolve));
  const interruptUntilOver = (c: DbConnection) => void c.interruptUntilSettled(over, { everyMs: 100 });
  const interruptAll = () => connections.forEach(interruptUntilOver);
  signal.addEventListener('abort', interruptAll);
  let ordered: ModelBuildResult[];
  try {
    // One connection per model building at once, kept for the next model when it is done.
    const idle: Array<DbConnection & { close(): void }> = [];
    ordered = await runInDependencyOrder(queue, {
      key: (m) => keyOf(m.info.full_name),
      dependsOn: (m) => m.upstreamModels,
      concurrency: options.concurrency ?? defaultConcurrency(ctx),
      async run(m) {
        let conn = idle.pop();
        if (!conn) {
          conn = await ctx.db.connect();
          connections.push(conn);
          if (signal.aborted) interruptUntilOver(conn);
        }
        try {
          return await buildOne(m, conn);
        } finally {
          idle.push(conn);
        }
      },
      onDone(m, result, done) {
        if (result.status === 'error' || result.status === 'upstream_failed') notBuilt.add(keyOf(m.info.full_name));
        ctx.events.emit(MODEL_END, { run_id: runId, ...result });
        options.onModel?.(result, done, queue.length);
      },
    });
  } finally {
    runOver();
    signal.removeEventListener('abort', interruptAll);
    for (const c of connections) c.close();
  }

  const failed = ordered.filter((r) => r.status === 'error' || r.status === 'upstream_failed').length;
  const status: 'success' | 'error' = failed > 0 ? 'error' : 'success';
  const durationMs = Math.round(performance.now() - t0);
  const finishedAt = new Date();
  await recordRun(ctx, {
    run_id: runId,
    trigger: runCtx.trigger,
    targets: runCtx.targets,
    force,
    status,
    started_at: startedAt.toISOString(),
    finished_at: finishedAt.toISOString(),
    duration_ms: durationMs,
    built: ordered.filter((r) => r.status === 'built' || r.status === 'assertion_failed').length,
    skipped: ordered.filter((r) => r.status === 'skipped').length,
    failed,
    models: ordered.map((r) => ({ model: r.model, status: r.status, duration_ms: r.duration_ms, ...(r.error ? { error: r.error } : {}) })),
  });
  runCtx.results = ordered.map((r) => ({ model: r.model, status: r.status, duration_ms: r.duration_ms, ...(r.error ? { error: r.error } : {}) }));
  runCtx.status = status;
  await ctx.hook(AFTER_TRANSFORM).promise(runCtx);
  ctx.events.emit(TRANSFORM_END, { run_id: runId, status, duration_ms: durationMs, failed });
  return { run_id: runId, status, duration_ms: durationMs, results: ordered };
}
