/**
 * The models plugin: SQL models (transform/<schema>/<name>.sql) and seeds (seeds/*.csv), their
 * DAG, the transform engine, check, diff, lint, promote and debug. It provides the `models`
 * service other plugins (lineage, quality, streams) build on.
 */
import { AGENT_MCP, definePlugin, MODELS_SERVICE, TABLES_RESTORED } from '../../sdk/index.js';
import { registerCommands } from './commands.js';
import { LINT_CONFIG, SOURCES_CONFIG } from './config.js';
import { registerTransformEvents } from './events.js';
import { registerRoutes } from './routes.js';
import { ModelsEngine } from './service.js';
import { forgetState, markInterruptedRuns, MIGRATIONS, readStates } from './state.js';

export default definePlugin({
  config: [LINT_CONFIG, SOURCES_CONFIG],
  setup(ctx) {
    // MCP tools over models (list, read, check, build); zod and the tools load with the first MCP server.
    ctx.extend(AGENT_MCP, { tools: async (kit) => (await import('./mcp-tools.js')).modelTools(ctx, kit) });
    ctx.migrate(MIGRATIONS);
    const engine = new ModelsEngine(ctx);
    engine.extensions.offer(ctx);
    ctx.services.provide(MODELS_SERVICE, engine);
    registerRoutes(ctx, engine);
    registerCommands(ctx, engine);
    registerTransformEvents(ctx);
    // The parse cache is written a moment after a discovery; a stopping process writes it now.
    ctx.onStop(() => engine.discovery.flush());
    ctx.onStart(async () => {
      const n = await markInterruptedRuns(ctx);
      if (n) ctx.log.warn(`${n} transform run(s) left running by a process that ended mid-run marked interrupted`);
    });
    // A restored table no longer holds what its model's SQL built: its build state is forgotten,
    // so the next transform (or stream) rebuilds it instead of skipping it as unchanged.
    ctx.tap(TABLES_RESTORED, async (restore) => {
      const states = await readStates(ctx.db);
      for (const table of restore.tables) {
        const state = states.get(table.toLowerCase());
        if (!state) continue;
        await forgetState(ctx.db, state.name);
        restore.notes.push({
          table,
          plugin: ctx.manifest.name,
          message: `${state.kind} ${table} marked for rebuild: the next dp transform${state.kind === 'seed' ? ' (dp seed)' : ''} rebuilds it from its ${state.kind === 'seed' ? 'file' : 'SQL'}`,
        });
      }
    });
  },
});
