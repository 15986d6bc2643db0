/**
 * The masking rewriter: works on DuckDB's own parse tree (json_serialize_sql) and masks every
 * masked column at its source.
 *
 * Each scan of a table (or view) that holds masked columns is replaced by a subquery under the
 * same name: `FROM customers c` becomes
 *   FROM (SELECT * REPLACE (<mask>(email) AS email) FROM customers) AS c
 * so everything above the scan (aliases, CTEs, subqueries, *, t.*, COLUMNS(*), UNION, casts,
 * to_json/struct_pack of a row, window functions, DISTINCT, SUMMARIZE) only ever sees masked
 * values. A name that DuckDB binds to a CTE is not a table scan and is left alone; which names
 * those are follows DuckDB's scoping (see collectScans).
 *
 * The new SQL text comes from splice.ts (the original text with each scan replaced) or, when
 * a statement does not allow that, from `rewriteTree` + json_deserialize_sql. Either way
 * `findUnmaskedScan` then checks DuckDB's parse of the final text: every scan of a relation
 * with masks must sit directly under a wrapper that masks exactly its masked columns.
 *
 * Separately, `findMaskedPredicate` finds a masked column used in WHERE, ORDER BY, JOIN ON or
 * USING, HAVING, QUALIFY, GROUP BY, DISTINCT ON, a window's PARTITION BY/ORDER BY, or an
 * aggregate's ORDER BY/FILTER (docs/decisions.md "Errors" 1: those answer 403).
 */
import { type SerializedSql, type SqlNode, walkSqlTree } from '../../sdk/index.js';
import type { MaskingPolicy } from './policies.js';
import type { RelationRef } from './relations.js';

export interface ColumnMask {
  /** Physical column name as the catalog spells it. */
  column: string;
  /** SQL expression over the physical columns of the same relation. */
  expression: string;
  /** The policy behind the mask (which result columns were masked, result-columns.ts). */
  policy?: MaskingPolicy;
  /** The column's DuckDB type, as the catalog names it. */
  type?: string;
}

/** What to do with one table scan: masks (possibly none), or undefined when the relation is unknown. */
export type PlanFor = (ref: RelationRef) => ColumnMask[] | undefined;

/** One table scan in a tree: the BASE_TABLE node and where it hangs. */
export interface Scan {
  holder: SqlNode | SqlNode[];
  key: string | number;
  node: SqlNode;
  /**
   * The scan is a plain FROM item (a SELECT's from_table or a side of a JOIN) outside
   * SUMMARIZE/DESCRIBE/SHOW, where the text of the reference can be replaced by a subquery.
   */
  fromItem: boolean;
}

/** A scan to wrap and its masks. */
export interface PlannedWrap {
  scan: Scan;
  ref: RelationRef;
  masks: ColumnMask[];
}

export interface ScanPlan {
  wraps: PlannedWrap[];
  /** Lower-case names of the columns masked somewhere in this query. */
  masked: Set<string>;
  /** Table scans naming no known relation (and no CTE). */
  unresolved: RelationRef[];
}

const PLACEHOLDER = '__dp_masking_source';
const lower = (v: unknown) => String(v ?? '').toLowerCase();
const isObject = (v: unknown): v is SqlNode => Boolean(v) && typeof v === 'object';

/**
 * Every BASE_TABLE scan that DuckDB does not bind to a CTE. Scoping as DuckDB 1.x binds it:
 * the main body of a WITH sees all of its CTEs; the body of the i-th CTE sees only the CTEs
 * before it (a reference to itself or to a later one is the table of that name); in a
 * recursive CTE only the recursive term (the right side of its UNION) sees the CTE itself.
 * When in doubt a name counts as a table scan: wrapping a CTE reference at worst masks twice
 * or fails to bind, while treating a table as a CTE would leak it.
 */
export function collectScans(root: unknown): Scan[] {
  const out: Scan[] = [];
  const visit = (value: unknown, scope: ReadonlySet<string>, holder: SqlNode | SqlNode[] | null, key: string | number, inShow: boolean): void => {
    if (Array.isArray(value)) {
      value.forEach((child, i) => visit(child, scope, value, i, inShow));
      return;
    }
    if (!isObject(value)) return;
    const node = value;
    if (node.type === 'BASE_TABLE' && typeof node.table_name === 'string' && holder) {
      const isCte = !node.catalog_name && !node.schema_name && scope.has(node.table_name.toLowerCase());
      if (!isCte) {
        const h = holder as SqlNode;
        const fromItem = !inShow && ((key === 'from_table' && h.type === 'SELECT_NODE') || ((key === 'left' || key === 'right') && h.type === 'JOIN'));
        out.push({ holder, key, node, fromItem });
      }
      return;
    }
    const show = inShow || node.type === 'SHOW_REF';
    let bodyScope = scope;
    const ctes: unknown[] = Array.isArray(node.cte_map?.map) ? node.cte_map.map : [];
    if (ctes.length) {
      let seen = new Set(scope);
      ctes.forEach((entry, i) => {
        const name = isObject(entry) ? lower(entry.key) : '';
        const body = isObject(entry) ? entry.value?.query?.node : undefined;
        if (isObject(body) && body.type === 'RECURSIVE_CTE_NODE' && lower(body.cte_name) === name) {
          const withSelf = new Set([...seen, name]);
          for (const [k, child] of Object.entries(body)) if (isObject(child)) visit(child, k === 'right' ? withSelf : seen, body, k, show);
          const { query: _query, ...rest } = (entry as SqlNode).value as SqlNode;
          visit(rest, seen, null, '', show);
        } else {
          visit(entry, seen, ctes as SqlNode[], i, show);
        }
        if (name) seen = new Set([...seen, name]);
      });
      bodyScope = seen;
    }
    for (const [k, child] of Object.entries(node)) if (k !== 'cte_map' && isObject(child)) visit(child, bodyScope, node, k, show);
  };
  visit(root, new Set(), null, '', false);
  return out;
}

export function refOf(node: SqlNode): RelationRef {
  return { catalog: String(node.catalog_name ?? ''), schema: String(node.schema_name ?? ''), table: String(node.table_name) };
}

/** Plans every scan of a tree: which to wrap with which masks, and which name no known relation. */
export function planScans(statements: unknown, planFor: PlanFor): ScanPlan {
  const wraps: PlannedWrap[] = [];
  const masked = new Set<string>();
  const unresolved: RelationRef[] = [];
  for (const scan of collectScans(statements)) {
    const ref = refOf(scan.node);
    const masks = planFor(ref);
    if (masks === undefined) unresolved.push(ref);
    else if (masks.length) {
      wraps.push({ scan, ref, masks });
      for (const m of masks) masked.add(m.column.toLowerCase());
    }
  }
  return { wraps, masked, unresolved };
}

/** The REPLACE list of a wrapper: `<mask> AS "col", ...`. */
export function replaceListSql(masks: ColumnMask[]): string {
  return masks.map((m) => `${m.expression} AS "${m.column.replace(/"/g, '""')}"`).join(', ');
}

/** The SQL of the wrapper around a scan, as a statement of its own; parsed once per distinct mask set. */
export function wrapperSql(masks: ColumnMask[]): string {
  return `SELECT * FROM (SELECT * REPLACE (${replaceListSql(masks)}) FROM ${PLACEHOLDER}) AS ${PLACEHOLDER}`;
}

const EMPTY = (v: unknown) => v == null || v === '' || v === false || (Array.isArray(v) && v.length === 0);

/**
 * The inner SELECT of a wrapper: `SELECT * REPLACE (...) FROM <one table>` and nothing else
 * (no WHERE, GROUP BY, HAVING, QUALIFY, ORDER/LIMIT/DISTINCT, WITH, sample, extra columns),
 * so nothing in it reads a raw value except the REPLACE expressions. Its replace_list, or null.
 */
export function wrapperReplaceList(select: unknown): SqlNode[] | null {
  if (!isObject(select) || select.type !== 'SELECT_NODE') return null;
  for (const k of ['where_clause', 'group_expressions', 'group_sets', 'having', 'qualify', 'modifiers', 'sample']) if (!EMPTY(select[k])) return null;
  if (!EMPTY(select.cte_map?.map)) return null;
  if (select.aggregate_handling !== undefined && select.aggregate_handling !== 'STANDARD_HANDLING') return null;
  const list = select.select_list;
  if (!Array.isArray(list) || list.length !== 1) return null;
  const star = list[0];
  if (!isObject(star) || star.class !== 'STAR' || star.columns || !EMPTY(star.expr) || !EMPTY(star.relation_name)) return null;
  for (const k of ['exclude_list', 'qualified_exclude_list', 'rename_list']) if (!EMPTY(star[k])) return null;
  if (!isObject(select.from_table) || select.from_table.type !== 'BASE_TABLE') return null;
  return Array.isArray(star.replace_list) && star.replace_list.length ? (star.replace_list as SqlNode[]) : null;
}

/** Structural equality of two parse subtrees, ignoring where in the text they were. */
export function sameTree(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((x, i) => sameTree(x, b[i]));
  if (!isObject(a) || !isObject(b) || Array.isArray(b)) return false;
  const ka = Object.keys(a).filter((k) => k !== 'query_location');
  const kb = Object.keys(b).filter((k) => k !== 'query_location');
  return ka.length === kb.length && ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && sameTree(a[k], b[k]));
}

/**
 * Checks DuckDB's parse of the SQL that will run: every scan of a relation with masks must be
 * the only source of a wrapper SELECT whose REPLACE list masks exactly those columns, with
 * expressions equal to those `expected` gives for the mask set. Returns a
 * description of the first violation, or null.
 */
export function findUnmaskedScan(statements: unknown, planFor: PlanFor, expected: (masks: ColumnMask[]) => SqlNode[] | undefined): string | null {
  for (const scan of collectScans(statements)) {
    const masks = planFor(refOf(scan.node));
    if (!masks?.length) continue;
    const name = [scan.node.catalog_name, scan.node.schema_name, scan.node.table_name].filter(Boolean).join('.');
    const replace = scan.key === 'from_table' ? wrapperReplaceList(scan.holder) : null;
    if (!replace) return `the scan of ${name} is not wrapped`;
    const want = new Map(masks.map((m) => [m.column.toLowerCase(), m]));
    const got = new Map(replace.map((e) => [lower(e?.key), e?.value]));
    if (got.size !== want.size || replace.length !== want.size || ![...want.keys()].every((c) => got.has(c))) {
      return `the wrapper of ${name} masks ${[...got.keys()].join(', ')} instead of ${[...want.keys()].join(', ')}`;
    }
    const exprs = expected(masks);
    if (!exprs) return `no mask of ${name} was planned`;
    const byKey = new Map(exprs.map((e) => [lower(e?.key), e?.value]));
    for (const [column, value] of got) if (!sameTree(value, byKey.get(column))) return `the mask of ${name}.${column} is not the policy's expression`;
  }
  return null;
}

/** Unaliased wrapped scans: qualified prefixes (schema.table, catalog.schema.table) → the name the wrapper goes by. */
function renamedPrefixes(wraps: PlannedWrap[]): Map<string, string> {
  const renamed = new Map<string, string>();
  for (const { scan, ref } of wraps) {
    if (scan.node.alias) continue;
    if (ref.schema) renamed.set(`${ref.schema}.${ref.table}`.toLowerCase(), ref.table);
    if (ref.catalog) renamed.set(`${ref.catalog}.${ref.schema}.${ref.table}`.toLowerCase(), ref.table);
  }
  return renamed;
}

/** Whether a column reference qualifies a wrapped scan by schema (`crm.customers.email`): it must be requalified. */
export function needsRequalify(statements: unknown, wraps: PlannedWrap[]): boolean {
  const renamed = renamedPrefixes(wraps);
  if (!renamed.size) return false;
  let found = false;
  walkSqlTree(statements, (n) => {
    if (found || n.class !== 'COLUMN_REF' || !Array.isArray(n.column_names) || n.column_names.length < 3) return;
    const names = n.column_names as string[];
    found = [3, 2].some((len) => names.length > len && renamed.has(names.slice(0, len).join('.').toLowerCase()));
  });
  return found;
}

/**
 * Rewrites a private, lossless copy of a tree in place (the json_deserialize_sql path).
 * `template(masks)` gives a fresh copy of the parsed SUBQUERY node of wrapperSql(masks).
 */
export function rewriteTree(tree: SerializedSql, planFor: PlanFor, template: (masks: ColumnMask[]) => SqlNode): { tree: SerializedSql; wrapped: number } {
  const plan = planScans(tree.statements, planFor);
  for (const { scan, ref, masks } of plan.wraps) {
    const wrapper = template(masks);
    const source: SqlNode = { ...scan.node, alias: '', sample: null, column_name_alias: [] };
    wrapper.subquery.node.from_table = source;
    wrapper.alias = scan.node.alias ? String(scan.node.alias) : ref.table;
    wrapper.sample = scan.node.sample ?? null;
    wrapper.column_name_alias = scan.node.column_name_alias ?? [];
    (scan.holder as Record<string | number, unknown>)[scan.key] = wrapper;
  }
  const renamed = renamedPrefixes(plan.wraps);
  if (renamed.size) requalify(tree.statements, renamed);
  return { tree, wrapped: plan.wraps.length };
}

/** `main.customers.email` → `customers.email` once `main.customers` is a subquery named `customers`. */
function requalify(root: unknown, renamed: Map<string, string>): void {
  walkSqlTree(root, (n) => {
    if (n.class !== 'COLUMN_REF' || !Array.isArray(n.column_names) || n.column_names.length < 3) return;
    const names = n.column_names as string[];
    for (const len of [3, 2]) {
      if (names.length <= len) continue;
      const alias = renamed.get(names.slice(0, len).join('.').toLowerCase());
      if (alias) {
        n.column_names = [alias, ...names.slice(len)];
        return;
      }
    }
  });
}


/**
 * What a predicate clause reads: the last part of every column reference (lower case) and every
 * star expression (`*`, `t.*`, `COLUMNS(...)`, `ORDER BY ALL`) that DuckDB expands into column
 * references before binding. A star that is an item of a nested SELECT's select list is a
 * projection (`EXISTS (SELECT * ...)`), not a use, and is skipped.
 */
function clauseReads(value: unknown): { names: string[]; stars: SqlNode[] } {
  const names: string[] = [];
  const stars: SqlNode[] = [];
  const visit = (v: unknown, projection: boolean): void => {
    if (Array.isArray(v)) {
      for (const child of v) visit(child, projection);
      return;
    }
    if (!isObject(v)) return;
    if (v.class === 'COLUMN_REF' && Array.isArray(v.column_names) && v.column_names.length) {
      names.push(String(v.column_names[v.column_names.length - 1]).toLowerCase());
    }
    // `#2` names a column by position: like a star, it is resolved against the masked columns.
    if ((v.class === 'STAR' || v.class === 'POSITIONAL_REFERENCE') && !projection) stars.push(v);
    for (const [k, child] of Object.entries(v)) {
      if (!isObject(child)) continue;
      if (v.type === 'SELECT_NODE' && k === 'select_list' && Array.isArray(child)) {
        for (const item of child) visit(item, true);
      } else visit(child, false);
    }
  };
  visit(value, false);
  return { names, stars };
}

export interface PredicateUse {
  column: string;
  clause: string;
}

/** A star expression in a predicate clause: which masked columns it expands to is decided by the caller (a regex needs DuckDB). */
export interface StarUse {
  clause: string;
  star: SqlNode;
}

/** Aggregates GROUP BY ALL does not group by (an aggregate over masked values is allowed). */
const AGGREGATES = new Set(['count', 'count_star', 'sum', 'avg', 'mean', 'min', 'max', 'any_value', 'first', 'last', 'list', 'array_agg', 'string_agg', 'approx_count_distinct', 'median', 'mode', 'quantile', 'quantile_cont', 'quantile_disc', 'stddev', 'stddev_samp', 'stddev_pop', 'variance', 'var_samp', 'var_pop', 'bool_and', 'bool_or', 'histogram', 'arg_min', 'arg_max']);

/**
 * The first masked column used in a clause that filters, orders, groups or joins; null when
 * there is none. Star expressions in those clauses are pushed to `stars` for the caller to
 * resolve. Positional references (`ORDER BY 1`, `GROUP BY 2`) and `GROUP BY ALL` are resolved
 * to the select items they name.
 */
export function findMaskedPredicate(root: unknown, masked: ReadonlySet<string>, stars: StarUse[] = []): PredicateUse | null {
  if (masked.size === 0) return null;
  let found: PredicateUse | null = null;
  const check = (clause: string, value: unknown) => {
    if (found || value == null) return;
    const reads = clauseReads(value);
    for (const name of reads.names) {
      if (masked.has(name)) {
        found = { column: name, clause };
        return;
      }
    }
    for (const star of reads.stars) stars.push({ clause, star });
  };
  /** The select item a positional reference names, checked as the clause it is used in. */
  const positional = (clause: string, select: SqlNode, expr: unknown) => {
    if (!isObject(expr) || expr.class !== 'CONSTANT' || !Array.isArray(select.select_list)) return;
    const position = Number(expr.value?.value);
    if (!Number.isInteger(position) || position < 1) return;
    const item = (select.select_list as SqlNode[])[position - 1];
    if (isObject(item) && item.class === 'STAR') stars.push({ clause, star: item });
    else check(clause, item);
  };
  const notAggregate = (item: unknown): unknown => {
    if (!isObject(item)) return item;
    if ((item.class === 'AGGREGATE' || item.class === 'FUNCTION') && AGGREGATES.has(String(item.function_name).toLowerCase())) return null;
    if (item.class === 'STAR') return item;
    const copy: SqlNode = Array.isArray(item) ? [] : {};
    for (const [k, v] of Object.entries(item)) copy[k] = isObject(v) ? notAggregate(v) : v;
    return copy;
  };
  walkSqlTree(root, (n) => {
    if (found) return;
    if (n.type === 'SELECT_NODE') {
      check('WHERE', n.where_clause);
      check('HAVING', n.having);
      check('QUALIFY', n.qualify);
      check('GROUP BY', n.group_expressions);
      for (const g of (n.group_expressions as unknown[] | undefined) ?? []) positional('GROUP BY', n, g);
      if (n.aggregate_handling === 'FORCE_AGGREGATES') {
        for (const item of (n.select_list as unknown[] | undefined) ?? []) {
          if (isObject(item) && item.class === 'STAR') stars.push({ clause: 'GROUP BY ALL', star: item });
          else check('GROUP BY ALL', notAggregate(item));
        }
      }
    }
    if (Array.isArray(n.modifiers)) {
      for (const m of n.modifiers as SqlNode[]) {
        if (m?.type === 'ORDER_MODIFIER') {
          check('ORDER BY', m.orders);
          if (n.type === 'SELECT_NODE') for (const o of (m.orders as SqlNode[] | undefined) ?? []) positional('ORDER BY', n, o?.expression);
        }
        if (m?.type === 'DISTINCT_MODIFIER') check('DISTINCT ON', m.distinct_on_targets);
      }
    }
    if (n.type === 'JOIN') {
      check('JOIN ON', n.condition);
      for (const c of (n.using_columns as string[] | undefined) ?? []) {
        if (!found && masked.has(String(c).toLowerCase())) found = { column: String(c).toLowerCase(), clause: 'JOIN USING' };
      }
    }
    if (n.class === 'WINDOW') {
      check('window PARTITION BY', n.partitions);
      check('window ORDER BY', n.orders);
      check('window ORDER BY', n.arg_orders);
      check('window FILTER', n.filter_expr);
    }
    if (n.class === 'AGGREGATE' || n.class === 'FUNCTION') {
      check('aggregate ORDER BY', n.order_bys?.orders);
      check('aggregate FILTER', n.filter);
    }
  });
  return found;
}

/**
 * How a star expression selects columns: `all` (`*`, `t.*`, `COLUMNS(*)`, `ORDER BY ALL`) minus
 * `exclude`, a list of names, a regular expression (RE2, DuckDB decides), or `unknown` (a
 * lambda or anything else: treated as all).
 */
export type StarSelection = { kind: 'all'; exclude: Set<string> } | { kind: 'names'; names: string[] } | { kind: 'regex'; pattern: string } | { kind: 'unknown' };

export function starSelection(star: SqlNode): StarSelection {
  if (star.class !== 'STAR') return { kind: 'unknown' };
  const expr = star.expr;
  if (expr == null) {
    const exclude = new Set<string>();
    for (const e of (star.exclude_list as unknown[] | undefined) ?? []) exclude.add(String(Array.isArray(e) ? e[e.length - 1] : e).toLowerCase());
    for (const e of (star.qualified_exclude_list as unknown[] | undefined) ?? []) {
      const parts = isObject(e) && Array.isArray(e.column_names) ? e.column_names : [];
      if (parts.length) exclude.add(String(parts[parts.length - 1]).toLowerCase());
    }
    return { kind: 'all', exclude };
  }
  const constant = (e: unknown) => (isObject(e) && e.class === 'CONSTANT' && e.value?.type?.id === 'VARCHAR' && !e.value.is_null ? String(e.value.value) : null);
  const pattern = constant(expr);
  if (pattern !== null) return { kind: 'regex', pattern };
  if (isObject(expr) && expr.class === 'FUNCTION' && expr.function_name === 'list_value' && Array.isArray(expr.children)) {
    const names = expr.children.map(constant);
    if (names.every((x: string | null) => x !== null)) return { kind: 'names', names: names as string[] };
  }
  return { kind: 'unknown' };
}
