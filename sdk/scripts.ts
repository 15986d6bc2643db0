/**
 * The contract of the streams plugin's script runner and scheduler, shared with the plugins that
 * build on them (connectors, notebooks, versioning). Types and refs only: the streams plugin
 * implements them.
 */
import type { Caller } from './auth.js';
import type { DbConnection, DatabasePort } from './db.js';
import type { Logger } from './plugin.js';
import { createExtensionPoint, createServiceRef } from './plugin.js';

/**
 * What an ingest/export script's default export receives: `export default async (ctx) => {}`.
 * Other plugins add fields through SCRIPT_CONTEXT (the connectors plugin adds `connectors`).
 */
export interface ScriptContext {
  /** The server's connection pool: `bulkLoad` (appender) for fast loads, never one INSERT per row. */
  db: Pick<DatabasePort, 'all' | 'query' | 'bulkLoad' | 'withConnection'> & Pick<DbConnection, 'run' | 'value'>;
  /** The project's configuration (project.yml, `${VAR}` resolved), read-only. */
  config: Readonly<Record<string, unknown>>;
  /** Variables from the project's .env. */
  env: Readonly<Record<string, string>>;
  /** Secrets by name (never logged). */
  secrets: { get(name: string): string | undefined };
  /** Captured into the run's output. */
  log: Logger;
  /** Aborted when the run is cancelled, on shutdown or maintenance. */
  signal: AbortSignal;
  /** Contributions of other plugins (SCRIPT_CONTEXT), by key. */
  [extension: string]: unknown;
}

export interface ScriptRunOptions {
  caller?: Caller;
  signal?: AbortSignal;
  /** Receives each captured output line as it happens (live progress). */
  onOutput?: (line: string) => void;
  /** Why it runs: `cli`, `api`, `stream:<name>`, `schedule`. */
  trigger?: string;
}

export interface ScriptRunResult {
  /** Project-relative path that ran. */
  path: string;
  status: 'success' | 'error' | 'cancelled';
  duration_ms: number;
  /** Captured console and `ctx.log` lines. */
  output: string[];
  /** The thrown message; `stack` trimmed to the script's own frames. */
  error?: string;
  stack?: string;
}

export interface ScriptsService {
  /**
   * Runs a `.ts`/`.js`/`.mjs` script or a `.dpnb` notebook under `ingest/`, `export/` or
   * `notebooks/` (symlinks resolved). Throws DpError 400 for any other path or language.
   */
  run(projectPath: string, options?: ScriptRunOptions): Promise<ScriptRunResult>;
}

export const SCRIPTS_SERVICE = createServiceRef<ScriptsService>('scripts');

/** A field other plugins add to every script's ctx; `create` runs once per script run. */
export interface ScriptContextContribution {
  key: string;
  create(run: { signal: AbortSignal; log: Logger; path: string }): unknown;
}

export const SCRIPT_CONTEXT = createExtensionPoint<ScriptContextContribution>('scripts.context');

/**
 * A scheduled job other plugins register with the streams plugin's scheduler (the connectors
 * plugin registers each connector's `schedule`). A job still running at its next tick is skipped.
 */
export interface ScheduledJob {
  /** Unique, e.g. `connector:orders_db`. */
  name: string;
  /** 5-field cron expression. */
  cron: string;
  run(signal: AbortSignal): Promise<unknown>;
}

export const SCHEDULER_JOBS = createExtensionPoint<ScheduledJob>('scheduler.jobs');
