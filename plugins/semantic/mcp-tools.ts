/** The semantic plugin's MCP tools (`agents.mcp`): list the metrics and compute one through the guarded runner. */
import { AGENT_QUERY_DEFAULT_ROWS, AGENT_QUERY_MAX_ROWS, METRIC_GRAINS, SEMANTIC_SERVICE, type AgentTool, type AgentToolKit, type PluginContext } from '../../sdk/index.js';

export function semanticTools(ctx: PluginContext, kit: AgentToolKit): AgentTool[] {
  const { z, caller } = kit;
  const semantic = ctx.services.get(SEMANTIC_SERVICE);
  return [
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
        limit: z.number().int().min(1).max(AGENT_QUERY_MAX_ROWS).optional().describe(`Rows to return (default ${AGENT_QUERY_DEFAULT_ROWS})`),
      },
      returnsRows: true,
      permission: 'read',
      run: async (args) => {
        const r = await semantic.query(
          { metric: args.metric, dimensions: args.dimensions, grain: args.grain ?? null, start: args.start ?? null, end: args.end ?? null, limit: args.limit ?? AGENT_QUERY_DEFAULT_ROWS },
          caller,
        );
        return { metric: r.metric, sql: r.sql, columns: r.columns, rows: r.rows, truncated: r.truncated, ...(r.truncated ? { note: 'more rows exist; narrow the dimensions or the time range' } : {}) };
      },
    },
  ];
}
