/**
 * The tools an agent gets for one caller: the agents plugin's own `query` tool (the kernel's
 * guarded runner) and the tools other plugins contribute to `agents.mcp` for their features
 * (models, tables, lineage, semantic, streams). Each is a name, a description written for an
 * agent, a zod input shape, the permission it needs and a handler. The stdio server and the
 * HTTP route share this list; a disabled plugin contributes nothing, so its tools do not appear.
 */
import { z } from 'zod';
import {
  AGENT_QUERY_DEFAULT_ROWS,
  AGENT_QUERY_MAX_ROWS,
  forbidden,
  hasPermission,
  qualified,
  type AgentContribution,
  type AgentTool,
  type AgentToolKit,
  type Caller,
  type PluginContext,
} from '../../sdk/index.js';

export interface ToolOptions {
  /** `dp mcp --read-only`: tools that need more than `read` are not offered and masking commands are refused. */
  readOnly: boolean;
}

/** A masking command changes policies: refused through an MCP server started read-only. */
const MASKING_COMMAND = /\b(create|drop)\s+masking\s+policy\b/i;

/** The kit a contribution builds its tools with, for one caller. */
export function toolKit(ctx: PluginContext, caller: Caller, options: ToolOptions): AgentToolKit {
  return {
    caller,
    z,
    readOnly: options.readOnly,
    // The runner masks a table endpoint's read by the table's own policies; an empty read says which columns it masked.
    maskedColumns: async (schema, table) => {
      const result = await ctx.queries.run({ sql: `SELECT * FROM ${qualified(schema, table)} LIMIT 0`, caller, purpose: 'sample', table: { schema, table } });
      return new Set((result.masked_columns ?? []).map((c) => c.name.toLowerCase()));
    },
  };
}

function queryTool(ctx: PluginContext, caller: Caller, options: ToolOptions): AgentTool {
  return {
    name: 'query',
    description:
      'Run one read-only SQL query (DuckDB dialect: SELECT, SHOW, DESCRIBE, SUMMARIZE) against the project warehouse and get the rows. ' +
      'Writes, file reads outside the project and internal schemas are refused; masked columns come back masked for your role; ' +
      `the role's timeout applies. Returns {columns, column_types, rows, truncated}; at most \`limit\` rows (default ${AGENT_QUERY_DEFAULT_ROWS}, max ${AGENT_QUERY_MAX_ROWS}), ` +
      'so aggregate in SQL rather than paging through raw rows. Use list_tables / describe_table first to learn the names.',
    input: {
      sql: z.string().min(1).describe('One read-only SQL statement'),
      params: z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()])).optional().describe('Values for $name placeholders'),
      limit: z.number().int().min(1).max(AGENT_QUERY_MAX_ROWS).optional().describe(`Rows to return (default ${AGENT_QUERY_DEFAULT_ROWS})`),
    },
    returnsRows: true,
    permission: 'read',
    run: async (args) => {
      if (options.readOnly && MASKING_COMMAND.test(String(args.sql))) {
        throw forbidden('mcp_read_only', 'This MCP server is read-only: masking commands are refused', {});
      }
      const result = await ctx.queries.run({ sql: args.sql, params: args.params, limit: args.limit ?? AGENT_QUERY_DEFAULT_ROWS, caller, purpose: 'query' });
      const note = result.truncated ? `more rows exist: only the first ${result.limit} are shown; aggregate or filter in SQL` : undefined;
      return { columns: result.columns, column_types: result.column_types, rows: result.rows, truncated: result.truncated, ...(note ? { note } : {}) };
    },
  };
}

/** The tools offered to `caller` (a tool whose permission the caller lacks, or that writes on a read-only server, is left out). */
export async function agentTools(ctx: PluginContext, contributions: readonly AgentContribution[], caller: Caller, options: ToolOptions): Promise<AgentTool[]> {
  const kit = toolKit(ctx, caller, options);
  const tools = [queryTool(ctx, caller, options)];
  for (const c of contributions) if (c.tools) tools.push(...(await c.tools(kit)));
  return tools.filter((t) => hasPermission(caller, t.permission) && !(options.readOnly && t.permission !== 'read'));
}
