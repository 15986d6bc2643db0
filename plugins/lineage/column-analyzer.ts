/** The walk over DuckDB's parse tree that column lineage (columns.ts) runs. */
import type { ColumnSource, SerializedSql, SqlNode } from '../../sdk/index.js';
import {
  STAR,
  addSources,
  CAST_CLASSES,
  columnOf,
  fallbackName,
  findColumnsStar,
  lambdaParams,
  lc,
  lookupCte,
  mergeKind,
  renameColumns,
  SPECIAL_REFS,
  stripLocations,
  throughStar,
  type ColumnKind,
  type LineageEnv,
  type OutCol,
  type Rel,
  type Scope,
} from './column-scope.js';

export class Analyzer {
  readonly relations: string[] = [];
  private readonly deparseCache = new Map<string, string>();

  constructor(
    private readonly env: LineageEnv,
    private readonly dependsOn: string[],
  ) {}

  /** `schema.name` of a base table as the model reads it. */
  resolveTable(schema: string, table: string): string {
    if (schema) return `${schema}.${table}`;
    const matches = this.dependsOn.filter((d) => lc(d.slice(d.lastIndexOf('.') + 1)) === lc(table));
    return matches.length === 1 ? matches[0]! : `main.${table}`;
  }

  private baseColumns(relation: string): OutCol[] {
    if (!this.relations.includes(relation)) this.relations.push(relation);
    const known = this.env.relationColumns(relation);
    if (!known) return [{ name: STAR, sources: [{ source_table: relation, source_column: STAR }] }];
    return known.map((c) => ({ name: c, sources: [{ source_table: relation, source_column: c }] }));
  }

  // ------------------------------------------------------------------ query nodes

  async node(node: SqlNode, parent: Scope | undefined, ctes: Map<string, OutCol[]>): Promise<OutCol[]> {
    const scopeCtes = await this.withCtes(node, parent, ctes);
    if (node.type === 'SET_OPERATION_NODE') return this.setOperation(node, parent, scopeCtes);
    if (node.type === 'SELECT_NODE') return this.select(node, parent, scopeCtes);
    // RECURSIVE_CTE_NODE and other query shapes: treat like a set operation of left/right.
    if (node.left && node.right) return this.setOperation({ ...node, setop_type: 'UNION' }, parent, scopeCtes);
    return [];
  }

  private async withCtes(node: SqlNode, parent: Scope | undefined, ctes: Map<string, OutCol[]>): Promise<Map<string, OutCol[]>> {
    const entries: SqlNode[] = node.cte_map?.map ?? [];
    if (entries.length === 0) return ctes;
    const out = new Map(ctes);
    for (const entry of entries) {
      const name = lc(String(entry.key));
      const body: SqlNode | undefined = entry.value?.query?.node;
      if (!body) continue;
      const aliases: string[] = entry.value.aliases ?? [];
      // A recursive CTE refers to itself: its anchor (left branch) stands in for it first.
      if (body.type === 'SET_OPERATION_NODE' || body.type === 'RECURSIVE_CTE_NODE') {
        out.set(name, renameColumns(await this.node(body.left, parent, out), aliases));
      }
      out.set(name, renameColumns(await this.node(body, parent, out), aliases));
    }
    return out;
  }

  private async setOperation(node: SqlNode, parent: Scope | undefined, ctes: Map<string, OutCol[]>): Promise<OutCol[]> {
    const left = await this.node(node.left, parent, ctes);
    const right = await this.node(node.right, parent, ctes);
    // EXCEPT keeps only left-hand values; the right side just filters rows.
    if (String(node.setop_type).startsWith('EXCEPT')) return left;
    const byName = String(node.setop_type).includes('BY_NAME') || left.some((c) => c.name === STAR) || right.some((c) => c.name === STAR);
    const out: OutCol[] = left.map((c) => ({ name: c.name, sources: [...c.sources], kind: c.kind }));
    if (!byName && left.length === right.length) {
      right.forEach((c, i) => {
        addSources(out[i]!.sources, c.sources);
        out[i]!.kind = mergeKind(out[i]!.kind, c.kind);
      });
      return out;
    }
    for (const c of right) {
      const hit = out.find((o) => lc(o.name) === lc(c.name));
      if (hit) {
        addSources(hit.sources, c.sources);
        hit.kind = mergeKind(hit.kind, c.kind);
      } else out.push({ name: c.name, sources: [...c.sources], kind: c.kind });
    }
    return out;
  }

  private async select(node: SqlNode, parent: Scope | undefined, ctes: Map<string, OutCol[]>): Promise<OutCol[]> {
    const scope: Scope = { rels: [], ctes, parent, merged: new Set(), aliases: new Map(), lambdaParams: new Set(parent?.lambdaParams ?? []) };
    if (node.from_table) await this.fromItem(node.from_table, scope);
    const out: OutCol[] = [];
    for (const item of (node.select_list ?? []) as SqlNode[]) {
      if (item.class === 'STAR' && !item.columns) {
        out.push(...(await this.expandStar(item, scope)));
        continue;
      }
      const columnsStar = findColumnsStar(item);
      if (columnsStar) {
        out.push(...(await this.expandColumnsExpression(item, columnsStar, scope)));
        continue;
      }
      const sources = await this.expr(item, scope);
      const name = item.alias ? String(item.alias) : await this.expressionName(item);
      out.push({ name, sources, kind: this.kindOf(item, scope) });
      if (item.alias) scope.aliases.set(lc(String(item.alias)), sources);
    }
    return out;
  }

  // ------------------------------------------------------------------ FROM

  private async fromItem(ref: SqlNode, scope: Scope): Promise<void> {
    switch (ref.type) {
      case 'BASE_TABLE': {
        const table = String(ref.table_name);
        const schema = String(ref.schema_name ?? '');
        const alias = lc(ref.alias || table);
        const cte = !schema ? lookupCte(scope, lc(table)) : undefined;
        const cols = cte ?? this.baseColumns(this.resolveTable(schema, table));
        scope.rels.push({ alias, schema: schema ? lc(schema) : undefined, cols: renameColumns(cols, ref.column_name_alias ?? []) });
        return;
      }
      case 'SUBQUERY': {
        // The scope so far is visible to LATERAL subqueries.
        const cols = await this.node(ref.subquery.node, scope, scope.ctes);
        scope.rels.push({ alias: lc(ref.alias || 'unnamed_subquery'), cols: renameColumns(cols, ref.column_name_alias ?? []) });
        return;
      }
      case 'JOIN': {
        const before = scope.rels.length;
        await this.fromItem(ref.left, scope);
        const leftRels = scope.rels.slice(before);
        const mid = scope.rels.length;
        await this.fromItem(ref.right, scope);
        const rightRels = scope.rels.slice(mid);
        for (const c of (ref.using_columns ?? []) as string[]) scope.merged.add(lc(c));
        if (ref.ref_type === 'NATURAL') {
          const leftNames = new Set(leftRels.flatMap((r) => r.cols.map((c) => lc(c.name))));
          for (const r of rightRels) for (const c of r.cols) if (c.name !== STAR && leftNames.has(lc(c.name))) scope.merged.add(lc(c.name));
        }
        return;
      }
      case 'EXPRESSION_LIST': {
        const rows: SqlNode[][] = ref.values ?? [];
        const width = rows[0]?.length ?? 0;
        const cols: OutCol[] = [];
        for (let i = 0; i < width; i++) {
          const sources: ColumnSource[] = [];
          for (const row of rows) addSources(sources, await this.expr(row[i]!, scope));
          cols.push({ name: `col${i}`, sources, kind: 'computed' });
        }
        scope.rels.push({ alias: lc(ref.alias || 'valueslist'), cols });
        return;
      }
      case 'TABLE_FUNCTION': {
        const fn = String(ref.function?.function_name ?? 'table_function');
        const names: string[] = ref.column_name_alias ?? [];
        const argSources = await this.expr(ref.function ?? {}, scope);
        const cols: OutCol[] = names.length
          ? names.map((n) => ({ name: n, sources: [...argSources], kind: 'computed' as const }))
          : [{ name: STAR, sources: argSources.length ? argSources : [{ source_table: fn, source_column: STAR }], kind: 'computed' as const }];
        scope.rels.push({ alias: lc(ref.alias || fn), cols });
        return;
      }
      case 'PIVOT': {
        const inner: Scope = { ...scope, rels: [], merged: new Set() };
        await this.fromItem(ref.source, inner);
        const cols = ref.unpivot_names?.length ? await this.unpivotColumns(ref, inner) : await this.pivotColumns(ref, inner);
        scope.rels.push({ alias: lc(ref.alias || 'pivot'), cols });
        return;
      }
      case 'EMPTY':
        return;
      default:
        return;
    }
  }

  // ------------------------------------------------------------------ PIVOT / UNPIVOT

  /**
   * PIVOT: the GROUP BY columns (or, without GROUP BY, every source column the ON and USING
   * expressions do not read) keep their sources; the pivoted columns are named by the data, so
   * they are one `*` entry derived from the ON and USING columns, which the built relation's
   * real column names replace (see reconcileWithRelation).
   */
  private async pivotColumns(ref: SqlNode, inner: Scope): Promise<OutCol[]> {
    const pivotSources: ColumnSource[] = [];
    const read = new Set<string>();
    const collect = (v: unknown): void => {
      if (!v || typeof v !== 'object') return;
      if (Array.isArray(v)) return v.forEach(collect);
      const n = v as SqlNode;
      if (n.class === 'COLUMN_REF') read.add(lc(String((n.column_names as string[]).at(-1))));
      for (const x of Object.values(n)) collect(x);
    };
    for (const p of (ref.pivots ?? []) as SqlNode[]) {
      for (const e of (p.pivot_expressions ?? []) as SqlNode[]) addSources(pivotSources, await this.expr(e, inner));
      collect(p.pivot_expressions);
    }
    for (const a of (ref.aggregates ?? []) as SqlNode[]) addSources(pivotSources, await this.expr(a, inner));
    collect(ref.aggregates);
    const all = inner.rels.flatMap((r) => r.cols);
    const groups: string[] = (ref.groups ?? []).map(String);
    const out: OutCol[] = [];
    if (groups.length) {
      for (const g of groups) out.push({ name: g, sources: this.column([g], inner), kind: this.columnKind([g], inner) });
    } else {
      for (const c of all) if (c.name !== STAR && !read.has(lc(c.name))) out.push({ name: c.name, sources: [...c.sources], kind: c.kind });
    }
    const unknown = all.filter((c) => c.name === STAR).flatMap((c) => c.sources);
    // Pivoted cells are aggregates of the USING expressions.
    out.push({ name: STAR, sources: addSources([...pivotSources], groups.length ? [] : unknown), kind: 'computed' });
    return out;
  }

  /**
   * UNPIVOT: the source columns not unpivoted keep their sources; the name column and the value
   * column(s) derive from the unpivoted columns.
   */
  private async unpivotColumns(ref: SqlNode, inner: Scope): Promise<OutCol[]> {
    const pivot: SqlNode = (ref.pivots ?? [])[0] ?? {};
    const unpivoted: OutCol[] = [];
    let complete = true;
    for (const entry of (pivot.entries ?? []) as SqlNode[]) {
      if (entry.star_expr) {
        const matched = entry.star_expr.columns ? await this.columnsStarMatches(entry.star_expr, inner) : await this.expandStar(entry.star_expr, inner);
        if (!matched || matched.some((c) => c.name === STAR)) complete = false;
        else unpivoted.push(...matched);
        continue;
      }
      for (const v of (entry.values ?? []) as SqlNode[]) {
        const name = String(v?.value ?? v?.column_names?.at?.(-1) ?? '');
        if (!name) continue;
        unpivoted.push({ name, sources: this.column([name], inner) });
      }
    }
    const valueSources: ColumnSource[] = [];
    for (const c of unpivoted) addSources(valueSources, c.sources);
    const gone = new Set(unpivoted.map((c) => lc(c.name)));
    const kept: OutCol[] = [];
    for (const r of inner.rels) {
      for (const c of r.cols) {
        if (c.name === STAR) {
          // Unknown source columns: the kept ones are unknown too (and the unpivoted set may be).
          kept.push({ name: STAR, sources: [...c.sources] });
          continue;
        }
        if (!gone.has(lc(c.name)) && complete) kept.push({ name: c.name, sources: [...c.sources], kind: c.kind });
      }
    }
    const names: string[] = (pivot.unpivot_names ?? []).map(String);
    const values: string[] = (ref.unpivot_names ?? []).map(String);
    // The name column holds column names; the value column holds the unpivoted values as they are.
    const valueKind: ColumnKind | undefined = unpivoted.some((c) => c.kind === 'computed' || c.kind === 'count') ? 'computed' : undefined;
    return [
      ...kept,
      ...names.map((n) => ({ name: n, sources: [...valueSources], kind: 'computed' as const })),
      ...values.map((n) => ({ name: n, sources: [...valueSources], kind: valueKind })),
    ];
  }

  // ------------------------------------------------------------------ stars

  private async expandStar(star: SqlNode, scope: Scope): Promise<OutCol[]> {
    const relName = star.relation_name ? lc(String(star.relation_name)) : null;
    const rels = relName ? scope.rels.filter((r) => r.alias === relName) : scope.rels;
    const exclude = new Set<string>(((star.exclude_list ?? []) as string[]).map(lc));
    const qualifiedExclude: Array<{ table: string; column: string }> = star.qualified_exclude_list ?? [];
    const replace = new Map<string, SqlNode>(((star.replace_list ?? []) as SqlNode[]).map((e) => [lc(String(e.key)), e.value]));
    const rename = new Map<string, string>(((star.rename_list ?? []) as SqlNode[]).map((e) => [lc(String(e.key?.column ?? e.key)), String(e.value)]));
    const out: OutCol[] = [];
    const seenMerged = new Map<string, OutCol>();
    let unknown: OutCol | null = null;
    for (const rel of rels) {
      for (const col of rel.cols) {
        if (col.name === STAR) {
          // SPEC: without a live relation the star goes to the first upstream dependency.
          if (!unknown) {
            unknown = { name: STAR, sources: [...col.sources] };
            out.push(unknown);
          } else if (relName) addSources(unknown.sources, col.sources);
          continue;
        }
        const key = lc(col.name);
        if (exclude.has(key)) continue;
        if (qualifiedExclude.some((q) => lc(q.column) === key && (!q.table || lc(q.table) === rel.alias))) continue;
        if (!relName && scope.merged.has(key)) {
          const first = seenMerged.get(key);
          if (first) {
            addSources(first.sources, col.sources);
            first.kind = mergeKind(first.kind, col.kind);
            continue;
          }
        }
        const replacement = replace.get(key);
        const entry: OutCol = {
          name: rename.get(key) ?? col.name,
          sources: replacement ? await this.expr(replacement, scope) : [...col.sources],
          kind: replacement ? this.kindOf(replacement, scope) : col.kind,
        };
        if (scope.merged.has(key)) seenMerged.set(key, entry);
        out.push(entry);
      }
    }
    return out;
  }

  /** The columns a COLUMNS(...) star selects, as [relation column] in order, or null when unknown. */
  private async columnsStarMatches(star: SqlNode, scope: Scope): Promise<OutCol[] | null> {
    const candidates = await this.expandStar({ ...star, columns: false, expr: undefined }, scope);
    if (candidates.some((c) => c.name === STAR)) return null;
    const expr: SqlNode | undefined = star.expr;
    if (!expr) return candidates;
    // The live database evaluates the selector (regex or lambda) exactly as DuckDB would.
    if (this.env.describe && this.env.deparse) {
      const text = await this.tryDeparse(star);
      const names = text === null ? null : await this.describeOver(`SELECT ${text}`, candidates);
      if (names) return names.map((n) => candidates.find((c) => c.name === n) ?? { name: n, sources: [] });
    }
    if (expr.class === 'CONSTANT' && typeof expr.value?.value === 'string') {
      try {
        const re = new RegExp(String(expr.value.value));
        return candidates.filter((c) => re.test(c.name));
      } catch {
        return null;
      }
    }
    return null;
  }

  /** Runs a select list over stand-in columns of the same names in the live database. */
  private async describeOver(selectText: string, candidates: OutCol[]): Promise<string[] | null> {
    if (!this.env.describe) return null;
    const standIn = candidates.length
      ? candidates.map((c) => `NULL AS "${c.name.replace(/"/g, '""')}"`).join(', ')
      : 'NULL AS "__dp_none"';
    try {
      return await this.env.describe(`${selectText} FROM (SELECT ${standIn}) AS "__dp_columns"`);
    } catch {
      return null;
    }
  }

  /** A select item holding COLUMNS(...): one output per matched column. */
  private async expandColumnsExpression(item: SqlNode, star: SqlNode, scope: Scope): Promise<OutCol[]> {
    const matches = await this.columnsStarMatches(star, scope);
    const rest = await this.expr(item, scope, star);
    if (!matches) {
      const sources = addSources(scope.rels.flatMap((r) => r.cols.filter((c) => c.name === STAR).flatMap((c) => c.sources)).slice(0, 1), rest);
      return [{ name: STAR, sources }];
    }
    let names = matches.map((m) => m.name);
    if (item !== star && !item.alias) {
      const all = await this.expandStar({ ...star, columns: false, expr: undefined }, scope);
      const text = await this.tryDeparse(item);
      const described = text === null ? null : await this.describeOver(`SELECT ${text}`, all);
      if (described && described.length === matches.length) names = described;
    } else if (item.alias && matches.length === 1) {
      names = [String(item.alias)];
    }
    // COLUMNS(*) alone keeps each column; an expression over it computes.
    return matches.map((m, i) => ({ name: names[i] ?? m.name, sources: addSources([...m.sources], rest), kind: item === star ? m.kind : ('computed' as const) }));
  }

  // ------------------------------------------------------------------ expressions

  /** Sources of an expression: every column it reads. `skip` is a node to leave out. */
  async expr(e: SqlNode, scope: Scope, skip?: SqlNode): Promise<ColumnSource[]> {
    const out: ColumnSource[] = [];
    const walk = async (v: unknown, sc: Scope): Promise<void> => {
      if (v === skip || v === null || typeof v !== 'object') return;
      if (Array.isArray(v)) {
        for (const x of v) await walk(x, sc);
        return;
      }
      const n = v as SqlNode;
      switch (n.class) {
        case 'COLUMN_REF':
          addSources(out, this.column(n.column_names as string[], sc));
          return;
        case 'SUBQUERY': {
          const cols = await this.node(n.subquery.node, sc, sc.ctes);
          for (const c of cols) addSources(out, c.sources);
          if (n.child) await walk(n.child, sc);
          return;
        }
        case 'LAMBDA': {
          const params = lambdaParams(n.lhs);
          await walk(n.expr, { ...sc, lambdaParams: new Set([...sc.lambdaParams, ...params]) });
          return;
        }
        case 'STAR': {
          const cols = n.columns ? await this.columnsStarMatches(n, sc) : await this.expandStar(n, sc);
          for (const c of cols ?? (await this.expandStar({ ...n, columns: false, expr: undefined }, sc))) addSources(out, c.sources);
          return;
        }
        default:
          for (const [k, x] of Object.entries(n)) if (k !== 'query_location' && x && typeof x === 'object') await walk(x, sc);
      }
    };
    await walk(e, scope);
    return out;
  }

  /** Resolves a column reference through the scope chain: qualified names first, then bare names. */
  column(names: string[], scope: Scope): ColumnSource[] {
    const parts = names.map(String);
    if (parts.length === 1 && scope.lambdaParams.has(lc(parts[0]!))) return [];
    if (parts.length >= 2) {
      for (let sc: Scope | undefined = scope; sc; sc = sc.parent) {
        if (parts.length >= 3) {
          const rel = sc.rels.find((r) => r.schema === lc(parts[0]!) && r.alias === lc(parts[1]!));
          if (rel) return columnOf(rel, parts[2]!) ?? [];
        }
        const rel = sc.rels.find((r) => r.alias === lc(parts[0]!));
        if (rel) return columnOf(rel, parts[1]!) ?? [];
      }
    }
    // Unqualified, or a struct field access `col.field`: find the column by name.
    const name = parts[0]!;
    for (let sc: Scope | undefined = scope; sc; sc = sc.parent) {
      const found: ColumnSource[] = [];
      for (const rel of sc.rels) {
        const exact = rel.cols.find((c) => c.name !== STAR && lc(c.name) === lc(name));
        if (exact) addSources(found, exact.sources);
      }
      if (found.length) return found;
      const alias = sc.aliases.get(lc(name));
      if (alias) return [...alias];
      if (SPECIAL_REFS.has(lc(name))) return [];
      const unknown = sc.rels.filter((r) => r.cols.some((c) => c.name === STAR));
      // A USING column exists on both sides; any other unknown column goes to the first relation.
      for (const rel of sc.merged.has(lc(name)) ? unknown : unknown.slice(0, 1)) {
        addSources(found, throughStar(rel.cols.find((c) => c.name === STAR)!, name));
      }
      if (found.length) return found;
    }
    return [];
  }

  // ------------------------------------------------------------------ kinds

  /** How a select item's value relates to its sources (see ColumnKind). */
  kindOf(item: SqlNode, scope: Scope): ColumnKind {
    if (item.class === 'COLUMN_REF') return this.columnKind(item.column_names as string[], scope);
    if (CAST_CLASSES.has(String(item.class)) && item.child) return this.kindOf(item.child, scope) === 'pass' ? 'pass' : 'computed';
    if (item.class === 'AGGREGATE' || item.class === 'FUNCTION') {
      const fn = lc(String(item.function_name ?? ''));
      const args: SqlNode[] = item.children ?? [];
      const plainCount = fn === 'count' || fn === 'count_star';
      if (plainCount && !item.distinct && !item.filter && !item.order_bys?.orders?.length && args.every((a) => a.class === 'COLUMN_REF' || a.class === 'CONSTANT')) {
        return 'count';
      }
    }
    return 'computed';
  }

  /** The kind of a column a reference resolves to (a select alias counts as computed). */
  columnKind(names: string[], scope: Scope): ColumnKind {
    const parts = names.map(String);
    if (parts.length === 1 && scope.lambdaParams.has(lc(parts[0]!))) return 'computed';
    const ofRel = (rel: Rel, name: string): ColumnKind | undefined => {
      const exact = rel.cols.find((c) => c.name !== STAR && lc(c.name) === lc(name));
      if (exact) return exact.kind ?? 'pass';
      const star = rel.cols.find((c) => c.name === STAR);
      return star ? (star.kind ?? 'pass') : undefined;
    };
    if (parts.length >= 2) {
      for (let sc: Scope | undefined = scope; sc; sc = sc.parent) {
        if (parts.length >= 3) {
          const rel = sc.rels.find((r) => r.schema === lc(parts[0]!) && r.alias === lc(parts[1]!));
          if (rel) return parts.length === 3 ? (ofRel(rel, parts[2]!) ?? 'computed') : 'computed';
        }
        const rel = sc.rels.find((r) => r.alias === lc(parts[0]!));
        // `t.col.field` reads a part of the value: computed.
        if (rel) return parts.length === 2 ? (ofRel(rel, parts[1]!) ?? 'computed') : 'computed';
      }
      return 'computed';
    }
    const name = parts[0]!;
    for (let sc: Scope | undefined = scope; sc; sc = sc.parent) {
      const kinds: ColumnKind[] = [];
      for (const rel of sc.rels) {
        const exact = rel.cols.find((c) => c.name !== STAR && lc(c.name) === lc(name));
        if (exact) kinds.push(exact.kind ?? 'pass');
      }
      if (kinds.length) return kinds.every((k) => k === 'pass') ? 'pass' : 'computed';
      if (sc.aliases.has(lc(name))) return 'computed';
      const unknown = sc.rels.find((r) => r.cols.some((c) => c.name === STAR));
      if (unknown) return unknown.cols.find((c) => c.name === STAR)!.kind ?? 'pass';
    }
    return 'computed';
  }

  // ------------------------------------------------------------------ naming

  /** The name DuckDB gives an unaliased select item. */
  async expressionName(item: SqlNode): Promise<string> {
    if (item.class === 'COLUMN_REF') return String((item.column_names as string[]).at(-1));
    return (await this.tryDeparse(item)) ?? fallbackName(item);
  }

  /** The SQL text of an expression, or null when there is no deparser or it refuses the node. */
  private async tryDeparse(item: SqlNode): Promise<string | null> {
    if (!this.env.deparse) return null;
    try {
      return await this.deparseExpression(item);
    } catch {
      return null;
    }
  }

  private async deparseExpression(item: SqlNode): Promise<string> {
    const bare = stripLocations({ ...item, alias: '' }) as SqlNode;
    const key = JSON.stringify(bare);
    const hit = this.deparseCache.get(key);
    if (hit !== undefined) return hit;
    const tree: SerializedSql = {
      error: false,
      statements: [
        {
          node: {
            type: 'SELECT_NODE',
            modifiers: [],
            cte_map: { map: [] },
            select_list: [bare],
            from_table: { type: 'EMPTY', alias: '', sample: null },
            where_clause: null,
            group_expressions: [],
            group_sets: [],
            aggregate_handling: 'STANDARD_HANDLING',
            having: null,
            sample: null,
            qualify: null,
          },
        },
      ],
    };
    const sql = await this.env.deparse!(tree);
    const text = sql.replace(/^SELECT\s+/i, '').replace(/;?\s*$/, '');
    this.deparseCache.set(key, text);
    return text;
  }
}
