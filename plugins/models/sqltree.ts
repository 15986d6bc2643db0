/**
 * Readers of DuckDB's parse tree (json_serialize_sql). The tree is walked generically so that
 * table references are found wherever DuckDB puts them: FROM and JOIN, CTE bodies, subqueries
 * in any clause, set operations, PIVOT sources.
 */
import type { SqlNode } from '../../sdk/index.js';

export interface TableRef {
  schema: string;
  table: string;
  /** Character offset in the SQL, when DuckDB reports one. */
  location: number | null;
}

export interface CteInfo {
  name: string;
  references: number;
}

function cteNames(node: SqlNode): string[] {
  const map = node?.cte_map?.map;
  return Array.isArray(map) ? map.map((e: { key: string }) => String(e.key)) : [];
}

/**
 * Calls visit on every base-table reference node (BASE_TABLE), CTE names excluded. CTE scoping
 * follows SQL: a CTE is visible in the query that defines it (including its own and later CTE
 * bodies) and in nested queries. The node is the tree's own: a caller holding a private copy
 * (readTreeJson) may change it, e.g. to bind the reference to another relation.
 */
export function forEachTableReference(root: SqlNode, visit: (node: SqlNode) => void): void {
  const walk = (value: unknown, scope: ReadonlySet<string>): void => {
    if (Array.isArray(value)) {
      for (const v of value) walk(v, scope);
      return;
    }
    if (value === null || typeof value !== 'object') return;
    const node = value as SqlNode;
    let inner = scope;
    const names = cteNames(node);
    if (names.length) inner = new Set([...scope, ...names.map((n) => n.toLowerCase())]);
    if (node.type === 'BASE_TABLE' && typeof node.table_name === 'string') {
      const schema = String(node.schema_name ?? '');
      const isCte = schema === '' && !node.catalog_name && inner.has(node.table_name.toLowerCase());
      if (!isCte) visit(node);
    }
    for (const v of Object.values(node)) if (v !== null && typeof v === 'object') walk(v, inner);
  };
  walk(root, new Set());
}

/** Every base-table reference, CTE names excluded (see forEachTableReference). */
export function tableReferences(root: SqlNode): TableRef[] {
  const refs: TableRef[] = [];
  forEachTableReference(root, (node) => {
    refs.push({ schema: String(node.schema_name ?? ''), table: node.table_name, location: typeof node.query_location === 'number' ? node.query_location : null });
  });
  return refs;
}

/** CTEs defined anywhere in the statement with how often each name is referenced as a table inside its scope. */
export function cteUsage(root: SqlNode): CteInfo[] {
  const out: CteInfo[] = [];
  const countRefs = (value: unknown, name: string): number => {
    if (Array.isArray(value)) return value.reduce((n: number, v) => n + countRefs(v, name), 0);
    if (value === null || typeof value !== 'object') return 0;
    const node = value as SqlNode;
    let n = node.type === 'BASE_TABLE' && !node.schema_name && String(node.table_name).toLowerCase() === name ? 1 : 0;
    for (const v of Object.values(node)) if (v !== null && typeof v === 'object') n += countRefs(v, name);
    return n;
  };
  const walk = (value: unknown): void => {
    if (Array.isArray(value)) return value.forEach(walk);
    if (value === null || typeof value !== 'object') return;
    const node = value as SqlNode;
    for (const name of cteNames(node)) out.push({ name, references: countRefs(node, name.toLowerCase()) });
    for (const v of Object.values(node)) if (v !== null && typeof v === 'object') walk(v);
  };
  walk(root);
  return out;
}

/** The SELECT nodes whose select lists produce the statement's output (every branch of a set operation). */
export function outputSelects(root: SqlNode): SqlNode[] {
  if (!root) return [];
  if (root.type === 'SET_OPERATION_NODE') return [...outputSelects(root.left), ...outputSelects(root.right)];
  if (root.type === 'SELECT_NODE') return [root];
  return [];
}

/** A `*` or `t.*` in a select list (`COLUMNS(...)` is an expression, not a star). */
export function isStar(expr: SqlNode): boolean {
  return expr?.class === 'STAR' && expr.columns !== true;
}

/** A select-list expression whose output name DuckDB would invent (no alias, not a column or star). */
export function isUnaliasedExpression(expr: SqlNode): boolean {
  if (!expr || expr.alias) return false;
  return expr.class !== 'COLUMN_REF' && expr.class !== 'STAR';
}
