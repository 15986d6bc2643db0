/**
 * Late masking: in a plain SELECT over tables and joins whose every column reference names its
 * table (`c.email`, never `email`, `c`, `*` or `c.*`), each reference to a masked column is
 * replaced by the mask applied to it:
 *
 *   SELECT c.email, o.amount FROM crm.customers c JOIN crm.orders o ON ... LIMIT 100
 *   → SELECT (<mask>(c."email")) AS "email", o.amount FROM crm.customers c JOIN crm.orders o ON ... LIMIT 100
 *
 * In such a statement every value of a masked column reaches the result only through one of
 * those references (no subquery, CTE, lambda, star, row reference or table function can reach
 * the table), and a masked column in a predicate was refused before, so the result is the same
 * as with the scan wrapped: but DuckDB masks only the rows that survive joins, filters and
 * LIMIT instead of every row of the table. Anything outside that shape is wrapped at the scan
 * (rewrite.ts). `findUnmaskedLate` checks the same property on DuckDB's parse of the final SQL.
 */
import { quoteIdent, type SqlNode } from '../../sdk/index.js';
import type { RelationRef } from './relations.js';
import { type ColumnMask, refOf, sameTree } from './rewrite.js';
import { applyEdits, BASE_TABLE_KEYS, lexTableName, type NamePart, type TextEdit } from './splice.js';

/** What late masking needs to know about a relation: its columns and the masks of its masked ones. */
export interface LateSource {
  /** Lower-case column names. */
  columns: ReadonlySet<string>;
  /** Masks with every column reference qualified by `qualifier` (the name the query gives the table). */
  masks: (qualifier: string) => ColumnMask[];
}
export type ResolveSource = (ref: RelationRef) => LateSource | undefined;

/** One reference to a masked column, to be replaced by its mask. */
export interface LateUse {
  node: SqlNode;
  mask: ColumnMask;
  /** The reference is a whole item of the select list (it then needs the column's name as alias). */
  selectItem: boolean;
}

export interface LatePlan {
  uses: LateUse[];
  /** Every mask of the statement, with the qualifier it was built for (for the template check). */
  masks: Array<{ qualifier: string; mask: ColumnMask }>;
}

export const lower = (v: unknown) => String(v ?? '').toLowerCase();
const isObject = (v: unknown): v is SqlNode => Boolean(v) && typeof v === 'object';
export const EMPTY = (v: unknown) => v == null || (Array.isArray(v) && v.length === 0);

/** Expression classes through which a query could reach a table other than by a qualified column reference. */
const OPAQUE_CLASSES = new Set(['STAR', 'LAMBDA', 'LAMBDA_REF', 'SUBQUERY', 'POSITIONAL_REFERENCE']);
/** Table references allowed in the FROM tree (everything else, table functions and subqueries included, is not late-maskable). */
const JOIN_REF_TYPES = new Set(['REGULAR', 'CROSS']);

export interface Shape {
  node: SqlNode;
  /** Visible name (alias or table name), lower case → its BASE_TABLE. */
  tables: Map<string, SqlNode>;
}

/** A single plain SELECT whose FROM is tables joined by ON/USING or commas, each with a distinct name. */
export function shapeOf(statements: unknown): Shape | null {
  if (!Array.isArray(statements) || statements.length !== 1) return null;
  const node = statements[0]?.node;
  if (!isObject(node) || node.type !== 'SELECT_NODE' || !EMPTY(node.cte_map?.map) || node.sample != null) return null;
  const tables = new Map<string, SqlNode>();
  const from = (ref: unknown): boolean => {
    if (!isObject(ref)) return false;
    if (ref.type === 'BASE_TABLE') {
      for (const [k, v] of Object.entries(ref)) if (!BASE_TABLE_KEYS.has(k) && v != null) return false;
      if (ref.sample != null || ref.at_clause != null || !EMPTY(ref.column_name_alias) || typeof ref.table_name !== 'string') return false;
      const name = lower(ref.alias || ref.table_name);
      if (tables.has(name)) return false;
      tables.set(name, ref);
      return true;
    }
    return ref.type === 'JOIN' && JOIN_REF_TYPES.has(String(ref.ref_type)) && from(ref.left) && from(ref.right);
  };
  return from(node.from_table) ? { node, tables } : null;
}

/**
 * Visits every object of the statement except the tables of the FROM tree. `enter` returns
 * false to skip a subtree, or a string to stop with that answer.
 */
export function scan(shape: Shape, enter: (n: SqlNode) => boolean | string): string | null {
  const leaves = new Set<unknown>(shape.tables.values());
  let stop: string | null = null;
  const visit = (value: unknown): void => {
    if (stop !== null || !isObject(value) || leaves.has(value)) return;
    if (!Array.isArray(value)) {
      const r = enter(value);
      if (typeof r === 'string') {
        stop = r;
        return;
      }
      if (r === false) return;
    }
    for (const child of Object.values(value)) if (isObject(child)) visit(child);
  };
  visit(shape.node);
  return stop;
}

/** Why a node keeps the statement from being masked late, or null. */
export function opaque(n: SqlNode): string | null {
  if (OPAQUE_CLASSES.has(String(n.class))) return `a ${String(n.class).toLowerCase()} expression`;
  if (n.type === 'SUBQUERY' || n.type === 'TABLE_FUNCTION' || n.type === 'PIVOT' || n.type === 'SHOW_REF' || n.type === 'EXPRESSION_LIST') return `a ${String(n.type).toLowerCase()}`;
  return null;
}

export interface Bound {
  qualifier: string;
  source: LateSource;
  masks: Map<string, ColumnMask>;
}

export function bindTables(shape: Shape, resolve: ResolveSource): Map<string, Bound> | null {
  const bound = new Map<string, Bound>();
  for (const [name, table] of shape.tables) {
    const source = resolve(refOf(table));
    if (!source) return null;
    const qualifier = String(table.alias || table.table_name);
    bound.set(name, { qualifier, source, masks: new Map(source.masks(qualifier).map((m) => [m.column.toLowerCase(), m])) });
  }
  return bound;
}

/** The late plan of a statement, or null when it does not have the shape late masking needs. */
export function planLate(statements: unknown, resolve: ResolveSource): LatePlan | null {
  const shape = shapeOf(statements);
  if (!shape) return null;
  const tables = bindTables(shape, resolve);
  if (!tables) return null;
  const uses: LateUse[] = [];
  const selectItems = new Set<unknown>(Array.isArray(shape.node.select_list) ? shape.node.select_list : []);
  const problem = scan(shape, (n) => {
    const why = opaque(n);
    if (why) return why;
    if (n.class !== 'COLUMN_REF') return true;
    const names = n.column_names;
    if (!Array.isArray(names) || names.length !== 2) return 'a column reference without its table';
    const table = tables.get(lower(names[0]));
    if (!table || !table.source.columns.has(lower(names[1]))) return 'a reference that is not a table column';
    const mask = table.masks.get(lower(names[1]));
    if (mask) uses.push({ node: n, mask, selectItem: selectItems.has(n) });
    return true;
  });
  if (problem !== null) return null;
  const masks = [...tables.values()].flatMap((t) => [...t.masks.values()].map((mask) => ({ qualifier: t.qualifier, mask })));
  return { uses, masks };
}

function columnNamesMatch(parts: NamePart[], names: unknown[]): boolean {
  return parts.length === names.length && parts.every((p, i) => (p.quoted ? p.name === String(names[i]) : p.name.toLowerCase() === String(names[i]).toLowerCase()));
}

/** The original SQL with every masked reference replaced by its mask, or null when a reference's text cannot be found exactly. */
export function spliceLate(sql: string, plan: LatePlan): string | null {
  const buf = Buffer.from(sql, 'utf8');
  const edits: TextEdit[] = [];
  for (const use of plan.uses) {
    const start = use.node.query_location;
    if (!Number.isSafeInteger(start) || start < 0 || start >= buf.length) return null;
    const name = lexTableName(buf, start);
    if (!name || !columnNamesMatch(name.parts, use.node.column_names)) return null;
    // A whole select item keeps the name DuckDB gives a column reference: the column's own.
    const alias = use.selectItem && !use.node.alias ? ` AS ${quoteIdent(use.mask.column)}` : '';
    edits.push({ start, end: name.end, text: `(${use.mask.expression})${alias}` });
  }
  return applyEdits(buf, edits);
}

/** The SQL of one statement whose select items are the given masks, to parse them once. */
export function lateTemplateSql(masks: Array<{ mask: ColumnMask }>): string {
  return `SELECT ${masks.map((m, i) => `(${m.mask.expression}) AS m${i}`).join(', ')}`;
}

/**
 * Checks DuckDB's parse of the SQL that will run: it has the late shape, and every reference
 * to a masked column sits inside a subtree equal to the parse of its mask (`expected`, by
 * qualifier and column, lower case). Returns the first violation, or null.
 */
export function findUnmaskedLate(statements: unknown, resolve: ResolveSource, expected: (qualifier: string, column: string) => SqlNode | undefined): string | null {
  const shape = shapeOf(statements);
  if (!shape) return 'the rewritten statement is not a plain SELECT over tables';
  const tables = bindTables(shape, resolve);
  if (!tables) return 'a table of the rewritten statement is unknown';
  const templates: SqlNode[] = [];
  for (const t of tables.values()) {
    for (const column of t.masks.keys()) {
      const tpl = expected(t.qualifier.toLowerCase(), column);
      if (!tpl) return `no mask of ${t.qualifier}.${column} was planned`;
      templates.push(tpl);
    }
  }
  const isMask = (n: SqlNode) => templates.some((t) => t.class === n.class && t.type === n.type && sameTree({ ...n, alias: '' }, { ...t, alias: '' }));
  return scan(shape, (n) => {
    if (n.class && isMask(n)) return false;
    const why = opaque(n);
    if (why) return `the rewritten statement has ${why}`;
    if (n.class !== 'COLUMN_REF') return true;
    const names = n.column_names;
    if (!Array.isArray(names) || names.length !== 2) return 'a column reference without its table';
    const table = tables.get(lower(names[0]));
    if (!table || !table.source.columns.has(lower(names[1]))) return 'a reference that is not a table column';
    if (table.masks.has(lower(names[1]))) return `${table.qualifier}.${String(names[1])} is read without its mask`;
    return true;
  });
}
