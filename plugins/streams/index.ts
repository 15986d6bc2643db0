/**
 * The streams plugin: streams (pipelines of ingest, seed, transform and export steps; scripts
 * run through the scripts plugin's service) with their schedules on the kernel's scheduler, run
 * history (stream runs and, through `scripts.runEnded`, script runs) and the live pipeline events.
 */
import { AGENT_CONTEXT, AGENT_MCP, definePlugin, MODELS_SERVICE, PROJECT_VALIDATORS, SCRIPT_RUN_ENDED, SCRIPTS_SERVICE, STREAMS_SERVICE } from '../../sdk/index.js';
import { registerCommands } from './commands.js';
import { streamsContextSection } from './context-section.js';
import { STREAMS_CONFIG } from './config.js';
import { PipelineEvents } from './events.js';
import { markInterruptedHistory, MIGRATIONS, recordHistory } from './history.js';
import { registerRoutes } from './routes.js';
import { followStreams } from './scheduler.js';
import { StreamRunner } from './streams.js';

export default definePlugin({
  config: [STREAMS_CONFIG],
  setup(ctx) {
    // MCP tool (run_history), loaded with the first MCP server.
    ctx.extend(AGENT_MCP, { tools: async (kit) => (await import('./mcp-tools.js')).streamTools(ctx, kit) });
    ctx.migrate(MIGRATIONS);
    const scripts = ctx.services.get(SCRIPTS_SERVICE);
    // Script runs land in the run history beside stream runs.
    ctx.tap(SCRIPT_RUN_ENDED, async (r) => {
      await recordHistory(ctx.db, { run_id: r.run_id, kind: 'script', name: r.path, trigger: r.trigger, status: r.status, started_at: r.started_at, finished_at: r.finished_at, duration_ms: r.duration_ms, error: r.error, output: r.output });
    });
    const events = new PipelineEvents();
    const streams = new StreamRunner(ctx, scripts, ctx.services.get(MODELS_SERVICE), events);
    ctx.services.provide(STREAMS_SERVICE, streams);
    ctx.extend(AGENT_CONTEXT, { section: streamsContextSection(streams) });
    // dp validate: bad cron expressions and step targets that do not exist, with their lines.
    ctx.extend(PROJECT_VALIDATORS, { name: 'streams', validate: () => streams.validate() });

    // Runs a killed process left `running` are marked interrupted (CLI and server alike).
    ctx.onStart(async () => {
      const n = await markInterruptedHistory(ctx.db);
      if (n) ctx.log.warn(`${n} run(s) left running by a process that ended mid-run marked interrupted`);
    });
    if (ctx.serving) {
      // The schedules follow the definitions, which follow the live config; the kernel runs
      // them (only with ctx.scheduling).
      followStreams(ctx.scheduler, streams, streams.list());
      streams.onChange((defs) => followStreams(ctx.scheduler, streams, defs));
    }
    registerRoutes(ctx, { streams, events });
    registerCommands(ctx, { streams });
  },
});
