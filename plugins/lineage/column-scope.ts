/** The pieces column lineage (columns.ts) is built from: output columns, relations, scopes, and helpers on them. */
import type { ColumnSource, ParsedSql, SerializedSql, SqlNode } from '../../sdk/index.js';

export const STAR = '*';

export interface LineageEnv {
  parse(sql: string): Promise<ParsedSql>;
  /** Ordered column names of an upstream relation (`schema.name`), or undefined when unknown. */
  relationColumns(relation: string): string[] | undefined;
  /** json_deserialize_sql, used to name unaliased computed columns the way DuckDB does. */
  deparse?(tree: SerializedSql): Promise<string>;
  /** Output column names of a SELECT run against the live database (expands COLUMNS(...)). */
  describe?(sql: string): Promise<string[]>;
}

/**
 * How an output column's value relates to its sources (the masking plugin propagates policies
 * by it): `pass` keeps a source value as it is (a reference, a rename, a cast), `count` is a
 * plain count(col) (reveals no value), `computed` is anything else.
 */
export type ColumnKind = 'pass' | 'computed' | 'count';

export interface ColumnLineageResult {
  /** Output column → sources, in output order. */
  columns: Record<string, ColumnSource[]>;
  /** Output column → how its value relates to its sources. */
  kinds: Record<string, ColumnKind>;
  /** Output column names in order (object key order is not reliable for numeric names). */
  order: string[];
  /** Upstream base relations the SQL reads, as resolved `schema.name`. */
  relations: string[];
  /** False when some output is an unexpanded `*`. */
  complete: boolean;
}

export interface OutCol {
  name: string;
  sources: ColumnSource[];
  /** How the value relates to its sources; absent means `pass` (a column read as it is). */
  kind?: ColumnKind;
}

/** The kind of a column made from several (UNION branches, USING sides): computed wins. */
export function mergeKind(a: ColumnKind | undefined, b: ColumnKind | undefined): ColumnKind | undefined {
  if (a === 'computed' || b === 'computed') return 'computed';
  if (a === 'count' || b === 'count') return 'computed';
  return undefined;
}

/** Casts keep the value (a rename of its type). */
export const CAST_CLASSES = new Set(['CAST']);

export interface Rel {
  /** Lower-cased name used to qualify columns (alias, or table name). */
  alias: string;
  schema?: string;
  cols: OutCol[];
}

export interface Scope {
  rels: Rel[];
  ctes: Map<string, OutCol[]>;
  parent?: Scope;
  /** USING / NATURAL join columns (lower-case): shown once by `*`. */
  merged: Set<string>;
  /** Select-list aliases defined so far (DuckDB lets later items refer to them). */
  aliases: Map<string, ColumnSource[]>;
  /** Lambda parameters in force (not columns). */
  lambdaParams: Set<string>;
}

/** Keywords DuckDB parses as column references when nothing of that name exists. */
export const SPECIAL_REFS = new Set([
  'current_date', 'current_time', 'current_timestamp', 'localtime', 'localtimestamp',
  'current_user', 'session_user', 'user', 'current_role', 'current_catalog', 'current_schema',
]);

export const lc = (s: string) => s.toLowerCase();

export function addSources(into: ColumnSource[], from: Iterable<ColumnSource>): ColumnSource[] {
  for (const s of from) {
    if (!into.some((x) => x.source_table === s.source_table && x.source_column === s.source_column)) into.push(s);
  }
  return into;
}

/** The sources of column `name` read through a `*` entry: the same column of its relations. */
export function throughStar(star: OutCol, name: string): ColumnSource[] {
  return star.sources.map((s) => (s.source_column === STAR ? { source_table: s.source_table, source_column: name } : s));
}

export function stripLocations(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(stripLocations);
  if (v && typeof v === 'object') {
    const o: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) if (k !== 'query_location') o[k] = stripLocations(x);
    return o;
  }
  return v;
}

export function uniqueSource(s: ColumnSource, i: number, all: ColumnSource[]): boolean {
  return all.findIndex((x) => x.source_table === s.source_table && x.source_column === s.source_column) === i;
}

export function fallbackName(item: SqlNode): string {
  if (item.class === 'FUNCTION' && item.function_name) return `${item.function_name}(...)`;
  if (item.class === 'CONSTANT') return String(item.value?.value ?? 'NULL');
  return String(item.type ?? 'expr').toLowerCase();
}

export function lambdaParams(lhs: SqlNode | undefined): string[] {
  if (!lhs) return [];
  if (lhs.class === 'COLUMN_REF') return [lc(String((lhs.column_names as string[]).at(-1)))];
  return ((lhs.children ?? []) as SqlNode[]).flatMap(lambdaParams);
}

export function lookupCte(scope: Scope, name: string): OutCol[] | undefined {
  return scope.ctes.get(name);
}

export function columnOf(rel: Rel, name: string): ColumnSource[] | undefined {
  const exact = rel.cols.find((c) => c.name !== STAR && lc(c.name) === lc(name));
  if (exact) return [...exact.sources];
  const star = rel.cols.find((c) => c.name === STAR);
  return star ? throughStar(star, name) : undefined;
}

/** Applies a positional column alias list (`AS t(a, b)`, `WITH c(a, b) AS`). */
export function renameColumns(cols: OutCol[], aliases: string[]): OutCol[] {
  if (!aliases.length) return cols;
  if (cols.some((c) => c.name === STAR)) {
    const star = cols.find((c) => c.name === STAR)!;
    return [...aliases.map((a) => ({ name: a, sources: throughStar(star, a), kind: star.kind })), star];
  }
  return cols.map((c, i) => (i < aliases.length ? { name: aliases[i]!, sources: c.sources, kind: c.kind } : c));
}

/** The COLUMNS(...) star inside a select item, if any (not inside a subquery). */
export function findColumnsStar(v: unknown): SqlNode | null {
  if (!v || typeof v !== 'object') return null;
  if (Array.isArray(v)) {
    for (const x of v) {
      const hit = findColumnsStar(x);
      if (hit) return hit;
    }
    return null;
  }
  const n = v as SqlNode;
  if (n.class === 'STAR' && n.columns) return n;
  if (n.class === 'SUBQUERY') return null;
  for (const x of Object.values(n)) {
    const hit = findColumnsStar(x);
    if (hit) return hit;
  }
  return null;
}

/** DuckDB's CREATE TABLE AS naming of duplicate output columns: `id`, `id_1`, `id_2`. */
export function dedupeNames(cols: OutCol[]): OutCol[] {
  const used = new Set<string>();
  const out: OutCol[] = [];
  for (const c of cols) {
    if (c.name === STAR) {
      const prev = out.find((o) => o.name === STAR);
      if (prev) {
        addSources(prev.sources, c.sources);
        prev.kind = mergeKind(prev.kind, c.kind);
      } else out.push({ name: STAR, sources: [...c.sources], kind: c.kind });
      continue;
    }
    let name = c.name;
    for (let i = 1; used.has(lc(name)); i++) name = `${c.name}_${i}`;
    used.add(lc(name));
    out.push({ name, sources: c.sources, kind: c.kind });
  }
  return out;
}
