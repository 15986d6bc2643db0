/**
 * Assertion expressions (docs/decisions.md "Contract"): the same forms serve inline `@assert` directives and
 * contracts. Arguments are parsed by DuckDB's own parser; each form is checked with one or two
 * aggregate queries and, on failure, explained with the diagnostics docs/decisions.md "Contract" lists.
 */
import { randomUUID } from 'node:crypto';
import {
  errorMessage,
  qualified,
  quoteIdent,
  quoteLiteral,
  type AssertionOutcome,
  type Caller,
  type PluginContext,
  type Row,
  type SqlNode,
  walkSqlTree,
} from '../../sdk/index.js';
import type { StoredAssertionResult } from './api-types.js';
import { checkReader, type CheckReader } from './reader.js';
import { isoUtc, isServiceSchema, MASKED_VALUE, maskedColumnsFor, maskedNamesFor, parseJson, redactQuoted, splitRelation, utcNow, type Relation } from './relations.js';

export type AssertionForm = 'row_count' | 'unique' | 'no_nulls' | 'accepted_values' | 'expression';

type Comparison = '=' | '!=' | '<' | '<=' | '>' | '>=';

export interface ParsedAssertion {
  expression: string;
  form: AssertionForm;
  /** Column names as written (unique, no_nulls, accepted_values). */
  columns: string[];
  operator?: Comparison;
  threshold?: number;
  /** accepted_values: the literal values of the list (NULL kept as null). */
  values?: Array<string | number | boolean | null>;
  /** The SQL expression checked by the `expression` form (wrapping quotes removed). */
  sql?: string;
  /** Why the expression cannot be evaluated (reported as a failed assertion). */
  error?: string;
}

export interface EvaluateOptions {
  /** Who will read the diagnostics: values of columns masked for this caller are replaced. */
  audience: Caller;
  /** Debug mode: larger samples and the SQL that lists the offending rows. */
  full?: boolean;
}

const COMPARISONS: Record<string, Comparison> = {
  COMPARE_EQUAL: '=',
  COMPARE_NOTEQUAL: '!=',
  COMPARE_LESSTHAN: '<',
  COMPARE_GREATERTHAN: '>',
  COMPARE_LESSTHANOREQUALTO: '<=',
  COMPARE_GREATERTHANOREQUALTO: '>=',
};

const FUNCTION_FORM = /^(unique|no_nulls|accepted_values)\s*\(([\s\S]*)\)$/i;
const ARGS_FUNCTION = 'dp_assertion_args';
const TOP_VALUES = 10;

/**
 * A directive may quote the whole expression (`@assert "sum(revenue) > 0"`, as YAML would).
 * A double-quoted bare identifier stays: it is a boolean column.
 */
export function unquoteExpression(text: string): string {
  const t = text.trim();
  if (t.length >= 2 && ((t.startsWith('"') && t.endsWith('"')) || (t.startsWith("'") && t.endsWith("'")))) {
    const inner = t.slice(1, -1);
    if (!inner.includes(t[0]) && !/^[A-Za-z_][A-Za-z0-9_]*$/.test(inner)) return inner.trim();
  }
  return t;
}

/** The SQL text of a literal node of DuckDB's tree, or undefined when the node is not a literal. */
function literalValue(node: SqlNode): { ok: true; value: string | number | boolean | null } | { ok: false } {
  if (node.class === 'CONSTANT') {
    const v = node.value ?? {};
    if (v.is_null) return { ok: true, value: null };
    const id = String(v.type?.id ?? '');
    if (id === 'DECIMAL') return { ok: true, value: Number(v.value) / 10 ** Number(v.type?.type_info?.scale ?? 0) };
    if (/INT|DOUBLE|FLOAT|REAL/.test(id)) return { ok: true, value: Number(v.value) };
    if (id === 'BOOLEAN') return { ok: true, value: Boolean(v.value) };
    return { ok: true, value: String(v.value) };
  }
  // `-5` arrives as the unary minus operator applied to a constant.
  if (node.class === 'FUNCTION' && node.function_name === '-' && node.children?.length === 1) {
    const inner = literalValue(node.children[0]);
    if (inner.ok && typeof inner.value === 'number') return { ok: true, value: -inner.value };
  }
  if (node.class === 'CAST' && node.child) return literalValue(node.child);
  return { ok: false };
}

function columnOf(node: SqlNode): string | null {
  if (node?.class !== 'COLUMN_REF' || !Array.isArray(node.column_names)) return null;
  // A qualified reference (t.col) names the column by its last part: the check runs on one relation.
  return String(node.column_names[node.column_names.length - 1]);
}

/** Parses one assertion expression into its form (DuckDB's parser reads the arguments). */
export async function parseAssertion(ctx: PluginContext, raw: string): Promise<ParsedAssertion> {
  const expression = raw.trim();
  const text = unquoteExpression(expression);
  const fn = FUNCTION_FORM.exec(text);
  if (fn) {
    const form = fn[1].toLowerCase() as 'unique' | 'no_nulls' | 'accepted_values';
    // `unique` is a keyword to DuckDB, so the arguments are parsed under a neutral function name.
    const parsed = await ctx.db.parse(`SELECT ${ARGS_FUNCTION}(${fn[2]})`);
    const selectList: SqlNode[] = parsed.ok && parsed.tree.statements.length === 1 ? (parsed.tree.statements[0].node.select_list ?? []) : [];
    const node = selectList.length === 1 ? selectList[0] : undefined;
    if (node?.class === 'FUNCTION' && node.function_name === ARGS_FUNCTION) {
      const args: SqlNode[] = node.children ?? [];
      const base = { expression, form, columns: [] as string[] };
      if (form === 'unique') {
        const columns = args.map(columnOf);
        if (args.length === 0 || columns.some((c) => c === null)) return { ...base, error: 'unique() takes one or more column names, e.g. unique(customer_id)' };
        return { ...base, columns: columns as string[] };
      }
      if (form === 'no_nulls') {
        const column = args.length === 1 ? columnOf(args[0]) : null;
        if (!column) return { ...base, error: 'no_nulls() takes one column name, e.g. no_nulls(email)' };
        return { ...base, columns: [column] };
      }
      const usage = "accepted_values() takes a column and a list of literal values, e.g. accepted_values(status, ['open', 'closed'])";
      const column = args.length === 2 ? columnOf(args[0]) : null;
      const list = args[1];
      if (!column || list?.class !== 'FUNCTION' || list.function_name !== 'list_value') return { ...base, error: usage };
      const values: Array<string | number | boolean | null> = [];
      for (const child of list.children ?? []) {
        const lit = literalValue(child);
        // In SQL "x" names a column: the usual slip of writing a JSON list.
        const quoted = columnOf(child);
        if (!lit.ok && quoted !== null) return { ...base, error: `accepted_values() takes literal values: write '${quoted}' in single quotes ("${quoted}" would name a column)` };
        if (!lit.ok) return { ...base, error: usage };
        values.push(lit.value);
      }
      return { ...base, columns: [column], values };
    }
    // Not a well-formed call of the form (e.g. `unique(a) OR unique(b)`): read it as SQL below.
  }

  const asSql = await ctx.db.parse(`SELECT ${text}`);
  if (asSql.ok && asSql.tree.statements.length === 1) {
    const list = asSql.tree.statements[0].node.select_list ?? [];
    const cmp = list.length === 1 ? list[0] : null;
    if (cmp?.class === 'COMPARISON' && COMPARISONS[cmp.type] && columnOf(cmp.left)?.toLowerCase() === 'row_count' && cmp.left.column_names.length === 1) {
      const lit = literalValue(cmp.right);
      if (lit.ok && typeof lit.value === 'number') {
        return { expression, form: 'row_count', columns: [], operator: COMPARISONS[cmp.type], threshold: lit.value };
      }
    }
  }

  const check = await ctx.db.parse(`SELECT (${text}) AS dp_result FROM dp_relation`);
  if (!check.ok) return { expression, form: 'expression', columns: [], sql: text, error: `Not a valid SQL expression: ${check.error}` };
  if (check.tree.statements.length !== 1 || check.tree.statements[0].node.select_list?.length !== 1) {
    return { expression, form: 'expression', columns: [], sql: text, error: 'An assertion is one boolean SQL expression, not a statement' };
  }
  return { expression, form: 'expression', columns: [], sql: text };
}

function compare(actual: number, op: Comparison, threshold: number): boolean {
  switch (op) {
    case '=':
      return actual === threshold;
    case '!=':
      return actual !== threshold;
    case '<':
      return actual < threshold;
    case '<=':
      return actual <= threshold;
    case '>':
      return actual > threshold;
    case '>=':
      return actual >= threshold;
  }
}

function truthy(value: unknown): boolean {
  if (value === true) return true;
  if (typeof value === 'number') return value !== 0 && !Number.isNaN(value);
  if (typeof value === 'string') return /^(true|t|yes|y|1)$/i.test(value.trim());
  return false;
}

function sqlLiteral(value: string | number | boolean, asText: boolean): string {
  if (asText || typeof value === 'string') return quoteLiteral(String(value));
  if (typeof value === 'boolean') return value ? 'TRUE' : 'FALSE';
  return String(value);
}

function redactRows(rows: Row[], masked: Set<string>): Row[] {
  if (masked.size === 0) return rows;
  return rows.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, masked.has(k.toLowerCase()) && v !== null ? MASKED_VALUE : v])));
}

/**
 * What the audience may not see: the relation's masked columns (exact table, as table endpoints
 * match) and the names any policy masks for the audience (ad-hoc queries match by name alone).
 */
interface Hidden {
  columns: Set<string>;
  names: Set<string>;
}

const isHiddenColumn = (hidden: Hidden, column: string) => hidden.columns.has(column.toLowerCase()) || hidden.names.has(column.toLowerCase());

/**
 * True when the value of an `expression` assertion may carry a masked value: it names a masked
 * column, or reads columns it does not name (`*`, `COLUMNS(…)`, a subquery of another table)
 * while the audience is bound by any policy. Unparseable text counts as reading them.
 */
async function expressionReadsHidden(ctx: PluginContext, sql: string, hidden: Hidden): Promise<boolean> {
  if (hidden.columns.size === 0 && hidden.names.size === 0) return false;
  const parsed = await ctx.db.parse(`SELECT (${sql}) AS dp_result FROM dp_relation`);
  if (!parsed.ok) return true;
  let reads = false;
  walkSqlTree(parsed.tree.statements[0]?.node?.select_list ?? [], (n) => {
    if (n.class === 'COLUMN_REF' && Array.isArray(n.column_names) && isHiddenColumn(hidden, String(n.column_names[n.column_names.length - 1]))) reads = true;
    else if (n.class === 'STAR' || n.class === 'COLUMNS' || n.class === 'SUBQUERY' || n.type === 'SUBQUERY') reads = true;
  });
  return reads;
}

/** Evaluates one parsed assertion against a relation; never throws (a failure to run is a failed assertion). */
async function evaluateOne(ctx: PluginContext, db: CheckReader, rel: Relation, a: ParsedAssertion, hidden: Hidden, full: boolean): Promise<AssertionOutcome> {
  const masked = new Set([...hidden.columns, ...hidden.names]);
  const R = qualified(rel.schema, rel.table);
  const sampleSize = full ? 20 : 5;
  const detail: Record<string, unknown> = { form: a.form };
  if (a.error) return { expression: a.expression, passed: false, detail: { ...detail, error: a.error } };
  const maskedIn = a.columns.filter((c) => masked.has(c.toLowerCase()));
  if (maskedIn.length) detail.masked_columns = maskedIn;
  const show = (column: string, value: unknown) => (value !== null && masked.has(column.toLowerCase()) ? MASKED_VALUE : value);
  try {
    switch (a.form) {
      case 'row_count': {
        const actual = Number((await db.query(`SELECT count(*) FROM ${R}`)).rows[0]?.[0]);
        const passed = compare(actual, a.operator as Comparison, a.threshold as number);
        return { expression: a.expression, passed, detail: { ...detail, actual, operator: a.operator, threshold: a.threshold } };
      }
      case 'unique': {
        const cols = a.columns.map(quoteIdent).join(', ');
        const notNull = a.columns.map((c) => `${quoteIdent(c)} IS NOT NULL`).join(' AND ');
        const dupSql = `SELECT ${cols}, count(*) AS dp_count FROM ${R} WHERE ${notNull} GROUP BY ${cols} HAVING count(*) > 1`;
        const summary = (await db.all(`SELECT count(*) AS duplicate_values, coalesce(sum(dp_count), 0) AS duplicate_rows FROM (${dupSql})`))[0];
        const duplicateValues = Number(summary.duplicate_values);
        Object.assign(detail, { columns: a.columns, duplicate_values: duplicateValues, duplicate_rows: Number(summary.duplicate_rows) });
        if (duplicateValues === 0) return { expression: a.expression, passed: true, detail };
        const top = await db.query(`${dupSql} ORDER BY dp_count DESC, ${cols} LIMIT ${TOP_VALUES}`);
        detail.top_duplicates = top.rows.map((row) => ({
          value: a.columns.length === 1 ? show(a.columns[0], row[0]) : Object.fromEntries(a.columns.map((c, i) => [c, show(c, row[i])])),
          count: Number(row[a.columns.length]),
        }));
        if (full) detail.sql = `${dupSql} ORDER BY dp_count DESC`;
        return { expression: a.expression, passed: false, detail };
      }
      case 'no_nulls': {
        const col = quoteIdent(a.columns[0]);
        const counts = (await db.all(`SELECT count(*) AS total, count(*) - count(${col}) AS nulls FROM ${R}`))[0];
        const total = Number(counts.total);
        const nulls = Number(counts.nulls);
        Object.assign(detail, { column: a.columns[0], null_count: nulls, total_rows: total, null_percentage: total ? Math.round((nulls / total) * 10000) / 100 : 0 });
        if (nulls === 0) return { expression: a.expression, passed: true, detail };
        const offending = `SELECT * FROM ${R} WHERE ${col} IS NULL`;
        const sample = await db.all(`${offending} LIMIT ${sampleSize}`);
        detail.sample_rows = redactRows(sample, masked);
        if (full) detail.sql = offending;
        return { expression: a.expression, passed: false, detail };
      }
      case 'accepted_values': {
        const column = a.columns[0];
        const col = quoteIdent(column);
        // A text column compared with numbers means the numbers' text (accepted_values(code, [1, 2]) on VARCHAR codes).
        const asText = /^(VARCHAR|TEXT|STRING|CHAR|(Nullable\(|LowCardinality\()*(String|FixedString))/i.test((await db.columnType(rel.schema, rel.table, column)) ?? '');
        const accepted = (a.values ?? []).filter((v): v is string | number | boolean => v !== null);
        const where = accepted.length ? `${col} IS NOT NULL AND ${col} NOT IN (${accepted.map((v) => sqlLiteral(v, asText)).join(', ')})` : `${col} IS NOT NULL`;
        const offending = `SELECT ${col} AS value, count(*) AS dp_count FROM ${R} WHERE ${where} GROUP BY ${col}`;
        // Totals, then the top values: no window function, which a target's engine may lack.
        const totals = (await db.all(`SELECT count(*) AS total_values, coalesce(sum(dp_count), 0) AS total_rows FROM (${offending}) AS dp_offending`))[0];
        Object.assign(detail, { column, accepted: a.values, unexpected_rows: Number(totals.total_rows), unexpected_distinct: Number(totals.total_values) });
        if (Number(totals.total_values) === 0) return { expression: a.expression, passed: true, detail };
        const res = await db.all(`SELECT value, dp_count FROM (${offending}) AS dp_offending ORDER BY dp_count DESC, value LIMIT ${full ? 50 : 20}`);
        detail.unexpected_values = res.map((r) => ({ value: show(column, r.value), count: Number(r.dp_count) }));
        if (full) detail.sql = `SELECT * FROM ${R} WHERE ${where}`;
        return { expression: a.expression, passed: false, detail };
      }
      case 'expression': {
        const first = await db.query(`SELECT (${a.sql}) AS dp_result FROM ${R} LIMIT 2`);
        if (first.rows.length === 1) {
          const value = first.rows[0][0];
          // The pass/fail verdict is the assertion's point; any other result may be a masked value (max(ssn)).
          const shown = typeof value === 'boolean' || value === null || !(await expressionReadsHidden(ctx, a.sql as string, hidden)) ? value : MASKED_VALUE;
          if (shown !== value) detail.value_masked = true;
          return { expression: a.expression, passed: truthy(value), detail: { ...detail, value: shown } };
        }
        // Several rows (or none): the expression is row-level, so it must hold on every row.
        // `CASE WHEN x THEN 0 ELSE 1 END` is `x IS NOT TRUE` (NULL fails) in a form every target runs.
        const notTrue = `CASE WHEN (${a.sql}) THEN 0 ELSE 1 END`;
        const counts = (await db.all(`SELECT count(*) AS total, coalesce(sum(${notTrue}), 0) AS failing FROM ${R}`))[0];
        const failing = Number(counts.failing);
        Object.assign(detail, { row_level: true, failing_rows: failing, total_rows: Number(counts.total) });
        if (failing === 0) return { expression: a.expression, passed: true, detail };
        const offending = `SELECT * FROM ${R} WHERE ${notTrue} = 1`;
        detail.sample_rows = redactRows(await db.all(`${offending} LIMIT ${sampleSize}`), masked);
        if (full) detail.sql = offending;
        return { expression: a.expression, passed: false, detail };
      }
    }
  } catch (e) {
    // DuckDB quotes the values it failed on (`Could not convert string '123-45-6789'`).
    const message = errorMessage(e).split('\n')[0];
    const bound = hidden.columns.size > 0 || hidden.names.size > 0;
    return { expression: a.expression, passed: false, detail: { ...detail, error: bound ? redactQuoted(message) : message } };
  }
}

/** Evaluates every expression (all of them, even after a failure) against `schema.table`. */
export async function evaluateAssertions(ctx: PluginContext, relationName: string, expressions: readonly string[], options: EvaluateOptions): Promise<AssertionOutcome[]> {
  const { schema, table } = splitRelation(relationName);
  if (!schema) {
    return expressions.map((expression) => ({ expression, passed: false, detail: { error: `'${relationName}' is not a schema.table name` } }));
  }
  const rel: Relation = { schema, table, full: `${schema}.${table}` };
  if (isServiceSchema(schema)) {
    return expressions.map((expression) => ({ expression, passed: false, detail: { error: `${rel.full} is internal to dp and cannot be checked` } }));
  }
  const db = checkReader(ctx, `assertions on ${rel.full}`);
  if (!(await db.exists(schema, table))) {
    return expressions.map((expression) => ({ expression, passed: false, detail: { error: `Relation ${rel.full} does not exist` } }));
  }
  const hidden: Hidden = { columns: await maskedColumnsFor(ctx, options.audience, schema, table), names: await maskedNamesFor(ctx, options.audience) };
  const out: AssertionOutcome[] = [];
  for (const expression of expressions) {
    const parsed = await parseAssertion(ctx, expression);
    out.push(await evaluateOne(ctx, db, rel, parsed, hidden, options.full ?? false));
  }
  return out;
}

export async function recordAssertionResults(ctx: PluginContext, runId: string | null, model: string, outcomes: AssertionOutcome[]): Promise<void> {
  const at = utcNow();
  for (const o of outcomes) {
    await ctx.db.run(
      'INSERT INTO _service.assertion_results (id, run_id, model, expression, form, passed, detail, checked_at) VALUES ($1, $2, $3, $4, $5, $6, $7::JSON, $8::TIMESTAMP)',
      [randomUUID(), runId, model, o.expression, String(o.detail.form ?? ''), o.passed, JSON.stringify(o.detail), at],
    );
  }
}

export async function listAssertionResults(ctx: PluginContext, options: { model?: string; limit: number }): Promise<StoredAssertionResult[]> {
  const rows = await ctx.db.all(
    `SELECT id, run_id, model, expression, form, passed, detail, CAST(checked_at AS VARCHAR) AS checked_at
       FROM _service.assertion_results ${options.model ? 'WHERE model = $1' : ''}
      ORDER BY checked_at DESC, model, expression LIMIT ${Math.max(1, Math.floor(options.limit))}`,
    options.model ? [options.model] : [],
  );
  return rows.map((r) => ({
    id: String(r.id),
    run_id: (r.run_id as string | null) ?? null,
    model: String(r.model),
    expression: String(r.expression),
    form: (r.form as string | null) || null,
    passed: Boolean(r.passed),
    detail: parseJson<Record<string, unknown>>(r.detail, {}),
    checked_at: isoUtc(r.checked_at) as string,
  }));
}

/** The expressions last evaluated for a model (what the debug endpoint re-runs when no models service knows it). */
export async function lastExpressions(ctx: PluginContext, model: string): Promise<string[]> {
  const rows = await ctx.db.all<{ expression: string }>(
    `SELECT expression FROM _service.assertion_results
      WHERE model = $1 AND checked_at = (SELECT max(checked_at) FROM _service.assertion_results WHERE model = $1)
      ORDER BY expression`,
    [model],
  );
  return rows.map((r) => r.expression);
}

function valueList(items: unknown, max = 3): string {
  if (!Array.isArray(items)) return '';
  const shown = items.slice(0, max).map((x: { value?: unknown; count?: unknown }) => `${JSON.stringify(x.value)} (${x.count})`);
  return shown.join(', ') + (items.length > max ? ', …' : '');
}

/** One line that explains an outcome (CLI output and alert messages). */
export function summarizeOutcome(o: AssertionOutcome): string {
  const d = o.detail as Record<string, any>;
  if (d.error) return `error: ${d.error}`;
  switch (d.form) {
    case 'row_count':
      return `row count ${d.actual}, expected ${d.operator} ${d.threshold}`;
    case 'unique':
      return d.duplicate_values ? `${d.duplicate_values} duplicated value(s) over ${d.duplicate_rows} rows: ${valueList(d.top_duplicates)}` : 'no duplicates';
    case 'no_nulls':
      return d.null_count ? `${d.null_count} NULL(s) in ${d.total_rows} rows (${d.null_percentage}%)` : 'no NULLs';
    case 'accepted_values':
      return d.unexpected_rows ? `${d.unexpected_rows} row(s) with unexpected values: ${valueList(d.unexpected_values)}` : 'all values accepted';
    case 'expression':
      return d.row_level ? `${d.failing_rows} of ${d.total_rows} row(s) fail the expression` : `expression returned ${JSON.stringify(d.value)}`;
    default:
      return o.passed ? 'passed' : 'failed';
  }
}

/**
 * Masks stored outcomes again for the caller who reads them: results recorded before values were
 * masked at write time (or for a wider audience) never show a masked column's value. Mutates the
 * outcomes' details; a caller bound by no policy gets them as stored.
 */
export class StoredOutcomeMasker {
  private readonly hiddenByRelation = new Map<string, Promise<Hidden>>();
  private names: Promise<Set<string>> | null = null;

  constructor(
    private readonly ctx: PluginContext,
    private readonly audience: Caller,
  ) {}

  private hidden(relationName: string): Promise<Hidden> {
    let hit = this.hiddenByRelation.get(relationName);
    if (!hit) {
      this.names ??= maskedNamesFor(this.ctx, this.audience);
      const { schema, table } = splitRelation(relationName);
      hit = Promise.all([schema ? maskedColumnsFor(this.ctx, this.audience, schema, table) : Promise.resolve(new Set<string>()), this.names]).then(([columns, names]) => ({ columns, names }));
      this.hiddenByRelation.set(relationName, hit);
    }
    return hit;
  }

  async mask(relationName: string, outcomes: ReadonlyArray<{ expression: string; detail: Record<string, unknown> }>): Promise<void> {
    const hidden = await this.hidden(relationName);
    if (hidden.columns.size === 0 && hidden.names.size === 0) return;
    for (const o of outcomes) {
      const d = o.detail;
      if (!d || typeof d !== 'object') continue;
      if (typeof d.error === 'string') d.error = redactQuoted(d.error);
      if (d.form !== 'expression' || !('value' in d) || typeof d.value === 'boolean' || d.value === null || d.value === MASKED_VALUE) continue;
      const sql = unquoteExpression(o.expression);
      if (await expressionReadsHidden(this.ctx, sql, hidden)) {
        d.value = MASKED_VALUE;
        d.value_masked = true;
      }
    }
  }
}
