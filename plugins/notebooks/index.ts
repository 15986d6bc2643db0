/**
 * The notebooks plugin: `.dpnb` files (list, read, validated atomic save), cell execution in a
 * per-notebook server session, and conversion between notebooks and scripts. Pipeline runs of
 * notebooks (`dp run`, streams) stay with the scripts plugin's runner, which runs each
 * cell through the runner this plugin contributes (pipeline.ts).
 */
import { definePlugin, NOTEBOOK_CELL_RUNNER, SCRIPTS_SERVICE } from '../../sdk/index.js';
import { COLLABORATION_CONFIG, registerCollaboration } from './collaboration/index.js';
import { registerCommands } from './commands.js';
import { NOTEBOOKS_CONFIG } from './config.js';
import { pipelineCellRunner } from './pipeline.js';
import { registerRoutes } from './routes.js';
import { NotebookSessions } from './session.js';

export default definePlugin({
  config: [NOTEBOOKS_CONFIG, COLLABORATION_CONFIG],
  setup(ctx) {
    const settings = ctx.config(NOTEBOOKS_CONFIG);
    const sessions = new NotebookSessions(ctx, ctx.services.get(SCRIPTS_SERVICE), { idleSeconds: settings.session_idle_seconds, rowLimit: settings.row_limit, maxPendingRuns: settings.max_pending_runs });
    // Sessions hold values computed against the database being closed: they do not outlive it.
    ctx.onBeforeStop(() => sessions.releaseAll());
    // dp run and stream steps run a notebook's cells with the same names across cells as a session.
    ctx.extend(NOTEBOOK_CELL_RUNNER, pipelineCellRunner(ctx));
    registerRoutes(ctx, sessions);
    registerCommands(ctx);
    registerCollaboration(ctx);
  },
});
