/**
 * The `connectors` field of every script's ctx (the scripts plugin's SCRIPT_CONTEXT), which
 * generated `ingest/connector_<name>.ts` scripts call, and one task on the kernel's scheduler
 * that starts the connectors whose `schedule` is due.
 *
 * The task runs every minute and reads the schedules from the live config each time, so a
 * connector set up while the server runs is scheduled at once. A connector still syncing when its
 * schedule comes round again is not started twice.
 */
import { cronDueAt, errorMessage, type ConnectorsScriptApi, type Logger, type ScheduledTask, type ScriptContextContribution } from '../../sdk/index.js';
import type { ConnectorConfig } from './config.js';
import type { SyncEngine } from './sync.js';

export function scriptContext(engine: SyncEngine): ScriptContextContribution {
  return {
    key: 'connectors',
    create: (run): ConnectorsScriptApi => ({
      sync: (name, options) => engine.syncConnector(name, { trigger: `script:${run.path}`, signal: run.signal, ...(options?.tables ? { tables: options.tables } : {}) }),
    }),
  };
}

/** True when `cron` fires at `minute` (a Date on a whole minute). */
export function dueAt(cron: string, minute: Date): boolean {
  return cronDueAt(cron, minute.getTime());
}

export function scheduleJob(connectors: () => Iterable<ConnectorConfig>, engine: SyncEngine, log: Logger): ScheduledTask & { readonly running: ReadonlySet<string> } {
  const running = new Set<string>();
  return {
    id: 'connectors:schedules',
    cron: '* * * * *',
    running,
    async run(signal) {
      const minute = new Date(Math.floor(Date.now() / 60_000) * 60_000);
      for (const c of connectors()) {
        if (!c.schedule || !dueAt(c.schedule, minute) || running.has(c.name)) continue;
        running.add(c.name);
        void engine
          .syncConnector(c.name, { trigger: 'schedule', signal })
          .then((results) => {
            const failed = results.filter((r) => r.status === 'error');
            if (failed.length) log.warn(`scheduled sync of ${c.name}: ${failed.map((r) => `${r.table}: ${r.error}`).join('; ')}`);
            else log.info(`scheduled sync of ${c.name}: ${results.reduce((n, r) => n + r.rows_synced, 0)} rows`);
          })
          .catch((e) => log.error(`scheduled sync of ${c.name} failed: ${errorMessage(e)}`))
          .finally(() => running.delete(c.name));
      }
    },
  };
}
