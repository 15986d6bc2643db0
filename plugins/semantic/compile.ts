/**
 * Compiling a metric query (SPEC "Metric (semantic layer)"): one SELECT with the time column
 * bucketed by `date_trunc` and named by the grain, the dimensions, the measure aliased as the
 * metric name, FROM the model, WHERE the filters in parentheses plus the start/end bounds, GROUP
 * BY and ORDER BY positional.
 *
 * Every request value is refused or reduced to trusted text before any SQL exists: the grain
 * must be one of METRIC_GRAINS, each dimension one the metric declares (spelled as declared), the
 * bounds ISO dates or timestamps, which are bound as `$start` / `$end` parameters and never
 * written into the text. The skeleton (bucket, quoted columns, quoted model, bounds) is parsed by
 * DuckDB, the measure and filter nodes from the definition's own parse (metrics.ts) are put into
 * that tree, and DuckDB writes the SQL back: a definition's text is never spliced, so a comment
 * or an unbalanced parenthesis in it cannot reach past its own expression.
 */
import { badRequest, METRIC_GRAINS, notFound, qualified, quoteIdent, readTreeJson, type CompiledMetricQuery, type DatabasePort, type MetricLoadError, type MetricQueryRequest, type SqlNode } from '../../sdk/index.js';
import type { LoadedMetric } from './metrics.js';

/** ISO date, or date and time (`2024-01-31`, `2024-01-31T08:00`, `2024-01-31 08:00:00.5`). */
const TIME_BOUND = /^\d{4}-\d{2}-\d{2}(?:[ T]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?)?$/;

function checkBound(name: 'start' | 'end', value: string | null | undefined): string | null {
  if (value === undefined || value === null || value === '') return null;
  if (typeof value !== 'string' || !TIME_BOUND.test(value) || Number.isNaN(Date.parse(value.replace(' ', 'T')))) {
    throw badRequest('invalid_time_bound', `'${name}' must be an ISO date or timestamp (2024-01-31 or 2024-01-31T08:00:00), got '${String(value)}'`, { field: name, value });
  }
  return value;
}

/** The metric a request names, or the 404 / 400 (it failed to load) that explains why there is none. */
export function findMetric(name: string, loaded: { metrics: LoadedMetric[]; errors: MetricLoadError[] }): LoadedMetric {
  const metric = loaded.metrics.find((m) => m.name === name) ?? loaded.metrics.find((m) => m.name.toLowerCase() === name.toLowerCase());
  if (metric) return metric;
  const broken = loaded.errors.find((e) => e.metric !== null && e.metric.toLowerCase() === name.toLowerCase());
  if (broken) throw badRequest('metric_invalid', `Metric '${name}' in ${broken.file} did not load: ${broken.reason}`, { metric: name, file: broken.file, reason: broken.reason });
  throw notFound('metric_not_found', `No metric named '${name}'`, { metric: name, available: loaded.metrics.map((m) => m.name) });
}

/** The request checked against the metric: grain, declared dimensions (as declared), bounds. */
export function checkRequest(metric: LoadedMetric, request: MetricQueryRequest) {
  const grain = request.grain ?? null;
  if (grain !== null && !(METRIC_GRAINS as readonly string[]).includes(grain)) {
    throw badRequest('invalid_grain', `Grain '${String(grain)}' is not allowed; use one of ${METRIC_GRAINS.join(', ')}`, { grain, allowed: [...METRIC_GRAINS] });
  }
  const dimensions: string[] = [];
  for (const asked of request.dimensions ?? []) {
    const declared = metric.dimensions.find((d) => d === asked) ?? metric.dimensions.find((d) => d.toLowerCase() === String(asked).toLowerCase());
    if (declared === undefined) {
      throw badRequest('unknown_dimension', `Metric '${metric.name}' has no dimension '${String(asked)}'; declared: ${metric.dimensions.join(', ') || 'none'}`, {
        metric: metric.name,
        dimension: asked,
        declared: metric.dimensions,
      });
    }
    if (dimensions.includes(declared)) throw badRequest('duplicate_dimension', `Dimension '${declared}' is asked for twice`, { metric: metric.name, dimension: declared });
    dimensions.push(declared);
  }
  const start = checkBound('start', request.start);
  const end = checkBound('end', request.end);
  if (metric.time_dimension === null) {
    const asked = grain !== null ? 'grain' : start !== null || end !== null ? 'start/end bounds' : null;
    if (asked) throw badRequest('no_time_dimension', `Metric '${metric.name}' has no time_dimension, so it takes no ${asked}`, { metric: metric.name });
  }
  return { grain, dimensions, start, end };
}

/** Compiles a checked request into DuckDB SQL (see the file header). */
export async function compileMetric(db: DatabasePort, metric: LoadedMetric, request: MetricQueryRequest): Promise<CompiledMetricQuery> {
  const { grain, dimensions, start, end } = checkRequest(metric, request);
  const time = metric.time_dimension === null ? null : quoteIdent(metric.time_dimension);
  const columns: string[] = [];
  if (grain !== null && time !== null) columns.push(`date_trunc('${grain}', ${time}) AS ${quoteIdent(grain)}`);
  for (const d of dimensions) columns.push(quoteIdent(d));
  const grouped = columns.length;
  columns.push(`NULL AS ${quoteIdent(metric.name)}`);
  const bounds: string[] = [];
  const params: Record<string, string> = {};
  if (start !== null) {
    bounds.push(`${time} >= CAST($start AS TIMESTAMP)`);
    params.start = start;
  }
  if (end !== null) {
    bounds.push(`${time} < CAST($end AS TIMESTAMP)`);
    params.end = end;
  }
  const dot = metric.model.indexOf('.');
  const positions = Array.from({ length: grouped }, (_, i) => String(i + 1)).join(', ');
  const skeleton = [
    `SELECT ${columns.join(', ')}`,
    `FROM ${qualified(metric.model.slice(0, dot), metric.model.slice(dot + 1))}`,
    bounds.length ? `WHERE ${bounds.join(' AND ')}` : '',
    grouped ? `GROUP BY ${positions} ORDER BY ${positions}` : '',
  ]
    .filter(Boolean)
    .join(' ');
  const parsed = await db.parse(skeleton);
  if (!parsed.ok) throw new Error(`metric skeleton did not parse: ${parsed.error}`);
  const tree = readTreeJson(parsed.json);
  const node: SqlNode = tree.statements[0].node;

  const measure: SqlNode = readTreeJson(metric.measureJson).statements[0].node.select_list[0];
  measure.alias = metric.name;
  node.select_list[grouped] = measure;

  const predicates: SqlNode[] = metric.filterJson.map((json) => readTreeJson(json).statements[0].node.where_clause);
  if (node.where_clause) predicates.push(...(node.where_clause.class === 'CONJUNCTION' ? node.where_clause.children : [node.where_clause]));
  if (predicates.length === 1) node.where_clause = predicates[0];
  else if (predicates.length > 1) node.where_clause = { class: 'CONJUNCTION', type: 'CONJUNCTION_AND', alias: '', children: predicates };

  return { metric: metric.name, sql: await db.deparse(tree), params };
}
