/**
 * One MCP server over the tools of `tools.ts` for one caller: `dp mcp` builds one for the local
 * user on stdio; `POST /mcp` builds one per request for the authenticated caller (stateless
 * streamable HTTP), so a role always sees exactly its own tools.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { isDpError, type Caller, type PluginContext } from '../../sdk/index.js';
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
function errorResult(e: unknown) {
  const body = isDpError(e)
    ? { error: { code: e.code, message: e.message, details: e.details } }
    : { error: { code: 'internal_error', message: 'The tool failed unexpectedly; see the dp log', details: {} } };
  return { isError: true, content: [{ type: 'text' as const, text: JSON.stringify(body) }] };
}

export function createMcpServer(ctx: PluginContext, caller: Caller, options: ToolOptions, version: string): McpServer {
  const server = new McpServer({ name: 'dp', version }, { instructions: SERVER_INSTRUCTIONS });
  for (const tool of agentTools(ctx, caller, options)) {
    server.registerTool(
      tool.name,
      { description: tool.description, inputSchema: tool.input, annotations: { readOnlyHint: tool.permission === 'read' } },
      async (args: Record<string, unknown>) => {
        try {
          return { content: [{ type: 'text' as const, text: compactText(await tool.run(args, caller)) }] };
        } catch (e) {
          if (!isDpError(e)) ctx.log.error('mcp: tool failed', { tool: tool.name, error: e instanceof Error ? e.message : String(e) });
          return errorResult(e);
        }
      },
    );
  }
  return server;
}
