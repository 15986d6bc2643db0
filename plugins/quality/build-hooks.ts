/** What the quality plugin does as models build and runs end: assertions, profiles, anomalies, alerts. */
import { AFTER_MODEL_BUILD, AFTER_TRANSFORM, errorMessage, MODEL_END, PIPELINE_END, TRANSFORM_END, TRANSFORM_START, type AssertionOutcome, type PluginContext } from '../../sdk/index.js';
import type { AlertDispatcher } from './alerts.js';
import { detectAnomalies, type AnomalyReport, type AnomalySettings } from './anomalies.js';
import { evaluateAssertions, recordAssertionResults, summarizeOutcome } from './assertions.js';
import { QUALITY_CONFIG } from './config.js';
import type { BuildRecorder } from './recorder.js';
import { maskedNamesFor, modelsService, redactQuoted, STORED_AUDIENCE, utcNow } from './relations.js';

const BUILT = new Set(['built', 'assertion_failed']);
const KEPT_RUNS = 20;

/** Taps afterModelBuild, afterTransform and pipelineEnd. */
export function tapBuildHooks(ctx: PluginContext, alerts: AlertDispatcher, recorder: BuildRecorder, anomalyReports: Map<string, AnomalyReport[]>): void {
  /** Assertion failures of a run, sent as one alert when the run ends. */
  const failuresByRun = new Map<string, Array<{ model: string; failed: AssertionOutcome[] }>>();
  const anomalySettings = () => ctx.config(QUALITY_CONFIG).anomaly_detection;

  /** Reports of a run's built models: one batched comparison, or model by model when that fails. */
  const anomalyReportsOf = async (runId: string, models: string[], settings: AnomalySettings): Promise<AnomalyReport[]> => {
    try {
      return await detectAnomalies(ctx, runId, models, settings);
    } catch (e) {
      ctx.log.error('anomaly detection of a run failed; comparing model by model', { run_id: runId, error: errorMessage(e) });
    }
    const reports: AnomalyReport[] = [];
    for (const model of models) {
      try {
        reports.push(...(await detectAnomalies(ctx, runId, [model], settings)));
      } catch (e) {
        ctx.log.error('anomaly detection failed', { model, error: errorMessage(e) });
      }
    }
    return reports;
  };

  // ------------------------------------------------------------------ hooks

  ctx.tap(AFTER_MODEL_BUILD, async (b) => {
    if (b.status !== 'built') return;
    try {
      const expressions = b.assertions ?? (await modelsService(ctx)?.get(b.model))?.assertions ?? [];
      if (expressions.length) {
        const outcomes = await evaluateAssertions(ctx, `${b.schema}.${b.name}`, expressions, { audience: STORED_AUDIENCE });
        await recordAssertionResults(ctx, b.runId, b.model, outcomes);
        b.extras.assertions = outcomes;
        const failed = outcomes.filter((o) => !o.passed);
        if (failed.length) {
          // docs/decisions.md "Errors" 3: no exception and no rollback, only the flag.
          b.status = 'assertion_failed';
          const list = failuresByRun.get(b.runId) ?? [];
          list.push({ model: b.model, failed });
          failuresByRun.set(b.runId, list);
        }
      }
    } catch (e) {
      b.extras.quality_error = errorMessage(e);
      ctx.log.error('quality checks after a model build failed', { model: b.model, error: errorMessage(e) });
    }
    // Build time and profile are recorded by the recorder's worker, beside the next builds.
    recorder.add({ model: b.model, schema: b.schema, table: b.name, status: b.status, runId: b.runId, builtAt: utcNow(), profile: anomalySettings().enabled });
  });

  // A run's builds are all queued once its last planned model has ended (MODEL_END follows the
  // model's afterModelBuild): its last batch starts then, beside the run's own record, instead of
  // after it when afterTransform asks.
  const unended = new Map<string, number>();
  ctx.events.on(TRANSFORM_START, ({ payload: p }) => {
    if (p.models > 0) unended.set(p.run_id, p.models);
  });
  ctx.events.on(MODEL_END, ({ payload: p }) => {
    const n = unended.get(p.run_id);
    if (n === undefined) return;
    if (n > 1) unended.set(p.run_id, n - 1);
    else {
      unended.delete(p.run_id);
      recorder.allQueued(p.run_id);
    }
  });
  ctx.events.on(TRANSFORM_END, ({ payload: p }) => void unended.delete(p.run_id));

  ctx.tap(AFTER_TRANSFORM, async (run) => {
    await recorder.settled(run.runId);
    const settings = anomalySettings();
    if (settings.enabled) {
      const built = run.results.filter((r) => BUILT.has(r.status)).map((r) => r.model);
      const reports = await anomalyReportsOf(run.runId, built, settings);
      anomalyReports.set(run.runId, reports);
      while (anomalyReports.size > KEPT_RUNS) anomalyReports.delete(anomalyReports.keys().next().value as string);
      const found = reports.flatMap((r) => r.anomalies);
      if (found.length && settings.notify.length) {
        void alerts.notify(
          {
            type: 'anomaly',
            title: `${found.length} anomal${found.length === 1 ? 'y' : 'ies'} after transform ${run.runId}`,
            message: found.map((a) => `${a.model} ${a.metric}${a.column ? `(${a.column})` : ''} = ${a.value}, mean ${a.mean}, z ${a.z_score}`).join('\n'),
            details: { run_id: run.runId, anomalies: found },
          },
          settings.notify,
        );
      }
    }
    const failures = failuresByRun.get(run.runId) ?? [];
    failuresByRun.delete(run.runId);
    if (failures.length) {
      void alerts.notify({
        type: 'assertion_failure',
        title: `Assertions failed on ${failures.length} model${failures.length === 1 ? '' : 's'}`,
        message: failures.flatMap((f) => f.failed.map((o) => `${f.model}: ${o.expression} — ${summarizeOutcome(o)}`)).join('\n'),
        details: { run_id: run.runId, models: failures.map((f) => ({ model: f.model, assertions: f.failed })) },
      });
    }
    if (run.status === 'error') {
      // Build errors quote the values DuckDB failed on; alert history is read by viewers and sent out.
      const bound = (await maskedNamesFor(ctx, STORED_AUDIENCE)).size > 0;
      const failed = run.results.filter((r) => r.status === 'error').map((r) => (bound && r.error ? { ...r, error: redactQuoted(r.error) } : r));
      void alerts.notify({
        type: 'pipeline_failure',
        title: `Transform ${run.runId} failed`,
        message: failed.length ? failed.map((r) => `${r.model}: ${r.error ?? 'error'}`).join('\n') : 'The transform run ended with an error',
        details: { run_id: run.runId, trigger: run.trigger, failed_models: failed },
      });
    } else if (run.status === 'success') {
      void alerts.notify({
        type: 'pipeline_success',
        title: `Transform ${run.runId} succeeded`,
        message: `${run.results.length} model(s) processed`,
        details: { run_id: run.runId, trigger: run.trigger, results: run.results },
      });
    }
  });

  ctx.tap(PIPELINE_END, async (p) => {
    if (p.status === 'error') {
      const bound = (await maskedNamesFor(ctx, STORED_AUDIENCE)).size > 0;
      const error = p.error && bound ? redactQuoted(p.error) : p.error;
      void alerts.notify({
        type: 'pipeline_failure',
        title: `Stream ${p.streamName} failed`,
        message: error ?? (p.step ? `Step ${p.step.index + 1} (${p.step.action}) failed` : 'The stream run ended with an error'),
        details: { run_id: p.runId, stream: p.streamName, trigger: p.trigger, step: p.step ?? null, duration_ms: p.durationMs ?? null },
      });
    } else if (p.status === 'success') {
      void alerts.notify({
        type: 'pipeline_success',
        title: `Stream ${p.streamName} succeeded`,
        message: `Finished in ${Math.round((p.durationMs ?? 0) / 100) / 10} s`,
        details: { run_id: p.runId, stream: p.streamName, trigger: p.trigger, duration_ms: p.durationMs ?? null },
      });
    }
  });
}
