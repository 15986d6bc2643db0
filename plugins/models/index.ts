/**
 * The models plugin: SQL models (transform/<schema>/<name>.sql) and seeds (seeds/*.csv), their
 * DAG, the transform engine, check, diff, lint, promote and debug. It provides the `models`
 * service other plugins (lineage, quality, streams) build on.
 */
import { definePlugin } from '../../sdk/index.js';
import { registerCommands } from './commands.js';
import { registerRoutes } from './routes.js';
import { ModelsEngine } from './service.js';
import { MIGRATIONS } from './state.js';

export default definePlugin({
  setup(ctx) {
    ctx.migrate(MIGRATIONS);
    const engine = new ModelsEngine(ctx);
    ctx.services.provide('models', engine);
    registerRoutes(ctx, engine);
    registerCommands(ctx, engine);
  },
});
