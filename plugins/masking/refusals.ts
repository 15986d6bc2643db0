/**
 * Refusals of a query before any rewrite: statistics functions over masked columns, star
 * expressions of predicate clauses that expand to a masked column, and user macros whose body
 * reads masked columns. (The key schema, refused for any role, is keys.ts KeySchemaGuard's.)
 */
import { type MacroBody, type PluginContext, quoteLiteral, walkSqlTree } from '../../sdk/index.js';
import { type PlanFor, planScans, type StarUse, starSelection } from './rewrite.js';

/**
 * Functions whose result describes their input's statistics (min/max DuckDB propagates through
 * expressions) rather than the values: on a masked column they could show raw bounds.
 */
const STATISTICS_FUNCTIONS = new Set(['stats']);

/** The first statistics function a parse calls, or null. */
export function statisticsCall(root: unknown): string | null {
  let found: string | null = null;
  walkSqlTree(root, (n) => {
    if (found || n.class !== 'FUNCTION' || typeof n.function_name !== 'string') return;
    if (STATISTICS_FUNCTIONS.has(n.function_name.toLowerCase())) found = n.function_name.toLowerCase();
  });
  return found;
}

/**
 * The first star expression of a predicate clause that expands to a masked column. DuckDB
 * expands `*`, `COLUMNS(...)` and `ORDER BY ALL` before binding, so each is resolved against
 * the masked columns the query reads; a regular expression is matched by DuckDB itself (RE2,
 * as COLUMNS does), a lambda or anything else counts as matching every masked column.
 */
export async function starRefusal(db: PluginContext['db'], stars: StarUse[], maskedColumns: string[]): Promise<{ column: string; clause: string } | null> {
  if (!stars.length || !maskedColumns.length) return null;
  const names = [...new Set(maskedColumns)];
  for (const { clause, star } of stars) {
    const sel = starSelection(star);
    let hit: string | undefined;
    if (sel.kind === 'all') hit = names.find((n) => !sel.exclude.has(n.toLowerCase()));
    else if (sel.kind === 'names') hit = names.find((n) => sel.names.some((x) => x.toLowerCase() === n.toLowerCase()));
    else if (sel.kind === 'regex') {
      try {
        const list = `[${names.map((n) => quoteLiteral(n)).join(', ')}]::VARCHAR[]`;
        const pattern = quoteLiteral(sel.pattern);
        const rows = await db.all<{ n: string }>(`SELECT unnest(list_filter(${list}, n -> regexp_matches(n, ${pattern}) OR regexp_matches(lower(n), ${pattern}))) AS n`);
        hit = rows[0]?.n;
      } catch {
        hit = names[0];
      }
    } else hit = names[0];
    if (hit) return { column: hit.toLowerCase(), clause };
  }
  return null;
}

/**
 * The first user macro the query reaches (read-only validation lists them, nested ones
 * included) whose body reads a relation with masked columns, or one the catalog does not
 * know. DuckDB expands macros after the rewrite, so such a macro would read the table unmasked.
 */
export function macroReadingMasks(macros: MacroBody[], planFor: PlanFor): { macro: string; table: string } | null {
  for (const { name, tree } of macros) {
    const plan = planScans(tree.statements, planFor);
    const read = plan.wraps[0]?.ref ?? plan.unresolved[0];
    if (read) return { macro: name, table: [read.catalog, read.schema, read.table].filter(Boolean).join('.') };
  }
  return null;
}
