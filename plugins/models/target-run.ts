/**
 * `dp transform` on an environment whose target is not the DuckDB file: the target plugin builds
 * the models there, and this side keeps what a run on the file does around the builds: the run
 * history (`_service.transform_runs`, `_service.model_runs`), the transform and model events, and
 * the hooks (beforeTransform, afterModelBuild after each built or failed model, afterTransform),
 * so inline assertions, build records, profiles and anomalies follow a run on the target too.
 */
import {
  AFTER_MODEL_BUILD,
  AFTER_TRANSFORM,
  errorMessage,
  MODEL_END,
  MODEL_START,
  TRANSFORM_END,
  TRANSFORM_START,
  type ModelBuildContext,
  type ModelBuildResult,
  type ModelBuildStatus,
  type ModelInfo,
  type PluginContext,
  type TransformSummary,
  type WarehouseTargetService,
} from '../../sdk/index.js';
import { beginRun, recordRun } from './state.js';
import { newRunId, type TransformOptions } from './transform.js';

/** The afterModelBuild hook on one model's result; its taps may flag it, never turn a failure into a success. */
export async function afterBuild(ctx: PluginContext, m: ModelInfo, result: ModelBuildResult, runId: string, signal: AbortSignal): Promise<ModelBuildResult> {
  const build: ModelBuildContext = {
    model: m.full_name,
    schema: m.schema,
    name: m.name,
    materialized: m.materialized,
    path: m.path,
    sql: m.sql,
    assertions: m.assertions,
    runId,
    status: result.status,
    durationMs: result.duration_ms,
    error: result.error,
    extras: { ...(result.extras ?? {}) },
    db: ctx.db,
    signal,
  };
  try {
    await ctx.hook(AFTER_MODEL_BUILD).promise(build);
  } catch (e) {
    ctx.log.warn(`afterModelBuild tap failed for ${m.full_name}`, { error: errorMessage(e) });
    build.extras.hook_error = errorMessage(e);
  }
  const status: ModelBuildStatus = result.status === 'error' ? 'error' : build.status;
  const out: ModelBuildResult = { model: m.full_name, status, duration_ms: result.duration_ms };
  if (status === 'error') out.error = result.error ?? build.error;
  else if (build.error) out.error = build.error;
  if (Object.keys(build.extras).length) out.extras = build.extras;
  return out;
}

/** A transform on the active target, recorded and hooked as one on the DuckDB file. */
/** `invalid`: models discovery refused (a parse error, naming the file), reported as errors and never built. */
export async function transformOnTarget(
  ctx: PluginContext,
  target: WarehouseTargetService,
  models: ModelInfo[],
  options: TransformOptions,
  invalid?: ReadonlyMap<string, string>,
): Promise<TransformSummary> {
  const signal = ctx.signal;
  const runId = newRunId();
  const startedAt = new Date();
  const force = Boolean(options.force) || Boolean(options.fullRefresh);
  const run = await beginRun(ctx, { runId, trigger: options.trigger, targets: options.targets, force, startedAt, signal });
  const record = (status: 'success' | 'error', durationMs: number, results: ModelBuildResult[]) => {
    const steps = results.map((r) => ({ model: r.model, status: r.status, duration_ms: r.duration_ms, ...(r.error ? { error: r.error } : {}) }));
    return recordRun(ctx, {
      run_id: runId,
      trigger: run.trigger,
      targets: run.targets,
      force,
      status,
      started_at: startedAt.toISOString(),
      finished_at: new Date().toISOString(),
      duration_ms: durationMs,
      built: results.filter((r) => r.status === 'built' || r.status === 'assertion_failed').length,
      skipped: results.filter((r) => r.status === 'skipped').length,
      failed: results.filter((r) => r.status === 'error' || r.status === 'upstream_failed').length,
      models: steps,
    }).then(() => steps);
  };
  const run0 = performance.now();
  const summary = await target.transform(models, {
    targets: options.targets,
    force: options.force,
    fullRefresh: options.fullRefresh,
    concurrency: options.concurrency,
    invalid,
    // Every model's end as it comes (skipped and upstream-failed ones too), as on the file.
    onModel(result, done, total) {
      ctx.events.emit(MODEL_END, { run_id: runId, ...result });
      options.onModel?.(result, done, total);
    },
    hooks: {
      runId,
      planned(n) {
        ctx.events.emit(TRANSFORM_START, { run_id: runId, trigger: run.trigger, targets: run.targets, models: n });
      },
      started: (m) => ctx.events.emit(MODEL_START, { run_id: runId, model: m.full_name, materialized: m.materialized }),
      finished: (m, result) => afterBuild(ctx, m, result, runId, signal),
    },
  }).catch(async (e) => {
    // A run that could not start or went down (the run lock held, the server gone) is an error in the history, not a run left `running`.
    await record('error', Math.round(performance.now() - run0), []);
    ctx.events.emit(TRANSFORM_END, { run_id: runId, status: 'error', duration_ms: Math.round(performance.now() - run0), failed: 0 });
    throw e;
  });
  const failed = summary.results.filter((r) => r.status === 'error' || r.status === 'upstream_failed').length;
  const steps = await record(summary.status, summary.duration_ms, summary.results);
  run.results = steps;
  run.status = summary.status;
  await ctx.hook(AFTER_TRANSFORM).promise(run);
  ctx.events.emit(TRANSFORM_END, { run_id: runId, status: summary.status, duration_ms: summary.duration_ms, failed });
  return { ...summary, run_id: runId };
}
