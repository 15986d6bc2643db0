/**
 * What maintenance (app/maintenance.ts) and shutdown (app/shutdown.ts) share: the app's refusal
 * of new work and the stop of plugins around a drain of in-flight work.
 */
import type { DpError } from '../../sdk/errors.js';
import type { DrainReport, DuckDatabase } from '../database.js';
import type { PluginLifecycle } from '../lifecycle.js';
import type { KernelLogger } from '../log.js';

/** How long maintenance and shutdown wait for in-flight work before interrupting it (default). */
export const DEFAULT_DRAIN_MS = 10_000;

/** The parts of the app maintenance and shutdown act on. */
export interface DrainHost {
  readonly log: KernelLogger;
  readonly lifecycle: PluginLifecycle;
  /** The open database file (undefined before boot opened one). */
  database(): DuckDatabase | undefined;
  /** The 503 the app answers while it refuses new work (maintenance, shutdown), or null. */
  refusal: DpError | null;
}

/**
 * Stops plugins around a drain: beforeStop, then in-flight work (`alsoWait`, e.g. the HTTP
 * server's open requests, and every lent connection) gets until the deadline before it is
 * interrupted, then onStop. Runs are told to stop through their signal first.
 */
export async function stopAndDrain(host: DrainHost, reason: DpError, drainMs: number, alsoWait?: Promise<unknown>): Promise<DrainReport | null> {
  const deadline = Date.now() + drainMs;
  let report: DrainReport | null = null;
  await host.lifecycle.stop(reason, async () => {
    if (alsoWait) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([alsoWait.catch(() => {}), new Promise((r) => (timer = setTimeout(r, Math.max(0, deadline - Date.now()))))]);
      clearTimeout(timer);
    }
    report = (await host.database()?.drain(Math.max(0, deadline - Date.now()))) ?? null;
  });
  return report;
}
