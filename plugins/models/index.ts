/**
 * The models plugin: SQL models (transform/<schema>/<name>.sql) and seeds (seeds/*.csv), their
 * DAG, the transform engine, check, diff, lint, promote and debug. It provides the `models`
 * service other plugins (lineage, quality, streams) build on.
 */
import { definePlugin, MODELS_SERVICE } from '../../sdk/index.js';
import { registerCommands } from './commands.js';
import { LINT_CONFIG, SOURCES_CONFIG } from './config.js';
import { registerTransformEvents } from './events.js';
import { registerRoutes } from './routes.js';
import { ModelsEngine } from './service.js';
import { MIGRATIONS } from './state.js';

export default definePlugin({
  config: [LINT_CONFIG, SOURCES_CONFIG],
  setup(ctx) {
    ctx.migrate(MIGRATIONS);
    const engine = new ModelsEngine(ctx);
    engine.extensions.offer(ctx);
    ctx.services.provide(MODELS_SERVICE, engine);
    registerRoutes(ctx, engine);
    registerCommands(ctx, engine);
    registerTransformEvents(ctx);
  },
});
