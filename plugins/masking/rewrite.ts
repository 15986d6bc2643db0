/**
 * The masking rewriter: works on DuckDB's own parse tree (json_serialize_sql) and masks every
 * masked column at its source.
 *
 * Each scan of a table (or view) that holds masked columns is replaced by a subquery under the
 * same name: `FROM customers c` becomes
 *   FROM (SELECT * REPLACE (<mask>(email) AS email) FROM customers) AS c
 * so everything above the scan (aliases, CTEs, subqueries, *, t.*, COLUMNS(*), UNION, casts,
 * to_json/struct_pack of a row, window functions, DISTINCT, SUMMARIZE) only ever sees masked
 * values. CTE names in scope are not table scans and are left alone.
 *
 * Separately, `findMaskedPredicate` finds a masked column used in WHERE, ORDER BY, JOIN ON or
 * USING, HAVING, QUALIFY, GROUP BY, DISTINCT ON, a window's PARTITION BY/ORDER BY, or an
 * aggregate's ORDER BY/FILTER (SPEC.md Errors 1: those answer 403).
 */
import type { SerializedSql, SqlNode } from '../../sdk/index.js';
import type { RelationRef } from './relations.js';

export interface ColumnMask {
  /** Physical column name as the catalog spells it. */
  column: string;
  /** SQL expression over the physical columns of the same relation. */
  expression: string;
}

/** What to do with one table scan: masks (possibly none), or undefined when the relation is unknown. */
export type PlanFor = (ref: RelationRef) => ColumnMask[] | undefined;

export interface RewriteOutcome {
  tree: SerializedSql;
  /** Lower-case names of the columns masked somewhere in this query. */
  masked: Set<string>;
  /** Table scans naming no known relation (and no CTE). */
  unresolved: RelationRef[];
  /** Number of scans wrapped. */
  wrapped: number;
}

interface Occurrence {
  holder: SqlNode | SqlNode[];
  key: string | number;
  node: SqlNode;
}

const PLACEHOLDER = '__dp_masking_source';

/** CTE names a query node defines (`WITH a AS (...)`). */
function cteNames(node: SqlNode): string[] {
  const map = node?.cte_map?.map;
  if (!Array.isArray(map)) return [];
  return map.map((e: SqlNode) => String(e?.key ?? '').toLowerCase()).filter(Boolean);
}

/** Every BASE_TABLE scan that is not a reference to a CTE in scope. */
function collectScans(root: unknown): Occurrence[] {
  const out: Occurrence[] = [];
  const visit = (value: unknown, scope: ReadonlySet<string>, holder: SqlNode | SqlNode[] | null, key: string | number) => {
    if (Array.isArray(value)) {
      value.forEach((child, i) => visit(child, scope, value, i));
      return;
    }
    if (!value || typeof value !== 'object') return;
    const node = value as SqlNode;
    let inner = scope;
    const names = cteNames(node);
    if (names.length) inner = new Set([...scope, ...names]);
    if (node.type === 'BASE_TABLE' && typeof node.table_name === 'string' && holder) {
      const isCte = !node.catalog_name && !node.schema_name && inner.has(node.table_name.toLowerCase());
      if (!isCte) out.push({ holder, key, node });
      return;
    }
    for (const [k, child] of Object.entries(node)) if (child && typeof child === 'object') visit(child, inner, node, k);
  };
  visit(root, new Set(), null, '');
  return out;
}

function refOf(node: SqlNode): RelationRef {
  return { catalog: String(node.catalog_name ?? ''), schema: String(node.schema_name ?? ''), table: String(node.table_name) };
}

/** The SQL of the wrapper around a scan; parsed once per distinct mask set. */
export function wrapperSql(masks: ColumnMask[]): string {
  const replace = masks.map((m) => `${m.expression} AS "${m.column.replace(/"/g, '""')}"`).join(', ');
  return `SELECT * FROM (SELECT * REPLACE (${replace}) FROM ${PLACEHOLDER}) AS ${PLACEHOLDER}`;
}

/**
 * Rewrites a (cloned) tree in place. `template(sql)` returns the parsed SUBQUERY node of a
 * wrapperSql() text (the caller caches the parse).
 */
export async function rewriteTree(tree: SerializedSql, planFor: PlanFor, template: (sql: string) => Promise<SqlNode>): Promise<RewriteOutcome> {
  const masked = new Set<string>();
  const unresolved: RelationRef[] = [];
  /** Unaliased wrapped scans: qualified prefixes (schema.table, catalog.schema.table) → the name the wrapper now goes by. */
  const renamed = new Map<string, string>();
  let wrapped = 0;
  for (const occ of collectScans(tree.statements)) {
    const ref = refOf(occ.node);
    const masks = planFor(ref);
    if (masks === undefined) {
      unresolved.push(ref);
      continue;
    }
    if (masks.length === 0) continue;
    const wrapper = structuredClone(await template(wrapperSql(masks)));
    const source: SqlNode = { ...structuredClone(occ.node), alias: '', sample: null, column_name_alias: [] };
    wrapper.subquery.node.from_table = source;
    const alias = occ.node.alias ? String(occ.node.alias) : ref.table;
    wrapper.alias = alias;
    wrapper.sample = occ.node.sample ?? null;
    wrapper.column_name_alias = occ.node.column_name_alias ?? [];
    (occ.holder as Record<string | number, unknown>)[occ.key] = wrapper;
    for (const m of masks) masked.add(m.column.toLowerCase());
    if (!occ.node.alias) {
      if (ref.schema) renamed.set(`${ref.schema}.${ref.table}`.toLowerCase(), alias);
      if (ref.catalog) renamed.set(`${ref.catalog}.${ref.schema}.${ref.table}`.toLowerCase(), alias);
    }
    wrapped++;
  }
  if (renamed.size) requalify(tree.statements, renamed);
  return { tree, masked, unresolved, wrapped };
}

/** `main.customers.email` → `customers.email` once `main.customers` is a subquery named `customers`. */
function requalify(root: unknown, renamed: Map<string, string>): void {
  walk(root, (n) => {
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

function walk(value: unknown, visit: (n: SqlNode) => void): void {
  if (Array.isArray(value)) {
    for (const child of value) walk(child, visit);
  } else if (value && typeof value === 'object') {
    visit(value as SqlNode);
    for (const child of Object.values(value)) if (child && typeof child === 'object') walk(child, visit);
  }
}

/** Last part of every column reference inside a subtree, lower case. */
function columnRefs(value: unknown): string[] {
  const out: string[] = [];
  walk(value, (n) => {
    if (n.class === 'COLUMN_REF' && Array.isArray(n.column_names) && n.column_names.length) {
      out.push(String(n.column_names[n.column_names.length - 1]).toLowerCase());
    }
  });
  return out;
}

export interface PredicateUse {
  column: string;
  clause: string;
}

/** The first masked column used in a clause that filters, orders, groups or joins; null when there is none. */
export function findMaskedPredicate(root: unknown, masked: ReadonlySet<string>): PredicateUse | null {
  if (masked.size === 0) return null;
  let found: PredicateUse | null = null;
  const check = (clause: string, value: unknown) => {
    if (found || value == null) return;
    for (const name of columnRefs(value)) {
      if (masked.has(name)) {
        found = { column: name, clause };
        return;
      }
    }
  };
  walk(root, (n) => {
    if (found) return;
    if (n.type === 'SELECT_NODE') {
      check('WHERE', n.where_clause);
      check('HAVING', n.having);
      check('QUALIFY', n.qualify);
      check('GROUP BY', n.group_expressions);
    }
    if (Array.isArray(n.modifiers)) {
      for (const m of n.modifiers as SqlNode[]) {
        if (m?.type === 'ORDER_MODIFIER') check('ORDER BY', m.orders);
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
