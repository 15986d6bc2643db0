/**
 * The completion webhook of a stream run, sent through the kernel's notifier (`ctx.notifier`:
 * timeout, one retry, a throttle per receiver).
 */
import type { PluginContext, StreamRunResult } from '../../sdk/index.js';

/** The completion webhook: POST {stream, run_id, status, duration_ms, steps...}; a failure is logged, never fails the run. */
export async function notifyCompletion(ctx: Pick<PluginContext, 'notifier' | 'log'>, url: string, result: StreamRunResult): Promise<void> {
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
  const delivery = await ctx.notifier.send({ url, payload: body, userAgent: 'dp-streams' });
  if (delivery.status === 'failed') ctx.log.warn(`completion webhook of stream ${result.stream_name} to ${delivery.target ?? 'an invalid URL'} failed: ${delivery.error}`);
}
