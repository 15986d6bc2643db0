/**
 * The streams plugin: the script runner (the `scripts` service other plugins run scripts
 * through), streams (pipelines of ingest, seed, transform and export steps), the scheduler
 * `dp serve` starts, run history and the live pipeline events. It offers SCRIPT_CONTEXT (fields
 * other plugins add to a script's ctx) and SCHEDULER_JOBS (cron jobs other plugins register).
 */
import {
  definePlugin,
  MODELS_SERVICE,
  NOTEBOOK_CELL_RUNNER,
  PROJECT_VALIDATORS,
  SCHEDULER_JOBS,
  SCRIPT_CONTEXT,
  SCRIPTS_SERVICE,
  STREAMS_SERVICE,
  type NotebookCellRunner,
  type ScheduledJob,
  type ScriptContextContribution,
} from '../../sdk/index.js';
import { registerCommands } from './commands.js';
import { STREAMS_CONFIG } from './config.js';
import { PipelineEvents } from './events.js';
import { markInterruptedHistory, MIGRATIONS } from './history.js';
import { registerRoutes } from './routes.js';
import { Scheduler, streamJob } from './scheduler.js';
import { ScriptRunner } from './scripts.js';
import { StreamRunner } from './streams.js';

/** Keys every script's ctx has; a contribution may not take them. */
const RESERVED_CONTEXT_KEYS = new Set(['db', 'config', 'env', 'secrets', 'log', 'signal']);

export default definePlugin({
  config: [STREAMS_CONFIG],
  setup(ctx) {
    ctx.migrate(MIGRATIONS);
    const contributions: ScriptContextContribution[] = [];
    ctx.provideExtensionPoint(SCRIPT_CONTEXT, (c, from) => {
      if (RESERVED_CONTEXT_KEYS.has(c.key) || contributions.some((x) => x.key === c.key)) {
        throw new Error(`Plugin '${from}' contributes the script ctx field '${c.key}', which is already taken`);
      }
      contributions.push(c);
    });
    const jobs: ScheduledJob[] = [];
    ctx.provideExtensionPoint(SCHEDULER_JOBS, (job) => jobs.push(job));

    const cellRunners: NotebookCellRunner[] = [];
    ctx.provideExtensionPoint(NOTEBOOK_CELL_RUNNER, (runner, from) => {
      if (cellRunners.length > 0) throw new Error(`Plugin '${from}' contributes a second notebook cell runner`);
      cellRunners.push(runner);
    });

    const scripts = new ScriptRunner(ctx, contributions, cellRunners);
    ctx.services.provide(SCRIPTS_SERVICE, scripts);
    const events = new PipelineEvents();
    const streams = new StreamRunner(ctx, scripts, ctx.services.get(MODELS_SERVICE), events);
    ctx.services.provide(STREAMS_SERVICE, streams);
    // dp validate: bad cron expressions and step targets that do not exist, with their lines.
    ctx.extend(PROJECT_VALIDATORS, { name: 'streams', validate: () => streams.validate() });

    const scheduler = new Scheduler(ctx.log);
    // Runs a killed process left `running` are marked interrupted (CLI and server alike).
    ctx.onStart(async () => {
      const n = await markInterruptedHistory(ctx.db);
      if (n) ctx.log.warn(`${n} run(s) left running by a process that ended mid-run marked interrupted`);
    });
    if (ctx.serving) {
      let registered = false;
      /** The scheduler's stream entries follow the definitions: added, re-timed, dropped. */
      const followStreams = (defs: ReturnType<typeof streams.list>) => {
        const wanted = new Map(defs.filter((d) => d.schedule !== null).map((d) => [`stream:${d.name}`, d]));
        for (const s of scheduler.list()) {
          if (s.kind === 'stream' && (!wanted.has(s.name) || wanted.get(s.name)!.schedule !== s.cron)) scheduler.remove(s.name);
        }
        const present = new Set(scheduler.list().map((s) => s.name));
        for (const [name, def] of wanted) if (!present.has(name)) scheduler.add(streamJob(streams, def), 'stream');
      };
      streams.onChange((defs) => {
        if (registered) followStreams(defs);
      });
      ctx.onStart(() => {
        // Once: the extension point is closed by now, and a restart after maintenance keeps the entries.
        if (!registered) {
          registered = true;
          followStreams(streams.list());
          for (const job of jobs) scheduler.add(job, 'job');
        }
        // Without the wall clock (`dp serve --no-scheduler`, test servers) the schedules are listed but never fire.
        if (!ctx.scheduling) return;
        scheduler.start();
      });
      ctx.onBeforeStop(() => {
        scheduler.stop();
      });
    }
    registerRoutes(ctx, { scripts, streams, scheduler, events });
    registerCommands(ctx, { scripts, streams, scheduler });
  },
});
