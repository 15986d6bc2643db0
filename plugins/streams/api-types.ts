/**
 * The shapes the streams plugin's HTTP API answers with: the one definition the backend returns
 * and the Streams page reads (both `import type` it; types only, so the page's bundle takes
 * nothing from the server side).
 */

/** One run of a stream or script (`_service.run_history`; GET /api/history lists them). */
export interface HistoryRecord {
  run_id: string;
  kind: 'stream' | 'script';
  name: string;
  trigger: string;
  status: string;
  started_at: string;
  finished_at: string;
  duration_ms: number;
  error?: string | null;
  steps?: unknown;
}

/** One cron schedule the scheduler keeps (GET /api/scheduler). */
export interface ScheduleStatus {
  name: string;
  /** `stream` for a stream's schedule, `job` for one another plugin registered. */
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

/** GET /api/scheduler. */
export interface SchedulerState {
  running: boolean;
  schedules: ScheduleStatus[];
}
