/**
 * The streams plugin's public contract: its service (what the UI, notebooks and connectors reach
 * streams through), the hook points a stream run fires and the pipeline events it emits.
 */
import type { Materialization, ModelBuildStatus, ProjectProblem } from './models.js';
import { createEventRef, createHookRef, createServiceRef, type EventRef } from './refs.js';

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

export interface PipelineContext {
  readonly runId: string;
  readonly streamName: string;
  readonly trigger: string;
  status: 'running' | 'success' | 'error' | 'cancelled';
  readonly startedAt: Date;
  /** Aborted on shutdown, maintenance or an environment switch (the stream's `ctx.signal`). */
  readonly signal?: AbortSignal;
  step?: { index: number; action: string; targets: string[] };
  error?: string;
  durationMs?: number;
}

/** Fired by the streams plugin when a stream run starts. */
export const PIPELINE_START = createHookRef<[PipelineContext]>('streams.pipelineStart');
/** Fired by the streams plugin when a stream run starts one step. */
export const PIPELINE_STEP = createHookRef<[PipelineContext]>('streams.pipelineStep');
/** Fired by the streams plugin when a stream run ended: alerts, completion webhooks, versions. */
export const PIPELINE_END = createHookRef<[PipelineContext]>('streams.pipelineEnd');

/**
 * The fields of each pipeline event (SPEC "Events"), by kind. Every event also carries the run,
 * the stream and when (PipelineEvent). `GET /api/stream/events` sends them under the kind's name.
 */
export interface PipelineEventFields {
  start: { trigger: string; from_step: number; steps: Array<{ action: StreamStep['action']; targets: string[] }> };
  step_start: { step: number; action: StreamStep['action']; targets: string[]; attempt: number };
  step_end: { step: number; action: StreamStep['action']; status: StreamStepResult['status']; attempt: number; duration_ms: number; error?: string };
  /** A model of a transform step started (the models plugin's MODEL_START, within the run). */
  model_start: { step?: number; model: string; materialized: Materialization };
  /** A model of a transform step ended (the models plugin's MODEL_END, within the run). */
  model_end: { step?: number; model: string; status: ModelBuildStatus; duration_ms: number; error?: string };
  complete: PipelineEndFields;
  error: PipelineEndFields;
}

/** The fields of `complete` (the run succeeded) and `error` (it failed or was cancelled). */
export type PipelineEndFields = {
  status: StreamRunResult['status'];
  duration_ms: number;
  error?: string;
  steps: Array<{ index: number; action: StreamStep['action']; status: StreamStepResult['status']; duration_ms: number; attempts: number }>;
};

export type PipelineEventKind = keyof PipelineEventFields;
export type PipelineEvent<K extends PipelineEventKind> = { run_id: string; stream: string; at: string } & PipelineEventFields[K];

/** The streams plugin's events on the bus, one per pipeline event kind, named `stream.<kind>`. */
export const STREAM_EVENTS: { readonly [K in PipelineEventKind]: EventRef<PipelineEvent<K>> } = Object.freeze({
  start: createEventRef<PipelineEvent<'start'>>('stream.start'),
  step_start: createEventRef<PipelineEvent<'step_start'>>('stream.step_start'),
  step_end: createEventRef<PipelineEvent<'step_end'>>('stream.step_end'),
  model_start: createEventRef<PipelineEvent<'model_start'>>('stream.model_start'),
  model_end: createEventRef<PipelineEvent<'model_end'>>('stream.model_end'),
  complete: createEventRef<PipelineEvent<'complete'>>('stream.complete'),
  error: createEventRef<PipelineEvent<'error'>>('stream.error'),
});
