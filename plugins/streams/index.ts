/**
 * The streams plugin: the script runner (the `scripts` service other plugins run scripts
 * through), streams (pipelines of ingest, seed, transform and export steps) with their schedules
 * on the kernel's scheduler, run history and the live pipeline events. It offers SCRIPT_CONTEXT
 * (fields other plugins add to a script's ctx).
 */
import {
  definePlugin,
  MODELS_SERVICE,
  NOTEBOOK_CELL_RUNNER,
  PROJECT_VALIDATORS,
  SCRIPT_CONTEXT,
  SCRIPTS_SERVICE,
  STREAMS_SERVICE,
  type NotebookCellRunner,
  type ScriptContextContribution,
} from '../../sdk/index.js';
import { registerCommands } from './commands.js';
import { STREAMS_CONFIG, streamDefinitions } from './config.js';
import { PipelineEvents } from './events.js';
import { markInterruptedHistory, MIGRATIONS } from './history.js';
import { registerRoutes } from './routes.js';
import { followStreams } from './scheduler.js';
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

    const cellRunners: NotebookCellRunner[] = [];
    ctx.provideExtensionPoint(NOTEBOOK_CELL_RUNNER, (runner, from) => {
      if (cellRunners.length > 0) throw new Error(`Plugin '${from}' contributes a second notebook cell runner`);
      cellRunners.push(runner);
    });

    const scripts = new ScriptRunner(ctx, contributions, cellRunners);
    ctx.services.provide(SCRIPTS_SERVICE, scripts);
    const events = new PipelineEvents();
    const streams = new StreamRunner(ctx, streamDefinitions(ctx.config(STREAMS_CONFIG)), scripts, ctx.services.get(MODELS_SERVICE), events);
    ctx.services.provide(STREAMS_SERVICE, streams);
    // dp validate: bad cron expressions and step targets that do not exist, with their lines.
    ctx.extend(PROJECT_VALIDATORS, { name: 'streams', validate: () => streams.validate() });

    // Runs a killed process left `running` are marked interrupted (CLI and server alike).
    ctx.onStart(async () => {
      const n = await markInterruptedHistory(ctx.db);
      if (n) ctx.log.warn(`${n} run(s) left running by a process that ended mid-run marked interrupted`);
    });
    if (ctx.serving) {
      // The schedules follow the definitions; the kernel runs them (only with ctx.scheduling).
      followStreams(ctx.scheduler, streams, streams.list());
      streams.onChange((defs) => followStreams(ctx.scheduler, streams, defs));
      // An edit of project.yml by another process (`dp connect` beside the server, an editor)
      // reaches the schedules within a minute even when nobody lists or runs a stream.
      let watch: NodeJS.Timeout | undefined;
      ctx.onStart(() => {
        if (!ctx.scheduling) return;
        watch = setInterval(() => streams.refresh(), 60_000);
        watch.unref();
      });
      ctx.onBeforeStop(() => clearInterval(watch));
    }
    registerRoutes(ctx, { scripts, streams, events });
    registerCommands(ctx, { scripts, streams });
  },
});
