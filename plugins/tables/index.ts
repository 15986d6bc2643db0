import { AGENT_MCP, CATALOG_DOCS, definePlugin, QUERY_TARGET_SERVICE, qualified, TABLES_SERVICE, type JsonSchema, type TablesService } from '../../sdk/index.js';
import { autocompleteCatalog, describeTable, listTables, withRowCounts } from './catalog.js';
import { activeTarget, describeOnTarget, targetTables } from './on-target.js';

const tableParams: JsonSchema = {
  type: 'object',
  required: ['schema', 'table'],
  properties: { schema: { type: 'string', minLength: 1 }, table: { type: 'string', minLength: 1 } },
};

export default definePlugin({
  setup(ctx) {
    // MCP tools over the warehouse (list_tables, describe_table), loaded with the first MCP server.
    ctx.extend(AGENT_MCP, { tools: async (kit) => (await import('./mcp-tools.js')).tableTools(ctx, kit) });
    // On an environment with a warehouse target, the target's tables (on-target.ts); else the DuckDB file's.
    const describe = async (schema: string, table: string) => {
      const target = await activeTarget(ctx);
      return target ? describeOnTarget(target, schema, table) : describeTable(ctx.db, schema, table);
    };
    const service: TablesService = {
      list: async (schema, options) => {
        const target = await activeTarget(ctx);
        if (target) return (await targetTables(target, schema)).map(({ rows, ...t }) => (options?.rowCounts ? { ...t, rows } : t));
        const tables = await listTables(ctx.db, schema);
        if (!options?.rowCounts) return tables;
        const reader = options.reader;
        // count(*) of every table is a read a viewer starts: it runs as theirs (slot, deadline, client gone).
        if (reader) return ctx.queries.withDeadline({ caller: reader.caller, purpose: 'row_counts', signal: reader.signal }, (c) => withRowCounts(c, tables));
        return withRowCounts(ctx.db, tables);
      },
      describe,
    };
    ctx.services.provide(TABLES_SERVICE, service);
    // The catalog's sources and overview: every relation with its row count, counted as the reader's read.
    ctx.extend(CATALOG_DOCS, { relations: (reader) => service.list(undefined, { rowCounts: true, reader }) });

    ctx.route<unknown, { schema?: string }>({
      method: 'GET',
      url: '/api/tables',
      permission: 'read',
      summary: 'Tables and views, optionally of one schema',
      schema: {
        querystring: { type: 'object', properties: { schema: { type: 'string' } } },
        response: {
          200: { type: 'array', items: { type: 'object', properties: { schema: { type: 'string' }, name: { type: 'string' }, type: { type: 'string' } } } },
        },
      },
      handler: async (req) => {
        const target = await activeTarget(ctx);
        return target ? targetTables(target, req.query.schema) : listTables(ctx.db, req.query.schema);
      },
    });

    ctx.route<unknown, unknown, { schema: string; table: string }>({
      method: 'GET',
      url: '/api/tables/:schema/:table',
      permission: 'read',
      summary: 'Columns of a table or view',
      schema: { params: tableParams },
      handler: (req) => describe(req.params.schema, req.params.table),
    });

    ctx.route<unknown, { limit: number; offset: number }, { schema: string; table: string }>({
      method: 'GET',
      url: '/api/tables/:schema/:table/sample',
      permission: 'read',
      summary: 'Sample rows (masked by the exact-table policies)',
      schema: {
        params: tableParams,
        querystring: {
          type: 'object',
          properties: { limit: { type: 'integer', minimum: 1, maximum: 10000, default: 100 }, offset: { type: 'integer', minimum: 0, default: 0 } },
        },
      },
      handler: async (req) => {
        const { schema, table } = req.params;
        await describe(schema, table); // 404 before any SQL is built from the names
        const result = await ctx.queries.run({
          sql: `SELECT * FROM ${qualified(schema, table)}`,
          limit: req.query.limit,
          offset: req.query.offset,
          caller: req.caller,
          purpose: 'sample',
          table: { schema, table },
        });
        return { schema, table, columns: result.columns, rows: result.rows, limit: result.limit, offset: result.offset, masked_columns: result.masked_columns ?? [] };
      },
    });

    ctx.route({
      method: 'GET',
      url: '/api/autocomplete',
      permission: 'read',
      summary: 'Schemas, tables with their columns, and reserved keywords for the SQL editor',
      // On a ClickHouse environment the SQL page queries the target: its catalog is what the editor completes.
      handler: async () => {
        const onTarget = await ctx.services.find(QUERY_TARGET_SERVICE)?.browse();
        return onTarget ? { ...onTarget, keywords: (await autocompleteCatalog(ctx.db)).keywords } : autocompleteCatalog(ctx.db);
      },
    });

    ctx.command('tables', async (args, io) => {
      const schema = args.schema as string | undefined;
      const target = await activeTarget(ctx);
      const rows = target ? await targetTables(target, schema) : await withRowCounts(ctx.db, await listTables(ctx.db, schema));
      if (io.wantsJson) io.json(rows);
      else io.table(rows.map((r) => ({ ...r, rows: r.rows ?? '' })), ['schema', 'name', 'type', 'rows']);
    });
  },
});
