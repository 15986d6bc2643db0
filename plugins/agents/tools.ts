/**
 * The tools an agent gets: each one a name, a description written for an agent (what it answers,
 * when to use it, what to pass), a zod input shape (the MCP SDK turns it into the JSON schema
 * the client sees), the permission it needs, and a handler that goes through the sdk services
 * with the caller's role. The stdio server and the HTTP route share this table.
 */
import { z } from 'zod';
import {
  forbidden,
  hasPermission,
  LINEAGE_SERVICE,
  MASKING_SERVICE,
  MODELS_SERVICE,
  notFound,
  qualified,
  schemaHiddenFrom,
  SEMANTIC_SERVICE,
  METRIC_GRAINS,
  TABLES_SERVICE,
  type Caller,
  type Permission,
  type PluginContext,
} from '../../sdk/index.js';

/** Rows the `query` tool returns unless the agent asks for more, and the most it may ask for. */
export const QUERY_DEFAULT_ROWS = 100;
export const QUERY_MAX_ROWS = 1000;
/** Longest list a listing tool returns before it cuts and says so. */
export const LIST_MAX_ITEMS = 200;

export interface ToolOptions {
  /** `dp mcp --read-only`: tools that need `execute` are not offered and masking commands are refused. */
  readOnly: boolean;
}

export interface AgentTool {
  name: string;
  description: string;
  input: z.ZodRawShape;
  permission: Permission;
  run(args: Record<string, any>, caller: Caller): Promise<unknown>;
  /** The answer holds query rows (masked by the guarded runner), not error texts to redact. */
  returnsRows?: boolean;
}

/** A masking command changes policies: refused through an MCP server started read-only. */
const MASKING_COMMAND = /\b(create|drop)\s+masking\s+policy\b/i;

/** `list` cut to `max` items, with a note saying how many were left out. */
export function capped<T>(list: T[], max = LIST_MAX_ITEMS): { items: T[]; note?: string } {
  if (list.length <= max) return { items: list };
  return { items: list.slice(0, max), note: `showing ${max} of ${list.length}; narrow the request to see the rest` };
}

function splitRelation(name: string): { schema: string; table: string } {
  const dot = name.lastIndexOf('.');
  return dot < 0 ? { schema: 'main', table: name } : { schema: name.slice(0, dot), table: name.slice(dot + 1) };
}

function hiddenRelation(relation: string, caller: Caller): boolean {
  const dot = relation.lastIndexOf('.');
  return dot > 0 && schemaHiddenFrom(relation.slice(0, dot), caller.role);
}

/** The tools offered to `caller` (a tool whose plugin is disabled, or whose permission the caller lacks, is left out). */
export function agentTools(ctx: PluginContext, caller: Caller, options: ToolOptions): AgentTool[] {
  const models = ctx.services.get(MODELS_SERVICE);
  const tables = ctx.services.find(TABLES_SERVICE);
  const lineage = ctx.services.find(LINEAGE_SERVICE);
  const masking = ctx.services.find(MASKING_SERVICE);
  const semantic = ctx.services.find(SEMANTIC_SERVICE);

  const maskedOf = async (schema: string, table: string): Promise<string[]> => (masking ? masking.maskedColumns(caller, schema, table) : []);

  const modelOrThrow = async (name: string) => {
    const model = await models.get(name);
    if (!model) throw notFound('model_not_found', `No model named '${name}'; list_models gives the names`, { model: name });
    return model;
  };

  const tools: AgentTool[] = [
    {
      name: 'query',
      description:
        'Run one read-only SQL query (DuckDB dialect: SELECT, SHOW, DESCRIBE, SUMMARIZE) against the project warehouse and get the rows. ' +
        'Writes, file reads outside the project and internal schemas are refused; masked columns come back masked for your role; ' +
        `the role's timeout applies. Returns {columns, column_types, rows, truncated}; at most \`limit\` rows (default ${QUERY_DEFAULT_ROWS}, max ${QUERY_MAX_ROWS}), ` +
        'so aggregate in SQL rather than paging through raw rows. Use list_tables / describe_table first to learn the names.',
      input: {
        sql: z.string().min(1).describe('One read-only SQL statement'),
        params: z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()])).optional().describe('Values for $name placeholders'),
        limit: z.number().int().min(1).max(QUERY_MAX_ROWS).optional().describe(`Rows to return (default ${QUERY_DEFAULT_ROWS})`),
      },
      returnsRows: true,
      permission: 'read',
      run: async (args) => {
        if (options.readOnly && MASKING_COMMAND.test(String(args.sql))) {
          throw forbidden('mcp_read_only', 'This MCP server is read-only: masking commands are refused', {});
        }
        const result = await ctx.queries.run({ sql: args.sql, params: args.params, limit: args.limit ?? QUERY_DEFAULT_ROWS, caller, purpose: 'query' });
        const note = result.truncated ? `more rows exist: only the first ${result.limit} are shown; aggregate or filter in SQL` : undefined;
        return { columns: result.columns, column_types: result.column_types, rows: result.rows, truncated: result.truncated, ...(note ? { note } : {}) };
      },
    },
    {
      name: 'list_models',
      description:
        'List the SQL models of the project (transform/<schema>/<name>.sql): full name, materialization, direct upstream relations, file path. ' +
        'Use get_model for the SQL and columns, model_lineage for column-level lineage.',
      input: {},
      permission: 'read',
      run: async () => {
        const list = (await models.list()).map((m) => ({
          name: m.full_name,
          materialized: m.materialized,
          depends_on: m.depends_on.filter((d) => !hiddenRelation(d, caller)),
          path: m.path,
        }));
        const { items, note } = capped(list);
        return { models: items, ...(note ? { note } : {}) };
      },
    },
    {
      name: 'get_model',
      description:
        'One model in full: its SQL, file path, materialization, upstream relations, inline assertions, config, and (when it is built) its columns with types, masked ones marked.',
      input: { name: z.string().min(1).describe('Model as schema.name or bare name') },
      permission: 'read',
      run: async (args) => {
        const m = await modelOrThrow(String(args.name));
        const columns = (await ctx.db.catalog.columns(m.schema, m.name)).map((c) => ({ name: c.name, type: c.type }));
        const masked = new Set((await maskedOf(m.schema, m.name)).map((c) => c.toLowerCase()));
        return {
          name: m.full_name,
          path: m.path,
          materialized: m.materialized,
          depends_on: m.depends_on.filter((d) => !hiddenRelation(d, caller)),
          assertions: m.assertions,
          config: m.config,
          built: columns.length > 0,
          columns: columns.map((c) => ({ ...c, ...(masked.has(c.name.toLowerCase()) ? { masked: true } : {}) })),
          sql: m.sql,
        };
      },
    },
    {
      name: 'run_history',
      description:
        'Recent stream and script runs, newest first: run id, kind (stream or script), name, trigger, status, start, duration, error. Use it to see whether the pipelines ran and what failed.',
      input: {
        limit: z.number().int().min(1).max(LIST_MAX_ITEMS).optional().describe('Runs to return (default 20)'),
        name: z.string().min(1).optional().describe('Only runs of this stream or script'),
      },
      permission: 'read',
      run: async (args) => {
        // The streams plugin records runs in _service.run_history and offers no read service:
        // read it through the database port, and answer an empty list when it never ran.
        if (!(await ctx.db.catalog.exists('_service', 'run_history'))) return { runs: [], note: 'no run history: the streams plugin has recorded no run' };
        const params: unknown[] = [args.limit ?? 20];
        const where = args.name ? `WHERE name = $${params.push(args.name)}` : '';
        const runs = await ctx.db.all(
          `SELECT run_id, kind, name, trigger, status, strftime(started_at, '%Y-%m-%dT%H:%M:%SZ') AS started_at, duration_ms, error
             FROM _service.run_history ${where} ORDER BY started_at DESC, run_id DESC LIMIT $1`,
          params,
        );
        return { runs };
      },
    },
    {
      name: 'check',
      description:
        'Run `dp check`: every model is validated (parses, dependencies resolve, SQL binds), then inline assertions and data contracts run. ' +
        'Returns status pass/fail and only what failed (models with errors, failed assertions, failed contracts), plus totals.',
      input: {},
      permission: 'execute',
      run: async () => {
        const report = await models.check();
        return {
          status: report.status,
          validation: {
            passed: report.validation.passed,
            failed: report.validation.failed,
            errors: report.validation.errors.map((e) => e.message),
            failing_models: report.validation.models.filter((m) => !m.valid).map((m) => ({ model: m.model, errors: m.errors })),
          },
          assertions: {
            evaluated: report.assertions.evaluated,
            total: report.assertions.total,
            failed: report.assertions.failed,
            failures: report.assertions.results.filter((r) => !r.passed).map((r) => ({ model: r.model, expression: r.expression })),
          },
          contracts: report.contracts.evaluated
            ? {
                evaluated: true,
                total: report.contracts.total,
                failed: report.contracts.failed,
                failures: (report.contracts.results ?? []).filter((r) => !r.passed).map((r) => ({ contract: r.contract_name, model: r.model, severity: r.severity, error: r.error })),
              }
            : { evaluated: false },
        };
      },
    },
    {
      name: 'run_transform',
      description:
        'Build models (`dp transform`): all of them, or the named ones; unchanged models are skipped unless force is true. ' +
        'Returns the run status and, per model, built/skipped/error with the error message. This changes the warehouse.',
      input: {
        models: z.array(z.string().min(1)).optional().describe('Models to build (schema.name or bare name); all when absent'),
        force: z.boolean().optional().describe('Rebuild even unchanged models'),
      },
      permission: 'execute',
      run: async (args) => {
        const summary = await models.transform({ targets: args.models?.length ? args.models : null, force: Boolean(args.force), trigger: 'mcp' });
        return {
          run_id: summary.run_id,
          status: summary.status,
          duration_ms: summary.duration_ms,
          results: summary.results.map((r) => ({ model: r.model, status: r.status, ...(r.error ? { error: r.error } : {}) })),
        };
      },
    },
  ];

  if (tables) {
    tools.push(
      {
        name: 'list_tables',
        description:
          'List the tables and views of the warehouse as {schema, name, type}, optionally of one schema. Models live in their schema (staging, marts, ...), seeds in `seeds`. ' +
          'Use describe_table for columns.',
        input: { schema: z.string().min(1).optional().describe('Only this schema') },
        permission: 'read',
        run: async (args) => {
          const { items, note } = capped(await tables.list(args.schema));
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
          const masked = new Set((await maskedOf(schema, table)).map((c) => c.toLowerCase()));
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
    );
  }

  if (semantic) {
    tools.push(
      {
        name: 'list_metrics',
        description:
          'List the metrics of the semantic layer (metrics/*.yml): name, description, the model it reads, the aggregate measure, the dimensions it may be grouped by and its time dimension. Prefer query_metric over hand-written SQL for these numbers.',
        input: {},
        permission: 'read',
        run: async () => {
          const { metrics, errors } = await semantic.metrics();
          const list = metrics.map((m) => ({ name: m.name, description: m.description, model: m.model, measure: m.measure, dimensions: m.dimensions, time_dimension: m.time_dimension }));
          return { metrics: list, ...(errors.length ? { invalid: errors.map((e) => ({ file: e.file, metric: e.metric, reason: e.reason })) } : {}) };
        },
      },
      {
        name: 'query_metric',
        description:
          'Compute a metric (see list_metrics), optionally grouped by some of its dimensions and bucketed by a time grain, within [start, end) on its time dimension. Runs through the guarded runner with your role (masking applies). Returns the SQL it ran and the rows.',
        input: {
          metric: z.string().min(1).describe('Metric name'),
          dimensions: z.array(z.string().min(1)).optional().describe('Dimensions to group by (declared by the metric)'),
          grain: z.enum(METRIC_GRAINS).optional().describe('Time bucket on the time dimension'),
          start: z.string().optional().describe('Inclusive lower bound (ISO date or timestamp)'),
          end: z.string().optional().describe('Exclusive upper bound (ISO date or timestamp)'),
          limit: z.number().int().min(1).max(QUERY_MAX_ROWS).optional().describe(`Rows to return (default ${QUERY_DEFAULT_ROWS})`),
        },
        returnsRows: true,
      permission: 'read',
        run: async (args) => {
          const r = await semantic.query(
            { metric: args.metric, dimensions: args.dimensions, grain: args.grain ?? null, start: args.start ?? null, end: args.end ?? null, limit: args.limit ?? QUERY_DEFAULT_ROWS },
            caller,
          );
          return { metric: r.metric, sql: r.sql, columns: r.columns, rows: r.rows, truncated: r.truncated, ...(r.truncated ? { note: 'more rows exist; narrow the dimensions or the time range' } : {}) };
        },
      },
    );
  }

  if (lineage) {
    tools.push(
      {
        name: 'model_lineage',
        description:
          "Column-level lineage of one model: for each output column, the upstream columns (source_table, source_column) its value is computed from; an empty list means computed from constants. Also the model's upstream relations.",
        input: { name: z.string().min(1).describe('Model as schema.name or bare name') },
        permission: 'read',
        run: async (args) => {
          const l = await lineage.lineage(String(args.name));
          const columns = Object.fromEntries(Object.entries(l.columns).map(([c, sources]) => [c, sources.filter((s) => !hiddenRelation(s.source_table, caller))]));
          return { model: l.model, depends_on: l.depends_on.filter((d) => !hiddenRelation(d, caller)), columns };
        },
      },
      {
        name: 'impact',
        description:
          'What a change to a model (or a seed or source that models read), or to one of its columns, reaches downstream: every downstream model (nearest first) and the downstream columns derived from it. Use before changing or dropping a column.',
        input: {
          name: z.string().min(1).describe('Model, seed or source relation as schema.name or bare name'),
          column: z.string().min(1).optional().describe('Only the impact of this column'),
        },
        permission: 'read',
        run: async (args) => {
          const r = await lineage.impact(String(args.name), args.column);
          const { items, note } = capped(r.affected_columns);
          return { model: r.model, ...(r.column ? { column: r.column } : {}), downstream_models: r.downstream_models, affected_columns: items, ...(note ? { note } : {}) };
        },
      },
    );
  }

  return tools.filter((t) => hasPermission(caller, t.permission) && !(options.readOnly && t.permission !== 'read'));
}
