/**
 * The steps of a stream run: each attempt of a step (scripts, seeds or a transform), its retries
 * `retry_delay` seconds apart, and the pipeline events and hooks each attempt fires.
 */
import {
  errorMessage,
  isDpError,
  MODEL_END,
  MODEL_START,
  PIPELINE_STEP,
  STREAM_EVENTS,
  type ActivePipeline,
  type ModelsService,
  type PipelineContext,
  type PipelineEventFields,
  type PipelineEventKind,
  type PIPELINE_START,
  type PluginContext,
  type ScriptsService,
  type StreamDefinition,
  type StreamRunResult,
  type StreamStep,
  type StreamStepResult,
} from '../../sdk/index.js';
import type { PipelineEvents } from './events.js';
import type { StreamTargets } from './targets.js';

export type StreamEventListener = (event: PipelineEventKind | 'output', payload: Record<string, unknown>) => void;

export interface ActiveRun {
  runId: string;
  stream: StreamDefinition;
  trigger: string;
  startedAt: Date;
  controller: AbortController;
  step: ActivePipeline['step'];
  events: number;
  done: Promise<StreamRunResult>;
  listener?: StreamEventListener;
  /** The first step this run runs (a re-run of failed steps skips the ones that succeeded). */
  fromStep: number;
}

export class StepRunner {
  constructor(
    private readonly ctx: PluginContext,
    private readonly scripts: ScriptsService,
    private readonly models: ModelsService,
    private readonly events: PipelineEvents,
    private readonly targets: StreamTargets,
  ) {}

  emit<K extends PipelineEventKind>(run: ActiveRun, kind: K, payload: PipelineEventFields[K]): void {
    const data = { run_id: run.runId, stream: run.stream.name, ...payload, at: new Date().toISOString() };
    run.events++;
    this.events.push(kind, data);
    this.ctx.events.emit(STREAM_EVENTS[kind], data);
    run.listener?.(kind, data);
  }

  async fire(point: typeof PIPELINE_START, p: PipelineContext): Promise<void> {
    try {
      await this.ctx.hook(point).promise(p);
    } catch (e) {
      this.ctx.log.warn(`${point.id} tap failed for stream ${p.streamName}`, { error: errorMessage(e) });
    }
  }

  async runStep(run: ActiveRun, pipeline: PipelineContext, index: number, step: StreamStep): Promise<StreamStepResult> {
    const signal = run.controller.signal;
    const t0 = performance.now();
    let attempt = 0;
    let last: Pick<StreamStepResult, 'status' | 'error' | 'items'> = { status: 'error', items: [] };
    for (;;) {
      attempt++;
      run.step = { index, action: step.action, targets: step.targets, attempt };
      pipeline.step = { index, action: step.action, targets: step.targets };
      await this.fire(PIPELINE_STEP, pipeline);
      this.emit(run, 'step_start', { step: index, action: step.action, targets: step.targets, attempt });
      const started = performance.now();
      try {
        last = await this.attemptStep(run, step);
      } catch (e) {
        last = { status: signal.aborted ? 'cancelled' : 'error', error: isDpError(e) ? e.message : errorMessage(e), items: [] };
      }
      this.emit(run, 'step_end', {
        step: index,
        action: step.action,
        status: last.status,
        attempt,
        duration_ms: Math.round(performance.now() - started),
        ...(last.error ? { error: last.error } : {}),
      });
      if (last.status !== 'error' || attempt > run.stream.retries || signal.aborted) break;
      this.ctx.log.warn(`stream ${run.stream.name} step ${index + 1} failed, retrying in ${run.stream.retry_delay} s`, { error: last.error, attempt });
      run.listener?.('output', { line: `step ${index + 1} failed (${last.error}); retry ${attempt}/${run.stream.retries} in ${run.stream.retry_delay} s` });
      if (!(await this.sleep(run.stream.retry_delay * 1000, signal))) break;
    }
    return { index, action: step.action, targets: step.targets, status: signal.aborted && last.status !== 'success' ? 'cancelled' : last.status, duration_ms: Math.round(performance.now() - t0), attempts: attempt, ...(last.error ? { error: last.error } : {}), items: last.items };
  }

  /** Resolves after `ms`, or early (false) when the run is cancelled. */
  private sleep(ms: number, signal: AbortSignal): Promise<boolean> {
    return new Promise((resolve) => {
      if (signal.aborted) return resolve(false);
      const timer = setTimeout(() => {
        signal.removeEventListener('abort', onAbort);
        resolve(true);
      }, ms);
      const onAbort = () => {
        clearTimeout(timer);
        resolve(false);
      };
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }

  private async attemptStep(run: ActiveRun, step: StreamStep): Promise<Pick<StreamStepResult, 'status' | 'error' | 'items'>> {
    const signal = run.controller.signal;
    const targets = step.targets.includes('all') ? null : step.targets;
    const trigger = `stream:${run.stream.name}`;
    if (step.action === 'ingest' || step.action === 'export') {
      const items: StreamStepResult['items'] = [];
      for (const script of this.targets.scriptsOf(step)) {
        if (signal.aborted) return { status: 'cancelled', items };
        const r = await this.scripts.run(script, { signal, trigger, onOutput: (line) => run.listener?.('output', { script, line }) });
        items.push({ name: script, status: r.status, duration_ms: r.duration_ms, ...(r.error ? { error: r.error } : {}) });
        if (r.status !== 'success') return { status: r.status, error: `${script}: ${r.error}`, items };
      }
      return { status: 'success', items };
    }
    if (step.action === 'seed') {
      const results = await this.models.loadSeeds({ targets });
      const items = results.map((r) => ({ name: r.seed, status: r.status, ...(r.error ? { error: r.error } : {}) }));
      const failed = results.filter((r) => r.status === 'error');
      return failed.length ? { status: 'error', error: failed.map((f) => `${f.seed}: ${f.error}`).join('; '), items } : { status: 'success', items };
    }
    // transform: the models' own events become pipeline events (the run holds the write lock,
    // so every model event meanwhile is this transform's).
    const offStart = this.ctx.events.on(MODEL_START, ({ payload: p }) => this.emit(run, 'model_start', { step: run.step?.index, model: p.model, materialized: p.materialized }));
    const offEnd = this.ctx.events.on(MODEL_END, ({ payload: p }) =>
      this.emit(run, 'model_end', { step: run.step?.index, model: p.model, status: p.status, duration_ms: p.duration_ms, ...(p.error ? { error: p.error } : {}) }),
    );
    try {
      const summary = await this.models.transform({ targets, trigger });
      const items = summary.results.map((r) => ({ name: r.model, status: r.status, duration_ms: r.duration_ms, ...(r.error ? { error: r.error } : {}) }));
      const failed = summary.results.filter((r) => r.status === 'error' || r.status === 'upstream_failed');
      return summary.status === 'success' ? { status: 'success', items } : { status: 'error', error: failed.map((f) => `${f.model}: ${f.error ?? f.status}`).join('; '), items };
    } finally {
      offStart();
      offEnd();
    }
  }
}
