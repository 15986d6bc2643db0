/**
 * The kernel's scheduler (`ctx.scheduler`), like Backstage's `SchedulerService`: a plugin
 * schedules a task on a 5-field cron expression; the kernel runs it on its clock once every
 * plugin has started and only in a process that may work on the wall clock (`dp serve` without
 * `--no-scheduler`: `ctx.scheduling`), never two runs of one task at once, aborted at its
 * `timeoutMs` and when the scheduler stops (before the plugins' beforeStop phase).
 */
import { errorMessage } from './errors.js';
import { requireOnFirstUse } from './require-on-first-use.js';

/** cron-parser and its date library, required on the first schedule read: most CLI commands read none. */
const cronParser = requireOnFirstUse<typeof import('cron-parser')>(import.meta.url, 'cron-parser');
const parseCron = (expr: string, options?: { currentDate: Date }) => cronParser().CronExpressionParser.parse(expr, options);

/** Where the scheduler reads the time and sets its timers; tests pass a clock they move by hand. */
export interface Clock {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/**
 * A timeout on `clock` that keeps the process alive until it fires or is cleared (the system
 * clock's timers do not): for a deadline whose answer is still due when nothing else is pending.
 */
export function deadlineTimeout(clock: Clock, fn: () => void, ms: number): unknown {
  const handle = clock.setTimeout(fn, ms);
  (handle as { ref?: () => void } | undefined)?.ref?.();
  return handle;
}

export interface ScheduledTask {
  /** Unique in the process, e.g. `stream:nightly`, `connectors:schedules`. */
  id: string;
  /** 5-field cron expression, in the server's local time. */
  cron: string;
  /** A label the status carries (`stream` for a stream's schedule); `job` when absent. */
  kind?: string;
  /** The run's signal aborts after this long (the run still counts as running until it settles). */
  timeoutMs?: number;
  /** `signal` aborts at the timeout and when the scheduler stops (shutdown, maintenance). */
  run(signal: AbortSignal): Promise<unknown>;
}

/** One task as the scheduler keeps it (GET /api/scheduler). */
export interface ScheduleStatus {
  name: string;
  /** The task's `kind`: `stream` for a stream's schedule, `job` for any other. */
  kind: string;
  cron: string;
  /** ISO time of the next run; null when the expression is invalid or the scheduler is stopped. */
  next_run: string | null;
  running: boolean;
  last_run: string | null;
  last_status: 'success' | 'error' | 'skipped' | null;
  last_error?: string;
  /** Ticks skipped because the previous run was still going. */
  skipped: number;
  /** Why the schedule never runs (a bad cron expression). */
  error?: string;
}

export interface SchedulerService {
  /** Adds a task (a bad expression is logged and listed with its error; a second task with one id is refused in the log). */
  schedule(task: ScheduledTask): void;
  /** Drops this plugin's task `id` (a run it started finishes on its own); false when there is none. */
  unschedule(id: string): boolean;
  /** Every task of every plugin, with its next run. */
  list(): ScheduleStatus[];
  /** True while the scheduler runs tasks (false in a CLI command, a test server, `--no-scheduler`, during shutdown). */
  readonly running: boolean;
}

/** Why `expr` is not a 5-field cron expression, or null when it is one. */
export function cronProblem(expr: string): string | null {
  const fields = String(expr).trim().split(/\s+/).filter(Boolean);
  if (fields.length !== 5) return `'${expr}' is not a 5-field cron expression (minute hour day-of-month month day-of-week), it has ${fields.length} field${fields.length === 1 ? '' : 's'}`;
  try {
    parseCron(fields.join(' '));
    return null;
  } catch (e) {
    return `'${expr}' is not a valid cron expression: ${errorMessage(e)}`;
  }
}

/** The next run of `expr` strictly after `after` (ms), in the server's local time. */
export function nextCronRun(expr: string, after: number): number {
  return parseCron(expr.trim(), { currentDate: new Date(after) }).next().getTime();
}

/** True when `cron` fires at `minute` (a time on a whole minute); false for a bad expression. */
export function cronDueAt(cron: string, minute: number): boolean {
  try {
    return nextCronRun(cron, minute - 1000) === minute;
  } catch {
    return false;
  }
}
