/**
 * The scheduler `dp serve` starts: 5-field cron schedules (parsed by cron-parser, in the
 * server's local time) of streams and of the jobs other plugins register (SCHEDULER_JOBS, e.g. a
 * connector's sync). One timer per schedule, armed for its next run; a job still running when
 * its next tick comes is skipped (never two at once); a bad expression is logged naming its
 * schedule and listed with its error, and the other schedules still run. Stopped first on
 * shutdown (onBeforeStop): timers cleared, running jobs told to stop through their signal.
 *
 * Time comes from a `Clock`, so tests fire a schedule by moving a fake clock instead of waiting
 * for a real minute.
 */
import { CronExpressionParser } from 'cron-parser';
import { errorMessage, type Logger, type ScheduledJob, type StreamDefinition, type StreamsService } from '../../sdk/index.js';
import type { ScheduleStatus } from './api-types.js';

export interface Clock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => {
    const t = setTimeout(fn, ms);
    t.unref();
    return t;
  },
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

/** Node's longest timer; a later run is reached by re-arming. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Why `expr` is not a 5-field cron expression, or null when it is one. */
export function cronProblem(expr: string): string | null {
  const fields = String(expr).trim().split(/\s+/).filter(Boolean);
  if (fields.length !== 5) return `'${expr}' is not a 5-field cron expression (minute hour day-of-month month day-of-week), it has ${fields.length} field${fields.length === 1 ? '' : 's'}`;
  try {
    CronExpressionParser.parse(fields.join(' '));
    return null;
  } catch (e) {
    return `'${expr}' is not a valid cron expression: ${errorMessage(e)}`;
  }
}

/** The next run of `expr` strictly after `after` (ms), in the server's local time. */
export function nextRun(expr: string, after: number): number {
  return CronExpressionParser.parse(expr.trim(), { currentDate: new Date(after) }).next().getTime();
}

interface Entry {
  job: ScheduledJob;
  status: ScheduleStatus;
  timer?: unknown;
  next?: number;
  controller?: AbortController;
}

export class Scheduler {
  private readonly entries = new Map<string, Entry>();
  private started = false;

  constructor(
    private readonly log: Logger,
    private readonly clock: Clock = systemClock,
  ) {}

  /** Adds a schedule; a bad cron expression is logged naming it and kept with its error (the others still run). */
  add(job: ScheduledJob, kind: ScheduleStatus['kind'] = 'job'): void {
    if (this.entries.has(job.name)) {
      this.log.error(`schedule '${job.name}' is registered twice; the second is ignored`);
      return;
    }
    const problem = cronProblem(job.cron);
    const status: ScheduleStatus = { name: job.name, kind, cron: job.cron, next_run: null, running: false, last_run: null, last_status: null, skipped: 0, ...(problem ? { error: problem } : {}) };
    if (problem) this.log.error(`schedule '${job.name}' will not run: ${problem}`);
    const entry: Entry = { job, status };
    this.entries.set(job.name, entry);
    if (this.started && !problem) this.arm(entry, this.clock.now());
  }

  /** Drops a schedule (a run it started finishes on its own); false when there is none by that name. */
  remove(name: string): boolean {
    const entry = this.entries.get(name);
    if (!entry) return false;
    if (entry.timer !== undefined) this.clock.clearTimeout(entry.timer);
    entry.timer = undefined;
    entry.next = undefined;
    this.entries.delete(name);
    return true;
  }

  get running(): boolean {
    return this.started;
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    const now = this.clock.now();
    for (const entry of this.entries.values()) if (!entry.status.error) this.arm(entry, now);
  }

  /** Clears every timer and tells running jobs to stop; they finish on their own. */
  stop(): void {
    this.started = false;
    for (const entry of this.entries.values()) {
      if (entry.timer !== undefined) this.clock.clearTimeout(entry.timer);
      entry.timer = undefined;
      entry.next = undefined;
      entry.status.next_run = null;
      entry.controller?.abort(new Error('scheduler stopped'));
    }
  }

  list(): ScheduleStatus[] {
    return [...this.entries.values()].map((e) => ({ ...e.status }));
  }

  private arm(entry: Entry, after: number): void {
    const next = nextRun(entry.job.cron, after);
    entry.next = next;
    entry.status.next_run = new Date(next).toISOString();
    this.wait(entry);
  }

  private wait(entry: Entry): void {
    const delay = Math.max(0, Math.min(MAX_TIMER_MS, entry.next! - this.clock.now()));
    entry.timer = this.clock.setTimeout(() => this.tick(entry), delay);
  }

  private tick(entry: Entry): void {
    entry.timer = undefined;
    if (!this.started || entry.next === undefined) return;
    // Woken before the run time (a long wait is cut into timer-sized pieces): wait on.
    if (this.clock.now() < entry.next) return this.wait(entry);
    const due = entry.next;
    if (entry.status.running) {
      entry.status.skipped++;
      entry.status.last_status = 'skipped';
      this.log.warn(`schedule '${entry.job.name}' skipped at ${new Date(due).toISOString()}: its previous run is still going`);
    } else this.fire(entry, due);
    this.arm(entry, Math.max(due, this.clock.now()));
  }

  private fire(entry: Entry, due: number): void {
    const controller = new AbortController();
    entry.controller = controller;
    entry.status.running = true;
    entry.status.last_run = new Date(due).toISOString();
    this.log.info(`schedule '${entry.job.name}' fired`);
    Promise.resolve()
      .then(() => entry.job.run(controller.signal))
      .then(
        (result) => {
          const failed = result && typeof result === 'object' && (result as { status?: string }).status === 'error';
          entry.status.last_status = failed ? 'error' : 'success';
          if (failed) entry.status.last_error = String((result as { error?: unknown }).error ?? 'failed');
          else delete entry.status.last_error;
        },
        (e) => {
          entry.status.last_status = 'error';
          entry.status.last_error = errorMessage(e);
          this.log.error(`schedule '${entry.job.name}' failed`, { error: errorMessage(e) });
        },
      )
      .finally(() => {
        entry.status.running = false;
        if (entry.controller === controller) entry.controller = undefined;
      });
  }
}

/** A stream's schedule as a job: it runs the stream (waiting for another stream to finish first). */
export function streamJob(streams: StreamsService, def: Pick<StreamDefinition, 'name' | 'schedule'>): ScheduledJob {
  return {
    name: `stream:${def.name}`,
    cron: def.schedule ?? '',
    run: (signal) => {
      // The scheduler stopping (shutdown) cancels the stream it started.
      const onStop = () => streams.cancel();
      signal.addEventListener('abort', onStop, { once: true });
      return streams.run(def.name, { trigger: 'schedule' }).finally(() => signal.removeEventListener('abort', onStop));
    },
  };
}
