/** Shutdown: new work refused, plugins stopped around a drain, the database closed. */
import { DpError } from '../../sdk/errors.js';
import type { AuthProvider } from '../auth/index.js';
import type { LiveConfig } from '../config/live.js';
import type { GuardedQueryRunner } from '../query-runner.js';
import { DEFAULT_DRAIN_MS, stopAndDrain, type DrainHost } from './drain.js';

export interface ShutdownOptions {
  /** How long in-flight work may run on before it is interrupted (default 10 s). */
  drainMs?: number;
  /** More in-flight work to wait for within the same deadline (the HTTP server's open requests). */
  alsoWait?: Promise<unknown>;
}

export interface ShutdownHost extends DrainHost {
  readonly queries: GuardedQueryRunner;
  readonly liveConfig: LiveConfig | undefined;
  readonly auth: AuthProvider | undefined;
}

/**
 * New work is refused (503 `shutting_down`), runs are told to stop, plugins stop around a drain
 * (in-flight work and `alsoWait` get `drainMs`, then are interrupted), and the database closes.
 */
export async function shutDown(host: ShutdownHost, options: ShutdownOptions = {}): Promise<void> {
  const refusal = new DpError(503, 'shutting_down', 'The server is shutting down', {}, { 'Retry-After': '10' });
  host.refusal ??= refusal;
  host.liveConfig?.close();
  const database = host.database();
  if (!database) return;
  const drainMs = options.drainMs ?? DEFAULT_DRAIN_MS;
  // User queries get the same grace as other in-flight work, then are stopped; and before the
  // file closes every one has let go (a DuckDB call left running on a libuv worker keeps the
  // process from exiting).
  const cut = setTimeout(() => void host.queries.stopAll(refusal), drainMs);
  try {
    await stopAndDrain(host, refusal, drainMs, options.alsoWait);
  } finally {
    clearTimeout(cut);
  }
  await host.queries.stopAll(refusal);
  database.refuse(refusal);
  database.close();
  host.auth?.close();
}
