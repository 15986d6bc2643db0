/** `dp metrics`, `dp metrics sql <metric>`, `dp metrics query <metric> [--dimensions] [--grain] [--start] [--end]`. */
import { badRequest, LOCAL_ADMIN, type MetricGrain, type MetricQueryRequest, type PluginContext, type SemanticService } from '../../sdk/index.js';

/** `--dimensions a,b --dimensions c` → `[a, b, c]`. */
function listOption(value: unknown): string[] {
  if (value === undefined) return [];
  return (Array.isArray(value) ? value : [value])
    .flatMap((v) => String(v).split(','))
    .map((v) => v.trim())
    .filter(Boolean);
}

function requestOf(args: Record<string, any>): MetricQueryRequest {
  if (!args.metric) throw badRequest('invalid_metric_action', `'dp metrics ${args.action}' needs a metric name: dp metrics ${args.action} <metric>`);
  return {
    metric: String(args.metric),
    dimensions: listOption(args.dimensions),
    grain: args.grain === undefined ? null : (String(args.grain) as MetricGrain),
    start: args.start === undefined ? null : String(args.start),
    end: args.end === undefined ? null : String(args.end),
    limit: args.limit === undefined ? undefined : Number(args.limit),
  };
}

export function registerCommands(ctx: PluginContext, service: SemanticService): void {
  ctx.command('metrics', async (args, io) => {
    if (args.action === 'sql') {
      const compiled = await service.compile(requestOf(args));
      if (io.wantsJson) io.json(compiled);
      else {
        io.out(compiled.sql);
        for (const [name, value] of Object.entries(compiled.params)) io.err(`-- $${name} = '${value}'`);
      }
      return 0;
    }
    if (args.action === 'query') {
      const result = await service.query(requestOf(args), io.caller ?? LOCAL_ADMIN);
      if (io.wantsJson) {
        io.json(result);
        return 0;
      }
      io.table(
        result.rows.map((row) => Object.fromEntries(result.columns.map((c, i) => [c, row[i]]))),
        result.columns,
      );
      if (result.truncated) io.err(`(more rows: pass --limit to see more than ${result.rows.length})`);
      return 0;
    }
    const { metrics, errors } = await service.metrics();
    if (io.wantsJson) io.json({ metrics, errors });
    else {
      io.table(
        metrics.map((m) => ({
          name: m.name,
          model: m.model,
          measure: m.measure,
          dimensions: m.dimensions.join(', '),
          time_dimension: m.time_dimension ?? '',
          description: m.description,
        })),
        ['name', 'model', 'measure', 'dimensions', 'time_dimension', 'description'],
      );
      for (const e of errors) io.err(`error: ${e.file}${e.metric ? ` metric '${e.metric}'` : e.index !== undefined ? ` entry ${e.index + 1}` : ''}: ${e.reason}`);
    }
    // Definitions that did not load fail the command, as `dp check` fails on a broken model.
    return errors.length ? 1 : 0;
  });
}
