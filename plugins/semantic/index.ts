/** The semantic layer: wires the service, routes and CLI (see README.md). */
import { definePlugin, SEMANTIC_SERVICE } from '../../sdk/index.js';
import { registerCommands } from './commands.js';
import { registerRoutes } from './routes.js';
import { createSemanticService } from './service.js';

export default definePlugin({
  setup(ctx) {
    const service = createSemanticService(ctx);
    ctx.services.provide(SEMANTIC_SERVICE, service);
    registerRoutes(ctx, service);
    registerCommands(ctx, service);
  },
});
