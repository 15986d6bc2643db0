/**
 * The catalog's MCP resources (the agents plugin's `agents.mcp` extension point): the project's
 * generated documentation as the caller's role sees it, and every page of dp's user guide,
 * listed and read as Markdown.
 */
import type { AgentResource, AgentResourceTemplate, Caller, CatalogService, PluginContext } from '../../sdk/index.js';

/** The resource URI of the project's generated documentation. */
export const DOCS_RESOURCE_URI = 'dp://docs/project';
/** The resource URI template of dp's user guide (the wiki pages). */
export const WIKI_RESOURCE_TEMPLATE = 'dp://wiki/{slug}';

export function catalogResources(ctx: PluginContext, catalog: CatalogService, caller: Caller): Array<AgentResource | AgentResourceTemplate> {
  return [
    {
      name: 'project-docs',
      uri: DOCS_RESOURCE_URI,
      title: `Documentation of the project '${ctx.project.config.name}'`,
      description: 'Generated documentation of this project: models with their columns and lineage, sources, exposures, metrics and contracts (what `dp docs` prints)',
      mimeType: 'text/markdown',
      read: () => catalog.docsMarkdown(caller),
    },
    {
      name: 'wiki',
      uriTemplate: WIKI_RESOURCE_TEMPLATE,
      title: "dp's user guide",
      description: 'Pages of the dp user guide (how to use dp: models, seeds, masking, the CLI...)',
      mimeType: 'text/markdown',
      list: () => catalog.wikiPages().map((p) => ({ value: p.slug, title: p.title, description: `dp user guide, ${p.category}: ${p.title}` })),
      // An unknown page is the catalog's 404 (wiki_page_not_found), which the client gets as an error.
      read: async (slug) => {
        const page = catalog.wikiPage(slug);
        return { title: page.title, text: page.content };
      },
    },
  ];
}
