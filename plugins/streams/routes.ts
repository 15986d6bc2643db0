/** HTTP routes of the streams plugin (declared in plugin.json with the same permissions). */
import { badRequest, errorTextsFor, hasPermission, notFound, VALUES_HIDDEN_FROM, withEnvReferences, type Caller, type PluginContext, type StreamDefinition } from '../../sdk/index.js';
import type { SchedulerState } from './api-types.js';
import type { PipelineEvents } from './events.js';
import { readHistory, readRun } from './history.js';
import type { StreamRunner } from './streams.js';

const nameParams = { type: 'object', properties: { name: { type: 'string', minLength: 1 } }, required: ['name'] };

export function registerRoutes(ctx: PluginContext, parts: { streams: StreamRunner; events: PipelineEvents }): void {
  const { streams, events } = parts;
  const scheduler = ctx.scheduler;
  // Every answer that can hold an error text (run results, history, events) passes through the
  // sdk's one redaction for the caller (docs/security.md "Error texts").
  const valuesHidden = ctx.hook(VALUES_HIDDEN_FROM);
  const errorTexts = (req: { caller: Caller }) => errorTextsFor(valuesHidden, req.caller);

  /** A stream as the API shows it: a webhook URL holding a .env value shows the ${VAR} reference instead. */
  const shown = (d: StreamDefinition) => ({
    ...d,
    webhook_url: d.webhook_url === null ? null : withEnvReferences(d.webhook_url, ctx.env),
    steps: d.steps.map((s) => ({ [s.action]: s.targets })),
    next_run: scheduler.list().find((s) => s.name === `stream:${d.name}`)?.next_run ?? null,
  });

  ctx.route({
    method: 'POST',
    url: '/api/stream/:name/start',
    permission: 'execute',
    summary: 'Start a stream in the background: {status: started, stream_name} or {status: already_running}',
    schema: {
      params: nameParams,
      querystring: { type: 'object', additionalProperties: false, properties: { force: { type: 'boolean', default: false } } },
    },
    handler: async (req) => {
      const r = await streams.start((req.params as { name: string }).name, { force: (req.query as { force?: boolean }).force === true, trigger: 'api' });
      return r.status === 'started' ? r : { status: r.status, stream_name: r.stream_name };
    },
  });

  ctx.route({
    method: 'POST',
    url: '/api/stream/cancel',
    permission: 'execute',
    summary: 'Stop the running stream at its next step boundary (its running script is aborted through its signal)',
    handler: async () => {
      const active = streams.active();
      const cancelled = streams.cancel();
      return { cancelled, stream_name: cancelled ? active.stream_name : null };
    },
  });

  ctx.route({
    method: 'POST',
    url: '/api/stream/:name',
    permission: 'execute',
    summary: 'Legacy single-shot run: runs the stream to the end and answers its result ({status: already_running} while one runs)',
    schema: { params: nameParams },
    handler: async (req) => {
      const name = (req.params as { name: string }).name;
      streams.get(name);
      const active = streams.active();
      if (active.running) return { status: 'already_running', stream_name: active.stream_name };
      return (await errorTexts(req)).fields(await streams.run(name, { trigger: 'api' }));
    },
  });

  ctx.route({
    method: 'GET',
    url: '/api/stream/active',
    permission: 'read',
    summary: 'The active pipeline snapshot: running, operation, operation_label, stream_name, started_at, total_events, finished, status, duration_seconds',
    handler: async (req) => (await errorTexts(req)).fields({ ...streams.active(), listeners: events.listeners }),
  });

  ctx.route({
    kind: 'sse',
    method: 'GET',
    url: '/api/stream/events',
    permission: 'read',
    summary: 'Server-sent pipeline events: start, step_start, step_end, model_start, model_end, complete, error',
    source: async (req) => (await errorTexts(req)).events(events),
  });

  ctx.route({
    method: 'GET',
    url: '/api/streams',
    permission: 'read',
    summary: 'Configured streams with their steps, schedules and next runs',
    handler: async () => ({ streams: streams.list().map(shown) }),
  });

  ctx.route({
    method: 'GET',
    url: '/api/history',
    permission: 'read',
    summary: 'Run history of streams and scripts, newest first (filter by name or kind)',
    schema: {
      querystring: {
        type: 'object',
        additionalProperties: false,
        properties: { limit: { type: 'integer', default: 50 }, name: { type: 'string', minLength: 1 }, kind: { type: 'string', enum: ['stream', 'script'] } },
      },
    },
    handler: async (req) => {
      const q = req.query as { limit: number; name?: string; kind?: 'stream' | 'script' };
      if (!(q.limit >= 1 && q.limit <= 1000)) throw badRequest('invalid_history_limit', 'limit must be an integer from 1 to 1000', { limit: q.limit });
      return (await errorTexts(req)).fields({ runs: await readHistory(ctx, { limit: q.limit, name: q.name, kind: q.kind }) });
    },
  });

  const runParams = { type: 'object', required: ['run_id'], properties: { run_id: { type: 'string', minLength: 1, maxLength: 200 } } };

  ctx.route({
    method: 'GET',
    url: '/api/history/:run_id',
    permission: 'read',
    summary: "One stream or script run: status, timing, error, a stream run's steps, a script run's last 1,000 output lines",
    schema: { params: runParams },
    handler: async (req) => {
      const runId = (req.params as { run_id: string }).run_id;
      const run = await readRun(ctx, runId);
      if (!run) throw notFound('run_not_found', `No run '${runId}' in the run history`, { run_id: runId });
      const texts = await errorTexts(req);
      // A script's output can print any value it read: only a caller who may run scripts (and so
      // sees their output from POST /api/run) reads it, redacted like error texts when masking binds them.
      if (run.output && !hasPermission(req.caller, 'execute')) return texts.fields({ ...run, output: null, output_hidden: true });
      return texts.fields({ ...run, ...(run.output ? { output: run.output.map((line) => texts.text(line)) } : {}) });
    },
  });

  ctx.route({
    method: 'POST',
    url: '/api/history/:run_id/rerun-failed',
    permission: 'execute',
    summary: "Start a new run of a failed stream run's stream from its first failed step (the steps that succeeded do not run again)",
    schema: { params: runParams },
    handler: async (req) => streams.rerunFailed((req.params as { run_id: string }).run_id),
  });

  ctx.route({
    method: 'GET',
    url: '/api/scheduler',
    permission: 'read',
    summary: 'Scheduler status and every schedule with its next run',
    handler: async (): Promise<SchedulerState> => ({ running: scheduler.running, schedules: scheduler.list() }),
  });
}
