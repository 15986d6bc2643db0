/**
 * Column-level lineage of one SELECT from DuckDB's own parse tree (json_serialize_sql).
 *
 * This module is pure: it gets the parser, the column lists of upstream relations and
 * (optionally) the live database through `LineageEnv`, so it runs the same inside the
 * plugin and in unit tests.
 *
 * Rules (README.md explains them for users):
 * - The sources of an output column are every upstream column its value is computed from:
 *   function arguments, CASE conditions and branches, window PARTITION BY / ORDER BY
 *   columns, aggregate FILTER and ORDER BY columns, scalar subquery outputs. WHERE, JOIN
 *   conditions and GROUP BY decide which rows exist, not a value, so they are not sources.
 * - A relation whose columns are unknown (no live relation, not a model with a known
 *   output) is represented by a single `*` column; a reference `x` to it resolves to
 *   `{relation, x}` and an unqualified `SELECT *` over it yields `*` attributed to the first
 *   such relation (SPEC: "attributed to the first upstream dependency").
 * - USING / NATURAL join columns appear once in `*` and derive from both sides.
 * - Duplicate output names get DuckDB's CREATE TABLE AS suffixes (`id`, `id_1`).
 */
import type { ColumnSource } from '../../sdk/index.js';
import { Analyzer } from './column-analyzer.js';
import { dedupeNames, lc, STAR, throughStar, type ColumnKind, type ColumnLineageResult, type LineageEnv } from './column-scope.js';

export { STAR, type ColumnKind, type ColumnLineageResult, type LineageEnv } from './column-scope.js';

/** Thrown when the parser rejects the SQL (the caller falls back to regex extraction). */
export class UnparseableSql extends Error {}

/** Column lineage of one SELECT statement through DuckDB's parser. */
export async function columnLineage(sql: string, dependsOn: string[], env: LineageEnv): Promise<ColumnLineageResult> {
  const parsed = await env.parse(sql);
  if (!parsed.ok) throw new UnparseableSql(parsed.error);
  const statements = parsed.tree.statements;
  const root = statements[statements.length - 1]?.node;
  if (!root) throw new UnparseableSql('no statement');
  const analyzer = new Analyzer(env, dependsOn);
  const cols = dedupeNames(await analyzer.node(root, undefined, new Map()));
  const columns: Record<string, ColumnSource[]> = {};
  const kinds: Record<string, ColumnKind> = {};
  for (const c of cols) {
    columns[c.name] = c.sources;
    kinds[c.name] = c.kind ?? 'pass';
  }
  return { columns, kinds, order: cols.map((c) => c.name), relations: analyzer.relations, complete: !cols.some((c) => c.name === STAR) };
}

/**
 * Lineage named after the built relation's real columns: an analysis that could not name every
 * output (a `*` entry: PIVOT values, a star over an unknown relation) takes the relation's
 * column list; names the analysis knows keep their sources, the others come through the `*`.
 */
export function reconcileWithRelation(result: ColumnLineageResult, columns: string[] | undefined): ColumnLineageResult {
  if (result.complete || !columns?.length) return result;
  const star = result.columns[STAR];
  const out: Record<string, ColumnSource[]> = {};
  const kinds: Record<string, ColumnKind> = {};
  for (const name of columns) {
    const hit = result.order.find((o) => o !== STAR && lc(o) === lc(name));
    out[name] = hit ? [...result.columns[hit]!] : star ? throughStar({ name: STAR, sources: star }, name) : [];
    // A column named only by the built relation is unknown here: computed unless the star passes columns through.
    kinds[name] = hit ? (result.kinds[hit] ?? 'pass') : star ? (result.kinds[STAR] ?? 'computed') : 'computed';
  }
  return { columns: out, kinds, order: [...columns], relations: result.relations, complete: true };
}
