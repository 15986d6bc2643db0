/**
 * `GET /api/transform/events`: the transform engine's progress as server-sent events
 * (transform_start, model_start, model_end, transform_end), so the web UI shows each model's
 * status live while a run started anywhere (API, CLI through the server, a schedule) goes on.
 * The last 500 events replay after a reconnect (Last-Event-ID).
 */
import { errorTextsFor, MODEL_END, MODEL_START, SseBuffer, TRANSFORM_END, TRANSFORM_START, VALUES_HIDDEN_FROM, type EventRef, type PluginContext } from '../../sdk/index.js';

/** Relayed under their bus names, which the SSE clients (the models page) listen to. */
const TRANSFORM_EVENTS: Array<EventRef<object>> = [TRANSFORM_START, MODEL_START, MODEL_END, TRANSFORM_END];

export function registerTransformEvents(ctx: PluginContext): void {
  const buffer = new SseBuffer(500);
  const valuesHidden = ctx.hook(VALUES_HIDDEN_FROM);
  for (const event of TRANSFORM_EVENTS) ctx.events.on(event, (e) => buffer.push({ ...e.payload, at: e.at }, e.type));
  ctx.route({
    kind: 'sse',
    method: 'GET',
    url: '/api/transform/events',
    permission: 'read',
    summary: 'Transform progress as server-sent events: transform_start, model_start, model_end, transform_end',
    // model_end carries the build error: redacted for a caller masking binds (docs/security.md "Error texts").
    source: async (req) => (await errorTextsFor(valuesHidden, req.caller)).events(buffer),
  });
}
