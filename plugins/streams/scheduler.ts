/**
 * Streams on the kernel's scheduler (`ctx.scheduler`): each stream with a `schedule` is one task
 * `stream:<name>`, and the tasks follow the definitions as they change (added, re-timed,
 * dropped). The kernel decides when they run (after start-up, only with `ctx.scheduling`) and
 * stops them before shutdown.
 */
import type { ScheduledTask, SchedulerService, StreamDefinition, StreamsService } from '../../sdk/index.js';

/** A stream's schedule as a task: it runs the stream (waiting for another stream to finish first). */
export function streamJob(streams: StreamsService, def: Pick<StreamDefinition, 'name' | 'schedule'>): ScheduledTask {
  return {
    id: `stream:${def.name}`,
    kind: 'stream',
    cron: def.schedule ?? '',
    run: (signal) => {
      // The scheduler stopping (shutdown) or the task's timeout cancels the stream it started.
      const onStop = () => streams.cancel();
      signal.addEventListener('abort', onStop, { once: true });
      return streams.run(def.name, { trigger: 'schedule' }).finally(() => signal.removeEventListener('abort', onStop));
    },
  };
}

/** Makes the scheduler's `stream:` tasks match the definitions. */
export function followStreams(scheduler: SchedulerService, streams: StreamsService, defs: StreamDefinition[]): void {
  const wanted = new Map(defs.filter((d) => d.schedule !== null).map((d) => [`stream:${d.name}`, d]));
  for (const s of scheduler.list()) {
    if (s.kind === 'stream' && (!wanted.has(s.name) || wanted.get(s.name)!.schedule !== s.cron)) scheduler.unschedule(s.name);
  }
  const present = new Set(scheduler.list().map((s) => s.name));
  for (const [name, def] of wanted) if (!present.has(name)) scheduler.schedule(streamJob(streams, def));
}
