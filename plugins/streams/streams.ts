/**
 * Stream runs (SPEC "Stream (pipeline) configuration"): the steps of a `streams:` entry in
 * order, each `ingest`/`export` (scripts), `seed` or `transform` (the models service) with its
 * targets or `[all]`; a failed step retried `retries` times `retry_delay` seconds apart, then the
 * run stops. One pipeline runs at a time and holds the kernel's write lock for its whole run (a
 * transform inside it re-enters the lock). Cancelling stops at the next step boundary and
 * aborts the running script through its signal; a transform step finishes its models (SPEC:
 * in-flight queries are not interrupted). Each run fires streams.pipelineStart/Step/End, pushes the
 * pipeline events, lands in `_service.run_history` and, with `webhook_url`, POSTs its outcome
 * through the kernel's notifier (`ctx.notifier`: timeout, one retry, a throttle per receiver).
 */
import {
  badRequest,
  conflict,
  errorMessage,
  isDpError,
  MODEL_END,
  MODEL_START,
  notFound,
  PIPELINE_END,
  PIPELINE_START,
  PIPELINE_STEP,
  SCRIPT_EXTENSIONS,
  STREAM_EVENTS,
  walkProjectFiles,
  type ActivePipeline,
  type ModelsService,
  type PipelineContext,
  type PipelineEventFields,
  type PipelineEventKind,
  type PluginContext,
  type ProjectProblem,
  type ScriptsService,
  type StreamDefinition,
  type StreamInput,
  type StreamRunResult,
  type StreamsService,
  type StreamStep,
  type StreamStepResult,
} from '../../sdk/index.js';
import type { PipelineEvents } from './events.js';
import { STREAMS_CONFIG, streamDefinitions, writtenStream } from './config.js';
import { newRunId, readRun, recordHistory, recordHistoryStart } from './history.js';
import { streamProblems } from './validate.js';

/** SPEC "Limits": a run older than this is cleared when the snapshot is read. */
export const STALE_RUN_MS = 10 * 60_000;

export type StreamEventListener = (event: PipelineEventKind | 'output', payload: Record<string, unknown>) => void;

interface ActiveRun {
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

/** The models a transform selector names (`name`, `schema.name`, `+name`, `name+`). */
function selectorName(selector: string): string {
  return selector.replace(/^\+/, '').replace(/\+$/, '');
}

export class StreamRunner implements StreamsService {
  private current: ActiveRun | null = null;
  /** The snapshot of the last finished run (SPEC's `finished`, `status`, `duration_seconds`). */
  private last: ActivePipeline | null = null;

  /** The definitions made from the `streams:` value they were read from (the live config hands out a new value on a change). */
  private parsed: { from: unknown; definitions: StreamDefinition[] } | null = null;
  private readonly changeListeners: Array<(definitions: StreamDefinition[]) => void> = [];

  constructor(
    private readonly ctx: PluginContext,
    private readonly scripts: ScriptsService,
    private readonly models: ModelsService,
    private readonly events: PipelineEvents,
  ) {
    // An edit of `streams:` (the file by hand, another process, define/remove) reaches the
    // scheduler at once; a section that does not validate never gets here (the one in force stays).
    ctx.config.subscribe(STREAMS_CONFIG, () => {
      const next = this.definitions;
      ctx.log.info(`streams changed in project.yml: ${next.map((d) => d.name).join(', ') || 'none'}`);
      for (const l of this.changeListeners) l(next);
    });
  }

  private get definitions(): StreamDefinition[] {
    const value = this.ctx.config(STREAMS_CONFIG);
    if (this.parsed?.from !== value) this.parsed = { from: value, definitions: streamDefinitions(value) };
    return this.parsed.definitions;
  }

  /** Called with the new definitions whenever `streams:` changed (the scheduler follows). */
  onChange(listener: (definitions: StreamDefinition[]) => void): void {
    this.changeListeners.push(listener);
  }

  define(name: string, stream: StreamInput): void {
    this.ctx.config.edit(STREAMS_CONFIG, (streams) => streams.set([name], writtenStream(stream)));
  }

  remove(name: string): boolean {
    if (!this.definitions.some((d) => d.name === name)) return false;
    this.ctx.config.edit(STREAMS_CONFIG, (streams) => streams.delete([name]));
    return true;
  }

  list(): StreamDefinition[] {
    return this.definitions;
  }

  validate(): Promise<ProjectProblem[]> {
    return streamProblems(this.ctx, this);
  }

  get(name: string): StreamDefinition {
    const def = this.definitions.find((d) => d.name === name);
    if (!def) {
      throw notFound('stream_not_found', `No stream '${name}' in project.yml${this.definitions.length ? ` (streams: ${this.definitions.map((d) => d.name).join(', ')})` : ''}`, { stream: name });
    }
    return def;
  }

  /**
   * The problems of a stream's targets: a script, seed or model a step names that does not
   * exist. Checked before a run starts (400 `invalid_stream_target`, nothing runs) and by `dp validate`.
   */
  async targetProblems(def: StreamDefinition): Promise<Array<{ step: number; message: string }>> {
    const problems: Array<{ step: number; message: string }> = [];
    let modelNames: Set<string> | null = null;
    let seedNames: Set<string> | null = null;
    for (const [i, step] of def.steps.entries()) {
      const where = `streams.${def.name}.steps[${i}] (${step.action})`;
      const problem = (message: string) => problems.push({ step: i, message });
      const all = step.targets.includes('all');
      if (all && step.targets.length > 1) problem(`${where}: 'all' stands alone, not beside other targets`);
      if (all) continue;
      if (step.action === 'ingest' || step.action === 'export') {
        for (const t of step.targets) {
          try {
            this.scriptFor(step.action, t);
          } catch (e) {
            problem(`${where}: ${errorMessage(e)}`);
          }
        }
      } else if (step.action === 'seed') {
        seedNames ??= new Set((await this.models.seeds()).flatMap((s) => [s.name, s.full_name]));
        for (const t of step.targets) if (!seedNames.has(t)) problem(`${where}: no seed '${t}' in seeds/`);
      } else {
        modelNames ??= new Set((await this.models.list()).flatMap((m) => [m.name, m.full_name]));
        for (const t of step.targets) if (!modelNames.has(selectorName(t))) problem(`${where}: no model '${selectorName(t)}'`);
      }
    }
    return problems;
  }

  private assertTargets(def: StreamDefinition, problems: Array<{ step: number; message: string }>): void {
    if (problems.length) throw badRequest('invalid_stream_target', problems.map((p) => p.message).join('; '), { stream: def.name, problems: problems.map((p) => p.message) });
  }

  /** The project-relative script a step target names: `events`, `events.ts` or `ingest/events.ts`. */
  scriptFor(folder: 'ingest' | 'export', target: string): string {
    const rel = target.startsWith(`${folder}/`) ? target : `${folder}/${target}`;
    const hasExt = SCRIPT_EXTENSIONS.some((ext) => rel.toLowerCase().endsWith(ext));
    const candidates = hasExt ? [rel] : SCRIPT_EXTENSIONS.map((ext) => `${rel}${ext}`);
    for (const c of candidates) {
      try {
        return this.scripts.locate(c).path;
      } catch (e) {
        if (isDpError(e) && e.code !== 'file_not_found') throw e;
      }
    }
    throw badRequest('invalid_stream_target', `no script '${target}' in ${folder}/ (looked for ${candidates.join(', ')})`, { target, folder });
  }

  private scriptsOf(step: StreamStep): string[] {
    const folder = step.action as 'ingest' | 'export';
    if (step.targets.includes('all')) return walkProjectFiles(this.ctx.project, folder, { extensions: [...SCRIPT_EXTENSIONS], recursive: false }).map((e) => e.path);
    return step.targets.map((t) => this.scriptFor(folder, t));
  }

  async start(name: string, options: { force?: boolean; trigger?: string } = {}): Promise<{ status: 'started' | 'already_running'; stream_name: string; run_id?: string }> {
    const def = this.get(name);
    this.clearStale();
    if (this.current && !options.force) return { status: 'already_running', stream_name: this.current.stream.name };
    // A bad target answers 400 before anything runs.
    this.assertTargets(def, await this.targetProblems(def));
    if (this.current) {
      if (!options.force) return { status: 'already_running', stream_name: this.current.stream.name };
      this.cancel('replaced by a forced start');
    }
    const run = this.begin(def, options.trigger ?? 'api', undefined, true);
    run.done.catch(() => undefined);
    return { status: 'started', stream_name: name, run_id: run.runId };
  }

  /**
   * A new run of a failed (cancelled, interrupted) stream run's stream from its first step that
   * did not succeed, and the steps after it; the steps that succeeded do not run again. The
   * trigger names the run it repeats (`rerun:<run_id>`).
   */
  async rerunFailed(runId: string): Promise<{ status: 'started' | 'already_running'; stream_name: string; run_id?: string; from_step?: number }> {
    const previous = await readRun(this.ctx, runId);
    if (!previous) throw notFound('run_not_found', `No run '${runId}' in the run history`, { run_id: runId });
    if (previous.kind !== 'stream' || previous.status === 'success' || previous.status === 'running') {
      throw badRequest('nothing_to_rerun', `Run '${runId}' is ${previous.kind === 'stream' ? `a stream run with status ${previous.status}` : 'a script run'}: only a stream run that did not succeed has failed steps`, { run_id: runId, kind: previous.kind, status: previous.status });
    }
    const def = this.get(previous.name);
    const steps = (Array.isArray(previous.steps) ? previous.steps : []) as StreamStepResult[];
    const failed = steps.find((s) => s.status !== 'success');
    // A run stopped between steps (cancelled) or killed before recording its steps goes on from the first step it did not finish.
    const from = failed ? failed.index : steps.length;
    if (from >= def.steps.length) throw badRequest('nothing_to_rerun', `Run '${runId}' has no step left to run`, { run_id: runId, status: previous.status });
    const now = def.steps[from];
    if (failed && (now.action !== failed.action || now.targets.join('\n') !== failed.targets.join('\n'))) {
      throw conflict('stream_changed_since_run', `Step ${from + 1} of stream '${def.name}' was edited since run '${runId}' (${failed.action} [${failed.targets.join(', ')}], now ${now.action} [${now.targets.join(', ')}]): start the stream instead`, { run_id: runId, step: from });
    }
    this.assertTargets(def, (await this.targetProblems(def)).filter((p) => p.step >= from));
    this.clearStale();
    if (this.current) return { status: 'already_running', stream_name: this.current.stream.name };
    const run = this.begin(def, `rerun:${runId}`, undefined, true, from);
    run.done.catch(() => undefined);
    return { status: 'started', stream_name: def.name, run_id: run.runId, from_step: from };
  }

  async run(name: string, options: { trigger?: string; onEvent?: StreamEventListener } = {}): Promise<StreamRunResult> {
    const def = this.get(name);
    this.assertTargets(def, await this.targetProblems(def));
    // One pipeline at a time: wait for the running one (another caller may take the turn first).
    while (this.current) await this.current.done.catch(() => undefined);
    return this.begin(def, options.trigger ?? 'manual', options.onEvent, true).done;
  }

  cancel(reason = 'cancelled by request'): boolean {
    if (!this.current) return false;
    this.current.controller.abort(new Error(reason));
    return true;
  }

  active(): ActivePipeline {
    this.clearStale();
    const r = this.current;
    if (!r) {
      return (
        this.last ?? {
          running: false,
          operation: null,
          operation_label: null,
          stream_name: null,
          started_at: null,
          total_events: 0,
          finished: false,
          status: 'idle',
          duration_seconds: null,
          run_id: null,
          step: null,
        }
      );
    }
    return {
      running: true,
      operation: r.step?.action ?? 'stream',
      operation_label: r.step ? `${r.stream.name}: step ${r.step.index + 1}/${r.stream.steps.length} ${r.step.action} [${r.step.targets.join(', ')}]` : `${r.stream.name}: starting`,
      stream_name: r.stream.name,
      started_at: r.startedAt.toISOString(),
      total_events: r.events,
      finished: false,
      status: 'running',
      duration_seconds: Math.round((Date.now() - r.startedAt.getTime()) / 100) / 10,
      run_id: r.runId,
      step: r.step,
    };
  }

  /** SPEC: a run older than 10 minutes is cleared on snapshot read (and told to stop). */
  private clearStale(): void {
    const r = this.current;
    if (!r || Date.now() - r.startedAt.getTime() < STALE_RUN_MS) return;
    r.controller.abort(new Error('stale: running for more than 10 minutes'));
    this.ctx.log.warn(`stream ${r.stream.name} cleared as stale after 10 minutes`, { run_id: r.runId });
    this.current = null;
    this.last = {
      running: false,
      operation: 'stream',
      operation_label: `${r.stream.name}: cleared as stale`,
      stream_name: r.stream.name,
      started_at: r.startedAt.toISOString(),
      total_events: r.events,
      finished: true,
      status: 'cancelled',
      duration_seconds: Math.round((Date.now() - r.startedAt.getTime()) / 100) / 10,
      run_id: r.runId,
      step: null,
    };
  }

  /** Registers the run as current synchronously (so `already_running` is exact) and runs it in the background. */
  private begin(def: StreamDefinition, trigger: string, listener?: StreamEventListener, targetsChecked = false, fromStep = 0): ActiveRun {
    const controller = new AbortController();
    const stop = this.ctx.signal;
    if (stop.aborted) controller.abort(stop.reason);
    else stop.addEventListener('abort', () => controller.abort(stop.reason), { once: true });
    const run: ActiveRun = { runId: newRunId('stream'), stream: def, trigger, startedAt: new Date(), controller, step: null, events: 0, listener, fromStep } as ActiveRun;
    this.current = run;
    run.done = this.execute(run, targetsChecked).finally(() => {
      if (this.current === run) this.current = null;
    });
    return run;
  }

  private emit<K extends PipelineEventKind>(run: ActiveRun, kind: K, payload: PipelineEventFields[K]): void {
    const data = { run_id: run.runId, stream: run.stream.name, ...payload, at: new Date().toISOString() };
    run.events++;
    this.events.push(kind, data);
    this.ctx.events.emit(STREAM_EVENTS[kind], data);
    run.listener?.(kind, data);
  }

  private async fire(point: typeof PIPELINE_START, p: PipelineContext): Promise<void> {
    try {
      await this.ctx.hook(point).promise(p);
    } catch (e) {
      this.ctx.log.warn(`${point.id} tap failed for stream ${p.streamName}`, { error: errorMessage(e) });
    }
  }

  private async execute(run: ActiveRun, targetsChecked: boolean): Promise<StreamRunResult> {
    const def = run.stream;
    const signal = run.controller.signal;
    const t0 = performance.now();
    const pipeline: PipelineContext = { runId: run.runId, streamName: def.name, trigger: run.trigger, status: 'running', startedAt: run.startedAt, signal };
    const steps: StreamStepResult[] = [];
    let status = 'success' as StreamRunResult['status'];
    let error: string | undefined;
    this.emit(run, 'start', { trigger: run.trigger, from_step: run.fromStep, steps: def.steps.map((s) => ({ action: s.action, targets: s.targets })) });
    try {
      await recordHistoryStart(this.ctx.db, { run_id: run.runId, kind: 'stream', name: def.name, trigger: run.trigger, started_at: run.startedAt.toISOString() });
    } catch (e) {
      this.ctx.log.warn('could not record the stream run as started', { stream: def.name, error: errorMessage(e) });
    }
    await this.fire(PIPELINE_START, pipeline);
    try {
      if (!targetsChecked) {
        this.assertTargets(def, await this.targetProblems(def));
      }
      await this.ctx.db.exclusive(async () => {
        for (const [index, step] of def.steps.entries()) {
          if (index < run.fromStep) continue;
          // The step boundary: a cancel takes effect here.
          if (signal.aborted) {
            status = 'cancelled';
            break;
          }
          const result = await this.runStep(run, pipeline, index, step);
          steps.push(result);
          if (result.status === 'cancelled' || signal.aborted) {
            status = 'cancelled';
            break;
          }
          if (result.status === 'error') {
            status = 'error';
            error = `step ${index + 1} (${step.action}) failed: ${result.error}`;
            break;
          }
        }
      });
    } catch (e) {
      status = 'error';
      error = isDpError(e) ? e.message : errorMessage(e);
    }
    if (status === 'cancelled') error = `cancelled: ${errorMessage(signal.reason)}`;
    const durationMs = Math.round(performance.now() - t0);
    const finishedAt = new Date();
    const result: StreamRunResult = {
      run_id: run.runId,
      stream_name: def.name,
      trigger: run.trigger,
      status,
      started_at: run.startedAt.toISOString(),
      finished_at: finishedAt.toISOString(),
      duration_ms: durationMs,
      steps,
      ...(error ? { error } : {}),
    };
    try {
      await recordHistory(this.ctx.db, {
        run_id: run.runId,
        kind: 'stream',
        name: def.name,
        trigger: run.trigger,
        status,
        started_at: result.started_at,
        finished_at: result.finished_at,
        duration_ms: durationMs,
        error: error ?? null,
        steps,
      });
    } catch (e) {
      this.ctx.log.warn('could not record the stream run', { stream: def.name, error: errorMessage(e) });
    }
    pipeline.status = status;
    pipeline.error = error;
    pipeline.durationMs = durationMs;
    pipeline.step = undefined;
    await this.fire(PIPELINE_END, pipeline);
    this.last = {
      running: false,
      operation: 'stream',
      operation_label: `${def.name}: ${status}`,
      stream_name: def.name,
      started_at: result.started_at,
      total_events: run.events + 1,
      finished: true,
      status,
      duration_seconds: Math.round(durationMs / 100) / 10,
      run_id: run.runId,
      step: null,
    };
    this.emit(run, status === 'success' ? 'complete' : 'error', {
      status,
      duration_ms: durationMs,
      ...(error ? { error } : {}),
      steps: steps.map((s) => ({ index: s.index, action: s.action, status: s.status, duration_ms: s.duration_ms, attempts: s.attempts })),
    });
    this.ctx.log.info(`stream ${def.name} ${status}`, { run_id: run.runId, trigger: run.trigger, duration_ms: durationMs });
    if (def.webhook_url) await this.notify(def.webhook_url, result);
    return result;
  }

  private async runStep(run: ActiveRun, pipeline: PipelineContext, index: number, step: StreamStep): Promise<StreamStepResult> {
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
      for (const script of this.scriptsOf(step)) {
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

  /** The completion webhook: POST {stream, run_id, status, duration_ms, steps...}; a failure is logged, never fails the run. */
  private async notify(url: string, result: StreamRunResult): Promise<void> {
    const body = {
      event: 'stream_complete',
      stream: result.stream_name,
      run_id: result.run_id,
      status: result.status,
      trigger: result.trigger,
      started_at: result.started_at,
      finished_at: result.finished_at,
      duration_ms: result.duration_ms,
      ...(result.error ? { error: result.error } : {}),
      steps: result.steps.map((s) => ({ index: s.index, action: s.action, targets: s.targets, status: s.status, duration_ms: s.duration_ms, attempts: s.attempts, ...(s.error ? { error: s.error } : {}) })),
    };
    const delivery = await this.ctx.notifier.send({ url, payload: body, userAgent: 'dp-streams' });
    if (delivery.status === 'failed') this.ctx.log.warn(`completion webhook of stream ${result.stream_name} to ${delivery.target ?? 'an invalid URL'} failed: ${delivery.error}`);
  }
}
