/** The catalog: wires sources, exposures, overview, docs, wiki and git status (see README.md). */
import { AGENT_MCP, CATALOG_DOCS, CATALOG_SERVICE, definePlugin, MODELS_SERVICE, type CatalogService, type DocContribution } from '../../sdk/index.js';
import type { CatalogDeps } from './catalog.js';
import { registerCommands } from './commands.js';
import { renderMarkdown, structuredDocs } from './docs.js';
import { catalogResources } from './mcp-resources.js';
import { registerRoutes } from './routes.js';
import { wikiPage, wikiPages } from './wiki.js';

export default definePlugin({
  setup(ctx) {
    // Sections of the generated docs (metrics, contracts), the column lineage, the exposures, the
    // warehouse's relations and the overview's metric count come from the plugins that own them.
    const contributions: DocContribution[] = [];
    ctx.provideExtensionPoint(CATALOG_DOCS, (contribution) => contributions.push(contribution));
    const deps: CatalogDeps = { ctx, models: () => ctx.services.get(MODELS_SERVICE), contributions };
    registerRoutes(ctx, deps);
    registerCommands(ctx, deps);
    const catalog: CatalogService = {
      docsMarkdown: async (caller) => renderMarkdown(await structuredDocs(deps, { caller }), ctx.env),
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
