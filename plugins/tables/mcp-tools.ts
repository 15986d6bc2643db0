/** The tables plugin's MCP tools (`agents.mcp`): list the warehouse's tables and describe one, masked columns marked. */
import { cappedList, notFound, qualified, schemaHiddenFrom, TABLES_SERVICE, type AgentTool, type AgentToolKit, type PluginContext } from '../../sdk/index.js';

function splitRelation(name: string): { schema: string; table: string } {
  const dot = name.lastIndexOf('.');
  return dot < 0 ? { schema: 'main', table: name } : { schema: name.slice(0, dot), table: name.slice(dot + 1) };
}

export function tableTools(ctx: PluginContext, kit: AgentToolKit): AgentTool[] {
  const { z, caller } = kit;
  const tables = ctx.services.get(TABLES_SERVICE);
  return [
    {
      name: 'list_tables',
      description:
        'List the tables and views of the warehouse as {schema, name, type}, optionally of one schema. Models live in their schema (staging, marts, ...), seeds in `seeds`. ' +
        'Use describe_table for columns.',
      input: { schema: z.string().min(1).optional().describe('Only this schema') },
      permission: 'read',
      run: async (args) => {
        const { items, note } = cappedList(await tables.list(args.schema));
        return { tables: items, ...(note ? { note } : {}) };
      },
    },
    {
      name: 'describe_table',
      description:
        'Describe one table or view: its columns with types and nullability, its row count, and which columns are masked for your role ' +
        '(masked: true means query returns a masked value, never the raw one). Pass schema and table, or table as `schema.table`.',
      input: {
        table: z.string().min(1).describe('Table name, or schema.table'),
        schema: z.string().min(1).optional().describe('Schema (default: the part before the dot in `table`, else main)'),
      },
      permission: 'read',
      run: async (args) => {
        const { schema, table } = args.schema ? { schema: String(args.schema), table: String(args.table) } : splitRelation(String(args.table));
        if (schemaHiddenFrom(schema, caller.role)) throw notFound('table_not_found', `No table or view ${schema}.${table}`, { schema, table });
        const described = await tables.describe(schema, table);
        const masked = await kit.maskedColumns(schema, table);
        const rowCount = await ctx.db.value<bigint | number>(`SELECT count(*) FROM ${qualified(schema, table)}`);
        return {
          schema,
          name: table,
          type: described.type,
          row_count: rowCount === null ? null : Number(rowCount),
          columns: described.columns.map((c) => ({ ...c, ...(masked.has(c.name.toLowerCase()) ? { masked: true } : {}) })),
        };
      },
    },
  ];
}
