/**
 * One MCP server over the tools of `tools.ts` and the resources plugins contribute, for one
 * caller: `dp mcp` builds one for the local user on stdio; `POST /mcp` builds one per request for
 * the authenticated caller (stateless streamable HTTP), so a role always sees exactly its own tools.
 */
import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { errorTextsFor, isDpError, VALUES_HIDDEN_FROM, type AgentContribution, type AgentResource, type AgentResourceTemplate, type Caller, type ErrorTextFilter, type PluginContext } from '../../sdk/index.js';
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

export async function createMcpServer(ctx: PluginContext, contributions: readonly AgentContribution[], caller: Caller, options: ToolOptions, version: string): Promise<McpServer> {
  const server = new McpServer({ name: 'dp', version }, { instructions: SERVER_INSTRUCTIONS });
  // Tool answers carry build, run and check errors: they pass through the sdk's one redaction
  // of error texts for this caller (docs/security.md "Error texts"); query rows are masked by the runner.
  const valuesHidden = ctx.hook(VALUES_HIDDEN_FROM);
  for (const tool of await agentTools(ctx, contributions, caller, options)) {
    server.registerTool(
      tool.name,
      { description: tool.description, inputSchema: tool.input, annotations: { readOnlyHint: tool.permission === 'read' } },
      async (args: Record<string, unknown>) => {
        const errorTexts = await errorTextsFor(valuesHidden, caller);
        try {
          const answer = await tool.run(args);
          return { content: [{ type: 'text' as const, text: compactText(tool.returnsRows ? answer : errorTexts.fields(answer)) }] };
        } catch (e) {
          if (!isDpError(e)) ctx.log.error('mcp: tool failed', { tool: tool.name, error: e instanceof Error ? e.message : String(e) });
          return errorResult(e, errorTexts);
        }
      },
    );
  }
  for (const c of contributions) for (const resource of (await c.resources?.(caller)) ?? []) registerResource(server, resource);
  return server;
}

/** One contributed resource, at its URI or under its template (listed, completed and read by its variable). */
function registerResource(server: McpServer, resource: AgentResource | AgentResourceTemplate): void {
  const metadata = { title: resource.title, description: resource.description, mimeType: resource.mimeType };
  if ('uri' in resource) {
    server.registerResource(resource.name, resource.uri, metadata, async (uri) => ({ contents: [{ uri: uri.href, mimeType: resource.mimeType, text: await resource.read() }] }));
    return;
  }
  const variable = /\{(\w+)\}/.exec(resource.uriTemplate)?.[1] ?? 'value';
  const uriOf = (value: string) => resource.uriTemplate.replace(`{${variable}}`, value);
  server.registerResource(
    resource.name,
    new ResourceTemplate(resource.uriTemplate, {
      list: () => ({ resources: resource.list().map((r) => ({ uri: uriOf(r.value), name: r.value, title: r.title, description: r.description, mimeType: resource.mimeType })) }),
      complete: { [variable]: (value: string) => resource.list().map((r) => r.value).filter((v) => v.startsWith(value)) },
    }),
    metadata,
    async (uri, variables) => {
      const raw = variables[variable];
      const page = await resource.read(String(Array.isArray(raw) ? raw[0] : raw));
      return { contents: [{ uri: uri.href, mimeType: resource.mimeType, text: page.title ? `# ${page.title}\n\n${page.text}` : page.text }] };
    },
  );
}
