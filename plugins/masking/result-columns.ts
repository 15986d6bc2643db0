/**
 * Which result columns of a query the rewrite masked (`masked_columns` of the query response).
 *
 * Worked out once per cached rewrite from the same parse and the same per-scan masks the rewrite
 * used: the top-level select list is traced through aliases, subqueries, CTEs, joins, set
 * operations and star expansion down to the scans the rewrite wrapped. A result column that is a
 * masked column (passed through or renamed) is marked `via: column` with its policy's method; one
 * computed from masked input is marked `via: expression`. Counting aggregates (`count(x)`,
 * `count(*)`) reveal no value and stay unmarked, as in the lineage rules (derived.ts).
 *
 * When the shape of the result cannot be traced (a star over a table function, PIVOT,
 * `COLUMNS(...)`), result columns named like a column the rewrite masked are marked, which is
 * also what the post-execution fallback masks.
 */
import type { MaskedResultColumn, SqlNode } from '../../sdk/index.js';
import type { DerivedPolicy } from './derived.js';
import type { MaskingPolicy } from './policies.js';
import type { RelationRef } from './relations.js';
import { type ColumnMask, refOf } from './rewrite.js';

/** The columns of a relation a scan reads, and the rewrite's masks of that scan. */
export type ScanColumns = (ref: RelationRef) => { columns: string[]; masks: ColumnMask[] } | undefined;

interface Traced {
  name?: string;
  policy?: MaskingPolicy;
  via: 'column' | 'expression';
}

interface Binding {
  name: string;
  /** Null when the source's columns are unknown (a table function, an unknown relation). */
  columns: Traced[] | null;
}

type Ctes = ReadonlyMap<string, () => Traced[] | null>;

const lower = (v: unknown) => String(v ?? '').toLowerCase();
const isObject = (v: unknown): v is SqlNode => Boolean(v) && typeof v === 'object';
const COUNTS = new Set(['count', 'count_star']);

/** Result columns' marks by position, or null when the result's shape cannot be traced. */
export type ResultMarks = { kind: 'traced'; columns: Traced[] } | { kind: 'by-name'; masks: Map<string, MaskingPolicy> };

function renamed(columns: Traced[] | null, aliases: unknown): Traced[] | null {
  if (!columns || !Array.isArray(aliases) || !aliases.length) return columns;
  return columns.map((c, i) => (i < aliases.length ? { ...c, name: String(aliases[i]) } : c));
}

class Tracer {
  constructor(private readonly scan: ScanColumns) {}

  query(node: unknown, outer: Ctes): Traced[] | null {
    if (!isObject(node)) return null;
    const ctes = this.withCtes(node, outer);
    if (node.type === 'SELECT_NODE') return this.select(node, ctes);
    if (node.type === 'SET_OPERATION_NODE' || node.type === 'RECURSIVE_CTE_NODE') {
      const left = this.query(node.left, ctes);
      const right = this.query(node.right, ctes);
      if (!left) return null;
      // A column of a set operation carries any side's masked values.
      return left.map((c, i) => (c.policy ? c : right?.[i]?.policy ? { ...right[i], name: c.name } : c));
    }
    return null;
  }

  private withCtes(node: SqlNode, outer: Ctes): Ctes {
    const entries: unknown[] = Array.isArray(node.cte_map?.map) ? node.cte_map.map : [];
    if (!entries.length) return outer;
    const ctes = new Map(outer);
    for (const entry of entries) {
      if (!isObject(entry)) continue;
      const name = lower(entry.key);
      const before: Ctes = new Map(ctes);
      let memo: Traced[] | null | undefined;
      ctes.set(name, () => {
        if (memo !== undefined) return memo;
        // A recursive CTE names itself in its recursive term: unknown there, its columns come from the anchor.
        memo = null;
        const self: Ctes = new Map([...before, [name, () => null]]);
        return (memo = renamed(this.query(entry.value?.query?.node, self), entry.value?.aliases));
      });
    }
    return ctes;
  }

  private from(table: unknown, ctes: Ctes): Binding[] {
    if (!isObject(table)) return [];
    const alias = table.alias ? String(table.alias) : '';
    switch (table.type) {
      case 'BASE_TABLE': {
        const cte = !table.catalog_name && !table.schema_name ? ctes.get(lower(table.table_name)) : undefined;
        let columns: Traced[] | null;
        if (cte) columns = cte();
        else {
          const rel = this.scan(refOf(table));
          if (!rel) columns = null;
          else {
            const byColumn = new Map(rel.masks.map((m) => [m.column.toLowerCase(), m.policy]));
            columns = rel.columns.map((name) => {
              const policy = byColumn.get(name.toLowerCase());
              return policy ? { name, policy, via: 'column' as const } : { name, via: 'column' as const };
            });
          }
        }
        return [{ name: lower(alias || table.table_name), columns: renamed(columns, table.column_name_alias) }];
      }
      case 'SUBQUERY':
        return [{ name: lower(alias), columns: renamed(this.query(table.subquery?.node, ctes), table.column_name_alias) }];
      case 'JOIN': {
        const left = this.from(table.left, ctes);
        const right = this.from(table.right, ctes);
        const using = new Set(((table.using_columns as unknown[] | undefined) ?? []).map(lower));
        if (lower(table.ref_type) === 'natural') {
          const leftNames = new Set(left.flatMap((b) => (b.columns ?? []).map((c) => lower(c.name))));
          for (const b of right) for (const c of b.columns ?? []) if (leftNames.has(lower(c.name))) using.add(lower(c.name));
        }
        if (!using.size) return [...left, ...right];
        // `SELECT *` shows a USING column once: the right side's copy is left out of the expansion.
        return [...left, ...right.map((b) => ({ ...b, columns: b.columns && b.columns.filter((c) => !using.has(lower(c.name))) }))];
      }
      case 'EMPTY':
        return [];
      default:
        return [{ name: lower(alias), columns: null }];
    }
  }

  private select(node: SqlNode, ctes: Ctes): Traced[] | null {
    const scope = this.from(node.from_table, ctes);
    const out: Traced[] = [];
    for (const item of (node.select_list as unknown[] | undefined) ?? []) {
      if (!isObject(item)) return null;
      if (item.class === 'STAR') {
        const expanded = this.star(item, scope);
        if (!expanded) return null;
        out.push(...expanded);
        continue;
      }
      const traced = this.expression(item, scope, ctes);
      out.push({ ...traced, name: item.alias ? String(item.alias) : traced.name });
    }
    return out;
  }

  private star(star: SqlNode, scope: Binding[]): Traced[] | null {
    if (star.columns || star.expr) return null;
    const from = star.relation_name ? scope.filter((b) => b.name === lower(star.relation_name)) : scope;
    if (!from.length || from.some((b) => !b.columns)) return null;
    const exclude = new Set<string>();
    for (const e of (star.exclude_list as unknown[] | undefined) ?? []) exclude.add(lower(Array.isArray(e) ? e[e.length - 1] : e));
    for (const e of (star.qualified_exclude_list as unknown[] | undefined) ?? []) {
      const parts = isObject(e) && Array.isArray(e.column_names) ? e.column_names : [];
      if (parts.length) exclude.add(lower(parts[parts.length - 1]));
    }
    const replace = new Map<string, unknown>(((star.replace_list as SqlNode[] | undefined) ?? []).map((r) => [lower(r?.key), r?.value]));
    const rename = new Map<string, string>();
    for (const r of (star.rename_list as SqlNode[] | undefined) ?? []) {
      const key = isObject(r?.key) ? r.key.column : r?.key;
      rename.set(lower(Array.isArray(key) ? key[key.length - 1] : key), String(r?.value));
    }
    const out: Traced[] = [];
    for (const binding of from) {
      for (const c of binding.columns!) {
        const name = lower(c.name);
        if (exclude.has(name)) continue;
        const replaced = replace.get(name);
        const traced = replaced !== undefined ? { ...this.expression(replaced, scope, new Map()), name: c.name } : c;
        out.push(rename.has(name) ? { ...traced, name: rename.get(name) } : traced);
      }
    }
    return out;
  }

  /** The column a reference names: by its qualifier when it has one, else the first binding that has it. */
  private column(ref: SqlNode, scope: Binding[]): Traced | undefined {
    const parts = (ref.column_names as unknown[]).map(lower);
    const name = parts[parts.length - 1];
    const qualifier = parts.length > 1 ? parts[parts.length - 2] : undefined;
    for (const b of scope) {
      if (qualifier !== undefined && b.name !== qualifier) continue;
      const hit = b.columns?.find((c) => lower(c.name) === name);
      if (hit) return hit;
    }
    // A struct field (`t.col.field`, `col.field`): the column is an earlier part.
    if (parts.length > 1) {
      for (const b of scope) {
        const hit = b.columns?.find((c) => parts.includes(lower(c.name)));
        if (hit) return { ...hit, via: 'expression' };
      }
    }
    return undefined;
  }

  /** A select item's value: a masked column passed through, computed from masked input, or neither. */
  private expression(expr: unknown, scope: Binding[], ctes: Ctes): Traced {
    if (isObject(expr) && expr.class === 'COLUMN_REF' && Array.isArray(expr.column_names)) {
      const hit = this.column(expr, scope);
      const name = String(expr.column_names[expr.column_names.length - 1]);
      return hit?.policy ? { name, policy: hit.policy, via: hit.via } : { name, via: 'column' };
    }
    if (isObject(expr) && expr.class === 'CAST' && expr.child?.class === 'COLUMN_REF') {
      // A cast keeps the value (the rule table's pass-through).
      const inner = this.expression(expr.child, scope, ctes);
      return { policy: inner.policy, via: inner.via };
    }
    const policy = this.firstMasked(expr, scope, ctes);
    return policy ? { policy, via: 'expression' } : { via: 'expression' };
  }

  private firstMasked(expr: unknown, scope: Binding[], ctes: Ctes): MaskingPolicy | undefined {
    if (Array.isArray(expr)) {
      for (const e of expr) {
        const hit = this.firstMasked(e, scope, ctes);
        if (hit) return hit;
      }
      return undefined;
    }
    if (!isObject(expr)) return undefined;
    if (expr.class === 'COLUMN_REF' && Array.isArray(expr.column_names)) return this.column(expr, scope)?.policy;
    if ((expr.class === 'AGGREGATE' || expr.class === 'FUNCTION' || expr.class === 'WINDOW') && COUNTS.has(lower(expr.function_name)) && !expr.distinct) return undefined;
    if (expr.class === 'SUBQUERY' && isObject(expr.subquery)) {
      const inner = this.query(expr.subquery.node, ctes);
      const hit = inner?.find((c) => c.policy)?.policy;
      if (hit) return hit;
      return this.firstMasked(expr.child, scope, ctes);
    }
    for (const value of Object.values(expr)) {
      if (!isObject(value)) continue;
      const hit = this.firstMasked(value, scope, ctes);
      if (hit) return hit;
    }
    return undefined;
  }
}

/**
 * The marks of a statement's result: traced per column, or (shape unknown) the masked columns
 * by name. `masks` are every mask the rewrite planned, for the by-name fallback.
 */
export function planResultMarks(statement: unknown, scan: ScanColumns, masks: ColumnMask[]): ResultMarks {
  try {
    const columns = new Tracer(scan).query(statement, new Map());
    if (columns) return { kind: 'traced', columns };
  } catch {
    // An unexpected tree shape: mark by name rather than fail the query.
  }
  const byName = new Map<string, MaskingPolicy>();
  for (const m of masks) if (m.policy && !byName.has(m.column.toLowerCase())) byName.set(m.column.toLowerCase(), m.policy);
  return { kind: 'by-name', masks: byName };
}

/** Policies by column name, as the post-execution fallback masks them. */
export function marksByName(policies: MaskingPolicy[]): ResultMarks {
  const byName = new Map<string, MaskingPolicy>();
  for (const p of policies) if (p.method !== 'none' && !byName.has(p.column_name.toLowerCase())) byName.set(p.column_name.toLowerCase(), p);
  return { kind: 'by-name', masks: byName };
}

function entry(index: number, name: string, policy: MaskingPolicy, via: 'column' | 'expression'): MaskedResultColumn {
  const out: MaskedResultColumn = { index, name, method: policy.method, via, policy: policy.id };
  const derived = 'derived' in policy ? (policy as DerivedPolicy) : undefined;
  out.source = derived?.sources?.[0] ?? `${policy.schema_name}.${policy.table_name}.${policy.column_name}`;
  if (derived) out.derived = true;
  return out;
}

/** The response's `masked_columns` for the result's column names (once per result). */
export function resolveMarks(marks: ResultMarks, columns: string[]): MaskedResultColumn[] {
  const out: MaskedResultColumn[] = [];
  if (marks.kind === 'traced' && marks.columns.length === columns.length) {
    marks.columns.forEach((c, i) => {
      if (c.policy) out.push(entry(i, columns[i]!, c.policy, c.via));
    });
    return out;
  }
  const byName = marks.kind === 'by-name' ? marks.masks : new Map(marks.columns.filter((c) => c.policy && c.name).map((c) => [lower(c.name), c.policy!]));
  columns.forEach((name, i) => {
    const policy = byName.get(name.toLowerCase());
    if (policy) out.push(entry(i, name, policy, 'column'));
  });
  return out;
}
