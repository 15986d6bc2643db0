/**
 * What the connectors plugin adds to the streams plugin: the `connectors` field of every
 * script's ctx (SCRIPT_CONTEXT), which generated `ingest/connector_<name>.ts` scripts call, and
 * one scheduler job (SCHEDULER_JOBS) that starts the connectors whose `schedule` is due.
 *
 * The job runs every minute and reads the schedules from the live config each time, so a
 * connector set up while the server runs is scheduled at once (scheduler jobs are fixed when
 * plugins set up). A connector still syncing when its schedule comes round again is not started twice.
 */
import { CronExpressionParser } from 'cron-parser';
import { errorMessage, type ConnectorsScriptApi, type Logger, type ScheduledJob, type ScriptContextContribution } from '../../sdk/index.js';
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
  try {
    const next = CronExpressionParser.parse(cron, { currentDate: new Date(minute.getTime() - 1000) }).next();
    return next.getTime() === minute.getTime();
  } catch {
    return false;
  }
}

export function scheduleJob(connectors: () => Iterable<ConnectorConfig>, engine: SyncEngine, log: Logger): ScheduledJob & { readonly running: ReadonlySet<string> } {
  const running = new Set<string>();
  return {
    name: 'connectors:schedules',
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
