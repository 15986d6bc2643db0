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
 *
 * Beside it: what each step names (targets.ts), each step's attempts and events (steps.ts), the
 * completion webhook (webhook.ts), the run history (history.ts), the schedules (scheduler.ts).
 */
import {
  badRequest,
  conflict,
  errorMessage,
  isDpError,
  notFound,
  PIPELINE_END,
  PIPELINE_START,
  type ActivePipeline,
  type ModelsService,
  type PipelineContext,
  type PluginContext,
  type ProjectProblem,
  type ScriptsService,
  type StreamDefinition,
  type StreamInput,
  type StreamRunResult,
  type StreamsService,
  type StreamStepResult,
} from '../../sdk/index.js';
import type { PipelineEvents } from './events.js';
import { STREAMS_CONFIG, streamDefinitions, writtenStream } from './config.js';
import { newRunId, readRun, recordHistory, recordHistoryStart } from './history.js';
import { streamProblems } from './validate.js';
import { StreamTargets } from './targets.js';
import { type ActiveRun, StepRunner, type StreamEventListener } from './steps.js';
import { notifyCompletion } from './webhook.js';

/** SPEC "Limits": a run older than this is cleared when the snapshot is read. */
export const STALE_RUN_MS = 10 * 60_000;

export class StreamRunner implements StreamsService {
  private current: ActiveRun | null = null;
  /** The snapshot of the last finished run (SPEC's `finished`, `status`, `duration_seconds`). */
  private last: ActivePipeline | null = null;

  /** The definitions made from the `streams:` value they were read from (the live config hands out a new value on a change). */
  private parsed: { from: unknown; definitions: StreamDefinition[] } | null = null;
  private readonly changeListeners: Array<(definitions: StreamDefinition[]) => void> = [];
  /** What each step names (targets.ts). */
  private readonly targets: StreamTargets;
  /** Each step's attempts, retries, events and hooks (steps.ts). */
  private readonly steps: StepRunner;

  constructor(
    private readonly ctx: PluginContext,
    private readonly scripts: ScriptsService,
    private readonly models: ModelsService,
    private readonly events: PipelineEvents,
  ) {
    this.targets = new StreamTargets(ctx, scripts, models);
    this.steps = new StepRunner(ctx, scripts, models, events, this.targets);
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

  /** The problems of a stream's targets (targets.ts), for `dp validate`. */
  targetProblems(def: StreamDefinition): Promise<Array<{ step: number; message: string }>> {
    return this.targets.targetProblems(def);
  }

  get(name: string): StreamDefinition {
    const def = this.definitions.find((d) => d.name === name);
    if (!def) {
      throw notFound('stream_not_found', `No stream '${name}' in project.yml${this.definitions.length ? ` (streams: ${this.definitions.map((d) => d.name).join(', ')})` : ''}`, { stream: name });
    }
    return def;
  }


  async start(name: string, options: { force?: boolean; trigger?: string } = {}): Promise<{ status: 'started' | 'already_running'; stream_name: string; run_id?: string }> {
    const def = this.get(name);
    this.clearStale();
    if (this.current && !options.force) return { status: 'already_running', stream_name: this.current.stream.name };
    // A bad target answers 400 before anything runs.
    this.targets.assertTargets(def, await this.targets.targetProblems(def));
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
    this.targets.assertTargets(def, (await this.targets.targetProblems(def)).filter((p) => p.step >= from));
    this.clearStale();
    if (this.current) return { status: 'already_running', stream_name: this.current.stream.name };
    const run = this.begin(def, `rerun:${runId}`, undefined, true, from);
    run.done.catch(() => undefined);
    return { status: 'started', stream_name: def.name, run_id: run.runId, from_step: from };
  }

  async run(name: string, options: { trigger?: string; onEvent?: StreamEventListener } = {}): Promise<StreamRunResult> {
    const def = this.get(name);
    this.targets.assertTargets(def, await this.targets.targetProblems(def));
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

  private async execute(run: ActiveRun, targetsChecked: boolean): Promise<StreamRunResult> {
    const def = run.stream;
    const signal = run.controller.signal;
    const t0 = performance.now();
    const pipeline: PipelineContext = { runId: run.runId, streamName: def.name, trigger: run.trigger, status: 'running', startedAt: run.startedAt, signal };
    const steps: StreamStepResult[] = [];
    let status = 'success' as StreamRunResult['status'];
    let error: string | undefined;
    this.steps.emit(run, 'start', { trigger: run.trigger, from_step: run.fromStep, steps: def.steps.map((s) => ({ action: s.action, targets: s.targets })) });
    try {
      await recordHistoryStart(this.ctx.db, { run_id: run.runId, kind: 'stream', name: def.name, trigger: run.trigger, started_at: run.startedAt.toISOString() });
    } catch (e) {
      this.ctx.log.warn('could not record the stream run as started', { stream: def.name, error: errorMessage(e) });
    }
    await this.steps.fire(PIPELINE_START, pipeline);
    try {
      if (!targetsChecked) {
        this.targets.assertTargets(def, await this.targets.targetProblems(def));
      }
      await this.ctx.db.exclusive(async () => {
        for (const [index, step] of def.steps.entries()) {
          if (index < run.fromStep) continue;
          // The step boundary: a cancel takes effect here.
          if (signal.aborted) {
            status = 'cancelled';
            break;
          }
          const result = await this.steps.runStep(run, pipeline, index, step);
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
    await this.steps.fire(PIPELINE_END, pipeline);
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
    this.steps.emit(run, status === 'success' ? 'complete' : 'error', {
      status,
      duration_ms: durationMs,
      ...(error ? { error } : {}),
      steps: steps.map((s) => ({ index: s.index, action: s.action, status: s.status, duration_ms: s.duration_ms, attempts: s.attempts })),
    });
    this.ctx.log.info(`stream ${def.name} ${status}`, { run_id: run.runId, trigger: run.trigger, duration_ms: durationMs });
    if (def.webhook_url) await notifyCompletion(this.ctx, def.webhook_url, result);
    return result;
  }
}
