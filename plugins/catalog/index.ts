/** The catalog: wires sources, exposures, overview, docs, wiki and git status (see README.md). */
import { definePlugin, LINEAGE_SERVICE, MODELS_SERVICE, QUALITY_SERVICE, SEMANTIC_SERVICE, TABLES_SERVICE } from '../../sdk/index.js';
import type { CatalogDeps } from './catalog.js';
import { registerCommands } from './commands.js';
import { registerRoutes } from './routes.js';

export default definePlugin({
  setup(ctx) {
    const deps: CatalogDeps = {
      ctx,
      models: () => ctx.services.get(MODELS_SERVICE),
      lineage: () => ctx.services.find(LINEAGE_SERVICE),
      tables: () => ctx.services.find(TABLES_SERVICE),
      semantic: () => ctx.services.find(SEMANTIC_SERVICE),
    };
    const quality = () => ctx.services.find(QUALITY_SERVICE);
    registerRoutes(ctx, deps, quality);
    registerCommands(ctx, deps, quality);
  },
});
