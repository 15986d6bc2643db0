/**
 * The shapes the streams plugin's HTTP API answers with: the one definition the backend returns
 * and the Streams page reads (both `import type` it; types only, so the page's bundle takes
 * nothing from the server side).
 */
import type { ScheduleStatus } from '../../sdk/scheduler.js';

/** One task of the kernel's scheduler (GET /api/scheduler): the sdk's shape. */
export type { ScheduleStatus };

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
  /** A script run's last output lines: only when one run is opened (GET /api/history/:run_id). */
  output?: string[] | null;
  /** True when the run has output the caller may not read (it needs the execute permission). */
  output_hidden?: boolean;
}

/** GET /api/scheduler. */
export interface SchedulerState {
  running: boolean;
  schedules: ScheduleStatus[];
}
