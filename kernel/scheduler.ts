/**
 * The kernel's scheduler behind `ctx.scheduler` (sdk/scheduler.ts): one timer per task, armed
 * for its next cron run; a task still running when its next tick comes is skipped (never two at
 * once); a run past its `timeoutMs` is aborted; a bad expression is logged naming its task and
 * listed with its error while the others run (read when the scheduler starts or lists, not when
 * a task is added: see `check`). The app starts it after every plugin's onStart
 * (when the process may work on the wall clock) and stops it before the first onBeforeStop:
 * timers cleared, running tasks aborted through their signal.
 *
 * Time comes from a `Clock`, so tests fire a schedule by moving a clock they own instead of
 * waiting for a real minute.
 */
import { errorMessage } from '../sdk/errors.js';
import type { Logger } from '../sdk/plugin.js';
import { cronProblem, nextCronRun, type Clock, type ScheduledTask, type ScheduleStatus, type SchedulerService } from '../sdk/scheduler.js';

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

interface Entry {
  task: ScheduledTask;
  owner: string;
  status: ScheduleStatus;
  timer?: unknown;
  next?: number;
  controller?: AbortController;
  /** Settles when the running run does. */
  run?: Promise<void>;
  /** Its expression was read (see `check`). */
  checked: boolean;
}

export class Scheduler {
  private readonly entries = new Map<string, Entry>();
  private started = false;

  constructor(
    private readonly log: Logger,
    private readonly clock: Clock = systemClock,
  ) {}

  /** The view one plugin gets (`ctx.scheduler`): it may drop only its own tasks. */
  forPlugin(owner: string): SchedulerService {
    const scheduler = this;
    return {
      schedule: (task) => this.add(task, owner),
      unschedule: (id) => this.entries.get(id)?.owner === owner && this.remove(id),
      list: () => this.list(),
      get running() {
        return scheduler.running;
      },
    };
  }

  /** Adds a task; a bad cron expression is logged naming it and kept with its error (the others still run). */
  add(task: ScheduledTask, owner = 'kernel'): void {
    if (this.entries.has(task.id)) {
      this.log.error(`schedule '${task.id}' is registered twice; the second is ignored`, { plugin: owner });
      return;
    }
    const status: ScheduleStatus = { name: task.id, kind: task.kind ?? 'job', cron: task.cron, next_run: null, running: false, last_run: null, last_status: null, skipped: 0 };
    const entry: Entry = { task, owner, status, checked: false };
    this.entries.set(task.id, entry);
    if (this.started && this.check(entry)) this.arm(entry, this.clock.now());
  }

  /**
   * Whether a task's expression is valid, read once: when the scheduler starts (or the task comes
   * after that) or its status is listed, not when the task is added, so a process that never
   * starts the scheduler (a CLI command, `dp serve --no-scheduler`) never loads cron-parser and its
   * date library. A bad one is logged naming its task and kept with its error.
   */
  private check(entry: Entry): boolean {
    if (!entry.checked) {
      entry.checked = true;
      const problem = cronProblem(entry.task.cron);
      if (problem) {
        entry.status.error = problem;
        this.log.error(`schedule '${entry.task.id}' will not run: ${problem}`, { plugin: entry.owner });
      }
    }
    return entry.status.error === undefined;
  }

  /** Drops a task (a run it started finishes on its own); false when there is none by that id. */
  remove(id: string): boolean {
    const entry = this.entries.get(id);
    if (!entry) return false;
    this.disarm(entry);
    this.entries.delete(id);
    return true;
  }

  get running(): boolean {
    return this.started;
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    const now = this.clock.now();
    for (const entry of this.entries.values()) if (this.check(entry)) this.arm(entry, now);
  }

  /** Clears every timer and aborts running tasks; they finish on their own (`settled` waits for them). */
  stop(): void {
    this.started = false;
    for (const entry of this.entries.values()) {
      this.disarm(entry);
      entry.controller?.abort(new Error('scheduler stopped'));
    }
  }

  /** Resolves once no task runs. */
  async settled(): Promise<void> {
    for (;;) {
      const runs = [...this.entries.values()].flatMap((e) => (e.run ? [e.run] : []));
      if (runs.length === 0) return;
      await Promise.all(runs);
    }
  }

  list(): ScheduleStatus[] {
    return [...this.entries.values()].map((e) => {
      this.check(e);
      return { ...e.status };
    });
  }

  private disarm(entry: Entry): void {
    if (entry.timer !== undefined) this.clock.clearTimeout(entry.timer);
    entry.timer = undefined;
    entry.next = undefined;
    entry.status.next_run = null;
  }

  private arm(entry: Entry, after: number): void {
    const next = nextCronRun(entry.task.cron, after);
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
      this.log.warn(`schedule '${entry.task.id}' skipped at ${new Date(due).toISOString()}: its previous run is still going`);
    } else this.fire(entry, due);
    this.arm(entry, Math.max(due, this.clock.now()));
  }

  private fire(entry: Entry, due: number): void {
    const controller = new AbortController();
    entry.controller = controller;
    entry.status.running = true;
    entry.status.last_run = new Date(due).toISOString();
    const { timeoutMs } = entry.task;
    const timeout = timeoutMs === undefined ? undefined : this.clock.setTimeout(() => controller.abort(new Error(`timed out after ${timeoutMs / 1000} s`)), timeoutMs);
    this.log.info(`schedule '${entry.task.id}' fired`);
    entry.run = Promise.resolve()
      .then(() => entry.task.run(controller.signal))
      .then(
        (result) => {
          const failed = result && typeof result === 'object' && (result as { status?: string }).status === 'error';
          if (controller.signal.aborted) {
            entry.status.last_status = 'error';
            entry.status.last_error = errorMessage(controller.signal.reason);
          } else if (failed) {
            entry.status.last_status = 'error';
            entry.status.last_error = String((result as { error?: unknown }).error ?? 'failed');
          } else {
            entry.status.last_status = 'success';
            delete entry.status.last_error;
          }
        },
        (e) => {
          entry.status.last_status = 'error';
          entry.status.last_error = controller.signal.aborted ? errorMessage(controller.signal.reason) : errorMessage(e);
          this.log.error(`schedule '${entry.task.id}' failed`, { error: entry.status.last_error });
        },
      )
      .finally(() => {
        if (timeout !== undefined) this.clock.clearTimeout(timeout);
        entry.status.running = false;
        if (entry.controller === controller) entry.controller = undefined;
        entry.run = undefined;
      });
  }
}
