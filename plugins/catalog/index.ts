/** The catalog: wires sources, exposures, overview, docs, wiki and git status (see README.md). */
import { AGENT_MCP, CATALOG_DOCS, CATALOG_SERVICE, definePlugin, LINEAGE_SERVICE, MODELS_SERVICE, SEMANTIC_SERVICE, TABLES_SERVICE, type CatalogService, type DocContribution } from '../../sdk/index.js';
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
    // Sections of the generated docs (metrics, contracts) and the column lineage come from the plugins that own them.
    const docs: DocContribution[] = [];
    ctx.provideExtensionPoint(CATALOG_DOCS, (contribution) => docs.push(contribution));
    registerRoutes(ctx, deps, docs);
    registerCommands(ctx, deps, docs);
    const catalog: CatalogService = {
      docsMarkdown: async (caller) => renderMarkdown(await structuredDocs(deps, { caller }, docs), ctx.env),
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
