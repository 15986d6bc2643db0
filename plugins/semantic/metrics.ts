/**
 * Metric definitions (SPEC "Metric (semantic layer)"): YAML files under `metrics/`, each with a
 * top-level `metrics:` list, merged. A broken file or entry becomes a load error naming the file,
 * the metric and the reason; it never blocks the valid metrics beside it.
 *
 * `measure` and `filters` are SQL written by an editor and run for every caller, so each is
 * checked on DuckDB's own parse (never by matching text): a measure must parse, alone, as one
 * aggregate expression of a SELECT over one placeholder table, a filter as the whole WHERE clause
 * of such a SELECT; anything else the text could carry (a second statement, a FROM, a subquery, a
 * GROUP BY, LIMIT, a window, an alias) is refused. The parsed nodes, not the text, go into the
 * compiled query (compile.ts), so nothing a definition holds can change that query's shape.
 */
import fs from 'node:fs';
import { Ajv } from 'ajv';
import {
  ajvFieldError,
  compileOnFirstUse,
  errorMessage,
  isDpError,
  readYaml,
  SAFE_NAME,
  walkProjectFiles,
  walkSqlTree,
  type DatabasePort,
  type MetricDefinition,
  type MetricLoadError,
  type ProjectInfo,
  type SqlNode,
  type YamlReadResult,
} from '../../sdk/index.js';

export const METRICS_DIR = 'metrics';
/** The table name a definition's SQL is parsed against; never a real relation. */
export const PLACEHOLDER_TABLE = '__dp_metric_source';

const metricSchema = {
  type: 'object',
  required: ['name', 'model', 'measure'],
  additionalProperties: false,
  properties: {
    name: { type: 'string', minLength: 1 },
    model: { type: 'string', pattern: '^[^.\\s]+\\.[^.\\s]+$' },
    measure: { type: 'string', minLength: 1 },
    description: { type: 'string' },
    dimensions: { type: 'array', items: { type: 'string', minLength: 1 }, uniqueItems: true },
    time_dimension: { type: 'string', minLength: 1 },
    filters: { type: 'array', items: { type: 'string', minLength: 1 } },
  },
};

const validateMetric = compileOnFirstUse(() => new Ajv({ allErrors: false, strict: false }).compile(metricSchema));

function schemaReason(): string {
  const e = validateMetric.errors?.[0];
  if (!e) return 'invalid metric';
  const { field, message } = ajvFieldError(e);
  if (e.keyword === 'pattern' && field === 'model') return "'model' must be schema.table";
  if (e.keyword === 'uniqueItems') return `'${field}' lists a column twice`;
  return field ? message : message.replace("'(top level)'", "'metric'");
}

/** Lower-case names of DuckDB's aggregate functions (and aggregate macros), read once per database. */
const aggregateNames = new WeakMap<DatabasePort, Promise<Set<string>>>();
function aggregatesOf(db: DatabasePort): Promise<Set<string>> {
  let hit = aggregateNames.get(db);
  if (!hit) {
    hit = db
      .all<{ name: string }>(`SELECT DISTINCT lower(function_name) AS name FROM duckdb_functions() WHERE function_type = 'aggregate'`)
      .then((rows) => new Set([...rows.map((r) => r.name), 'count_star']));
    hit.catch(() => aggregateNames.delete(db));
    aggregateNames.set(db, hit);
  }
  return hit;
}

/** Why a parsed `SELECT … FROM placeholder [WHERE …]` is more than one plain expression, or null. */
function shapeProblem(node: SqlNode, where: boolean): string | null {
  if (node.type !== 'SELECT_NODE') return 'is not a single expression (it parses as a set operation)';
  if ((node.cte_map?.map ?? []).length) return 'holds a WITH clause';
  if ((node.modifiers ?? []).length) return 'holds ORDER BY, LIMIT, OFFSET or DISTINCT';
  if ((node.select_list ?? []).length !== 1) return 'holds more than one expression';
  const from = node.from_table;
  if (!from || from.type !== 'BASE_TABLE' || from.table_name !== PLACEHOLDER_TABLE || from.schema_name || from.catalog_name || from.alias || from.sample || from.at_clause) {
    return 'holds a FROM or JOIN clause';
  }
  if ((node.group_expressions ?? []).length || (node.group_sets ?? []).length) return 'holds a GROUP BY clause';
  if (node.having) return 'holds a HAVING clause';
  if (node.qualify) return 'holds a QUALIFY clause';
  if (node.sample) return 'holds a USING SAMPLE clause';
  if (node.aggregate_handling && node.aggregate_handling !== 'STANDARD_HANDLING') return 'holds a GROUP BY clause';
  if (where !== Boolean(node.where_clause)) return where ? 'is empty' : 'holds a WHERE clause';
  if (!where && node.select_list[0].alias) return 'gives itself an alias (the metric name is its alias)';
  return null;
}

/** Function names a node calls, lower-case. */
function functionsIn(node: unknown): string[] {
  const names: string[] = [];
  walkSqlTree(node, (n) => {
    if (n.class === 'FUNCTION' && typeof n.function_name === 'string') names.push(n.function_name.toLowerCase());
  });
  return names;
}

function hasClass(node: unknown, ...classes: string[]): string | null {
  let found: string | null = null;
  walkSqlTree(node, (n) => {
    if (!found && typeof n.class === 'string' && classes.includes(n.class)) found = n.class;
  });
  return found;
}

export interface CheckedExpression {
  /** The exact text DuckDB wrote for the parse (lossless: readTreeJson gives the node to splice). */
  json: string;
}

/**
 * Checks one measure (`kind: 'measure'`) or filter on DuckDB's parse. Returns the parse's JSON,
 * or the reason it is refused.
 */
export async function checkExpression(db: DatabasePort, kind: 'measure' | 'filter', text: string): Promise<{ ok: true; json: string } | { ok: false; reason: string }> {
  const sql = kind === 'measure' ? `SELECT ${text} FROM ${PLACEHOLDER_TABLE}` : `SELECT 1 FROM ${PLACEHOLDER_TABLE} WHERE ${text}`;
  const parsed = await db.parse(sql);
  if (!parsed.ok) return { ok: false, reason: `does not parse as a SQL expression (${parsed.error.replace(/\s+/g, ' ').trim()})` };
  if (parsed.tree.statements.length !== 1) return { ok: false, reason: 'is more than one statement' };
  const node = parsed.tree.statements[0]!.node;
  const shape = shapeProblem(node, kind === 'filter');
  if (shape) return { ok: false, reason: shape };
  const expression = kind === 'measure' ? node.select_list[0] : node.where_clause;
  const nested = hasClass(expression, 'SUBQUERY', 'WINDOW', 'STAR', 'PARAMETER');
  if (nested === 'SUBQUERY') return { ok: false, reason: 'holds a subquery' };
  if (nested === 'PARAMETER') return { ok: false, reason: 'holds a $parameter (only start and end are bound, by the layer)' };
  if (nested === 'WINDOW') return { ok: false, reason: 'holds a window function' };
  if (nested === 'STAR') return { ok: false, reason: 'holds * or COLUMNS(...)' };
  const aggregates = await aggregatesOf(db);
  const calls = functionsIn(expression);
  if (kind === 'measure' && !calls.some((f) => aggregates.has(f))) return { ok: false, reason: 'is not an aggregate expression (no aggregate function such as sum or count)' };
  if (kind === 'filter' && calls.some((f) => aggregates.has(f))) return { ok: false, reason: 'uses an aggregate function (filters are row predicates)' };
  return { ok: true, json: parsed.json };
}

/** A valid metric plus the parses of its measure and filters, for the compiler. */
export interface LoadedMetric extends MetricDefinition {
  measureJson: string;
  filterJson: string[];
}

function metricFiles(project: ProjectInfo) {
  return walkProjectFiles(project, METRICS_DIR, { extensions: ['.yml', '.yaml'] });
}

/** Reads every metrics file: the valid metrics, and separately what is wrong with the others. */
export async function loadMetrics(project: ProjectInfo, db: DatabasePort): Promise<{ metrics: LoadedMetric[]; errors: MetricLoadError[] }> {
  const metrics: LoadedMetric[] = [];
  const errors: MetricLoadError[] = [];
  const byName = new Map<string, string>();
  for (const file of metricFiles(project)) {
    const rel = file.path;
    let data: { metrics?: unknown } | null;
    let read: YamlReadResult;
    try {
      read = readYaml(fs.readFileSync(file.abs, 'utf8'), rel);
      data = read.value as { metrics?: unknown } | null;
    } catch (e) {
      const line = isDpError(e) ? (e.details.line as number | null) : null;
      errors.push({ file: rel, metric: null, ...(line ? { line } : {}), reason: `YAML syntax error${line ? ` at line ${line}` : ''}: ${errorMessage(e).replace(/^[^:]*: /, '')}` });
      continue;
    }
    if (!data || typeof data !== 'object' || !Array.isArray(data.metrics)) {
      errors.push({ file: rel, metric: null, reason: "the file needs a top-level 'metrics:' list" });
      continue;
    }
    for (const [index, entry] of data.metrics.entries()) {
      const named = entry && typeof entry === 'object' && typeof (entry as { name?: unknown }).name === 'string' ? String((entry as { name: string }).name) : null;
      const line = read.lineOf(['metrics', index]);
      const refuse = (reason: string) => errors.push({ file: rel, metric: named, index, ...(line ? { line } : {}), reason });
      if (!validateMetric(entry)) {
        refuse(schemaReason());
        continue;
      }
      const m = entry as { name: string; model: string; measure: string; description?: string; dimensions?: string[]; time_dimension?: string; filters?: string[] };
      if (!SAFE_NAME.test(m.name)) {
        refuse(`'name' must be letters, digits and underscores, starting with a letter or underscore`);
        continue;
      }
      const first = byName.get(m.name.toLowerCase());
      if (first) {
        refuse(`metric '${m.name}' is already defined in ${first}`);
        continue;
      }
      const measure = await checkExpression(db, 'measure', m.measure);
      if (!measure.ok) {
        refuse(`'measure' ${measure.reason}`);
        continue;
      }
      const filterJson: string[] = [];
      let bad: string | null = null;
      for (const [i, f] of (m.filters ?? []).entries()) {
        const checked = await checkExpression(db, 'filter', f);
        if (!checked.ok) {
          bad = `'filters[${i}]' ${checked.reason}`;
          break;
        }
        filterJson.push(checked.json);
      }
      if (bad) {
        refuse(bad);
        continue;
      }
      byName.set(m.name.toLowerCase(), rel);
      metrics.push({
        name: m.name,
        model: m.model,
        measure: m.measure,
        description: m.description ?? '',
        dimensions: m.dimensions ?? [],
        time_dimension: m.time_dimension ?? null,
        filters: m.filters ?? [],
        file: rel,
        measureJson: measure.json,
        filterJson,
      });
    }
  }
  return { metrics, errors };
}

/** A metric as callers see it (without the parse trees). */
export function publicMetric(m: LoadedMetric): MetricDefinition {
  const { measureJson: _m, filterJson: _f, ...rest } = m;
  return rest;
}

