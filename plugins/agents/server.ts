/**
 * One MCP server over the tools of `tools.ts` for one caller: `dp mcp` builds one for the local
 * user on stdio; `POST /mcp` builds one per request for the authenticated caller (stateless
 * streamable HTTP), so a role always sees exactly its own tools.
 */
import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { CATALOG_SERVICE, errorTextsFor, isDpError, type Caller, type ErrorTextFilter, type PluginContext } from '../../sdk/index.js';
import { agentTools, type ToolOptions } from './tools.js';

/** Longest tool answer (characters of JSON): an agent's context is precious, so longer answers are cut with a note. */
export const MAX_RESULT_CHARS = 20_000;

export const SERVER_INSTRUCTIONS =
  'dp is a local data-pipeline workbench over a DuckDB warehouse. Start with list_models or list_tables, ' +
  'describe_table before querying, and query with aggregates (results are capped). Masked columns stay masked. ' +
  'model_lineage and impact explain how columns flow; check validates models and runs contracts.';

/** The JSON text of a result, cut at MAX_RESULT_CHARS with a note saying so. */
export function compactText(value: unknown): string {
  const text = JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? Number(v) : v));
  if (text.length <= MAX_RESULT_CHARS) return text;
  return `${text.slice(0, MAX_RESULT_CHARS)}\n[truncated: the answer had ${text.length} characters, only the first ${MAX_RESULT_CHARS} are shown; ask for less (a smaller limit, a filter, an aggregate)]`;
}

/** A tool's error as the dp error body, marked as an error for the agent (never a stack trace). */
function errorResult(e: unknown, errorTexts: ErrorTextFilter) {
  const body = isDpError(e)
    ? { error: { code: e.code, message: errorTexts.text(e.message), details: errorTexts.fields(e.details) } }
    : { error: { code: 'internal_error', message: 'The tool failed unexpectedly; see the dp log', details: {} } };
  return { isError: true, content: [{ type: 'text' as const, text: JSON.stringify(body) }] };
}

export function createMcpServer(ctx: PluginContext, caller: Caller, options: ToolOptions, version: string): McpServer {
  const server = new McpServer({ name: 'dp', version }, { instructions: SERVER_INSTRUCTIONS });
  // Tool answers carry build, run and check errors: they pass through the sdk's one redaction
  // of error texts for this caller (docs/security.md "Error texts"); query rows are masked by the runner.
  const valuesHidden = ctx.hook('valuesHiddenFrom');
  for (const tool of agentTools(ctx, caller, options)) {
    server.registerTool(
      tool.name,
      { description: tool.description, inputSchema: tool.input, annotations: { readOnlyHint: tool.permission === 'read' } },
      async (args: Record<string, unknown>) => {
        const errorTexts = await errorTextsFor(valuesHidden, caller);
        try {
          const answer = await tool.run(args, caller);
          return { content: [{ type: 'text' as const, text: compactText(tool.returnsRows ? answer : errorTexts.fields(answer)) }] };
        } catch (e) {
          if (!isDpError(e)) ctx.log.error('mcp: tool failed', { tool: tool.name, error: e instanceof Error ? e.message : String(e) });
          return errorResult(e, errorTexts);
        }
      },
    );
  }
  registerResources(ctx, server, caller);
  return server;
}

/** The resource URI of the project's generated documentation. */
export const DOCS_RESOURCE_URI = 'dp://docs/project';
/** The resource URI template of dp's user guide (the catalog plugin's wiki pages). */
export const WIKI_RESOURCE_TEMPLATE = 'dp://wiki/{slug}';

/**
 * Resources (when the catalog plugin is enabled): the project's generated documentation as the
 * caller's role sees it, and every page of dp's user guide, listed and read as Markdown.
 */
function registerResources(ctx: PluginContext, server: McpServer, caller: Caller): void {
  const catalog = ctx.services.find(CATALOG_SERVICE);
  if (!catalog) return;
  server.registerResource(
    'project-docs',
    DOCS_RESOURCE_URI,
    {
      title: `Documentation of the project '${ctx.project.config.name}'`,
      description: 'Generated documentation of this project: models with their columns and lineage, sources, exposures, metrics and contracts (what `dp docs` prints)',
      mimeType: 'text/markdown',
    },
    async (uri) => ({ contents: [{ uri: uri.href, mimeType: 'text/markdown', text: await catalog.docsMarkdown(caller) }] }),
  );
  server.registerResource(
    'wiki',
    new ResourceTemplate(WIKI_RESOURCE_TEMPLATE, {
      list: () => ({
        resources: catalog.wikiPages().map((p) => ({
          uri: `dp://wiki/${p.slug}`,
          name: p.slug,
          title: p.title,
          description: `dp user guide, ${p.category}: ${p.title}`,
          mimeType: 'text/markdown',
        })),
      }),
      complete: { slug: (value) => catalog.wikiPages().map((p) => p.slug).filter((s) => s.startsWith(value)) },
    }),
    { title: "dp's user guide", description: 'Pages of the dp user guide (how to use dp: models, seeds, masking, the CLI...)', mimeType: 'text/markdown' },
    async (uri, variables) => {
      const slug = String(Array.isArray(variables.slug) ? variables.slug[0] : variables.slug);
      // An unknown page is the catalog's 404 (wiki_page_not_found), which the client gets as an error.
      const page = catalog.wikiPage(slug);
      return { contents: [{ uri: uri.href, mimeType: 'text/markdown', text: `# ${page.title}\n\n${page.content}` }] };
    },
  );
}
