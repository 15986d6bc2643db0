/** The catalog: wires sources, exposures, overview, docs, wiki and git status (see README.md). */
import { AGENT_MCP, CATALOG_SERVICE, definePlugin, LINEAGE_SERVICE, MODELS_SERVICE, QUALITY_SERVICE, SEMANTIC_SERVICE, TABLES_SERVICE, type CatalogService } from '../../sdk/index.js';
import type { CatalogDeps } from './catalog.js';
import { registerCommands } from './commands.js';
import { renderMarkdown, structuredDocs } from './docs.js';
import { catalogResources } from './mcp-resources.js';
import { registerRoutes } from './routes.js';
import { wikiPage, wikiPages } from './wiki.js';

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
    const catalog: CatalogService = {
      docsMarkdown: async (caller) => renderMarkdown(await structuredDocs(deps, { caller }, quality()), ctx.env),
      wikiPages: () => wikiPages().map(({ slug, title, category, plugin }) => ({ slug, title, category, plugin })),
      wikiPage: (slug) => {
        const { title, category, plugin, content } = wikiPage(slug);
        return { slug, title, category, plugin, content };
      },
    };
    ctx.services.provide(CATALOG_SERVICE, catalog);
    ctx.extend(AGENT_MCP, { resources: (caller) => catalogResources(ctx, catalog, caller) });
  },
});
