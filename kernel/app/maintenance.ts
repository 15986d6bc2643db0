/** Maintenance: the database file closed while the app stays up (a restore, an environment switch). */
import { DpError } from '../../sdk/errors.js';
import type { WriteLock } from '../write-lock.js';
import { DEFAULT_DRAIN_MS, stopAndDrain, type DrainHost } from './drain.js';

export interface MaintenanceOptions {
  /** How long in-flight work may run on before it is interrupted (default 10 s). */
  drainMs?: number;
  /** Retry-After seconds sent with the 503 answers meanwhile (default 5). */
  retryAfterSeconds?: number;
}

export interface MaintenanceHost extends DrainHost {
  readonly writeLock: WriteLock;
  /** Opens the file the project now names, migrates it and starts the plugins. */
  reopen(): Promise<void>;
}

/**
 * Refuses new work (HTTP 503 `maintenance` with Retry-After), tells runs to stop, takes the
 * write lock (the running writer finishes, queued ones wait), stops plugins around a drain of
 * in-flight work (interrupted after `drainMs`), closes the database, runs `fn` on the closed file
 * (replace it, switch it), then reopens the file the project now names, migrates and starts. The
 * file is reopened and the plugins started even when `fn` fails.
 */
export async function runMaintenance<T>(host: MaintenanceHost, reason: string, fn: (file: { path: string }) => Promise<T> | T, options: MaintenanceOptions = {}): Promise<T> {
  if (host.refusal) throw host.refusal;
  const database = host.database()!;
  const retryAfter = options.retryAfterSeconds ?? 5;
  const refusal = new DpError(503, 'maintenance', `The server is in maintenance (${reason}); retry in a few seconds`, { reason }, { 'Retry-After': String(retryAfter) });
  host.refusal = refusal;
  const drainMs = options.drainMs ?? DEFAULT_DRAIN_MS;
  host.lifecycle.abortRuns(refusal);
  host.log.info('maintenance begins', { reason });
  // A writer that ignores its signal is interrupted at the deadline, so the lock comes free.
  const cut = setTimeout(() => database.interruptAll(), drainMs);
  try {
    return await host.writeLock.exclusive(async () => {
      clearTimeout(cut);
      const report = await stopAndDrain(host, refusal, drainMs);
      if (report && (report.interrupted || report.forced)) host.log.warn('maintenance interrupted work still running at its deadline', { ...report });
      const path = database.path;
      database.refuse(refusal);
      database.close();
      try {
        return await fn({ path });
      } finally {
        await host.reopen();
      }
    });
  } finally {
    clearTimeout(cut);
    host.refusal = null;
    host.log.info('maintenance ends', { reason });
  }
}
