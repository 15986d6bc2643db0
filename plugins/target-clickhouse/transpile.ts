/**
 * Models stay in DuckDB SQL: each SELECT body is transpiled to ClickHouse by `@polyglot-sql/sdk`
 * (its WASM transpiler, imported on first use), cached by text. Before that, the DuckDB parse
 * tree (the kernel's parser, not a hand-written one) is searched for constructs the connected
 * server cannot run, so the error names the construct instead of letting the server guess; what
 * the tree cannot tell, the server's `DESCRIBE (SELECT ...)` catches before anything runs.
 */
import { badRequest, loadPolyglot, type SqlNode, type TargetCapabilities } from '../../sdk/index.js';

const MAX_CACHED = 2000;
const cache = new Map<string, string>();

/** DuckDB SQL → ClickHouse SQL (one statement); a DpError `untranslatable_sql` when the transpiler refuses. */
export async function transpileToClickHouse(sql: string, what: string): Promise<string> {
  const hit = cache.get(sql);
  if (hit !== undefined) return hit;
  const { transpile, Dialect } = await loadPolyglot();
  const r = transpile(sql, Dialect.DuckDB, Dialect.ClickHouse) as { success: boolean; sql?: string[]; error?: string | null };
  if (!r.success || !r.sql || r.sql.length !== 1) {
    throw badRequest('untranslatable_sql', `${what}: the DuckDB SQL cannot be transpiled to ClickHouse: ${r.error ?? `${r.sql?.length ?? 0} statements`}`, { model: what });
  }
  const out = r.sql[0]!;
  if (cache.size >= MAX_CACHED) cache.delete(cache.keys().next().value!);
  cache.set(sql, out);
  return out;
}

/** How many transpiled texts are cached (tests read it). */
export function transpileCacheSize(): number {
  return cache.size;
}

/**
 * The constructs of a DuckDB parse tree a server with these capabilities cannot run, by name:
 * window functions, CTEs, GROUP BY ALL, QUALIFY (before their ClickHouse versions), and table
 * functions (they read files or the host of the machine dp runs on, which the server is not).
 */
export function unsupportedConstructs(tree: SqlNode, caps: TargetCapabilities): string[] {
  const found = new Set<string>();
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(walk);
    if (!node || typeof node !== 'object') return;
    const n = node as SqlNode;
    if (n.class === 'WINDOW' && !caps.windowFunctions) found.add(`window function ${String(n.function_name ?? '').toLowerCase()}() OVER (...)`);
    if (n.cte_map?.map?.length && !caps.ctes) found.add('WITH ... AS (SELECT ...) (a common table expression)');
    if (n.aggregate_handling === 'FORCE_AGGREGATES' && !caps.groupByAll) found.add('GROUP BY ALL');
    if (n.qualify && !caps.windowFunctions) found.add('QUALIFY');
    if (n.type === 'TABLE_FUNCTION') found.add(`table function ${String(n.function?.function_name ?? '').toLowerCase()}(...) (it reads files of the machine dp runs on)`);
    for (const v of Object.values(n)) if (v && typeof v === 'object') walk(v);
  };
  walk(tree);
  return [...found];
}

/** The refusal of a model whose SQL uses what the target cannot run. */
export function unsupportedError(model: string, constructs: string[], version: string) {
  return badRequest(
    'unsupported_on_target',
    `${model}: ClickHouse ${version} cannot run ${constructs.join(', ')}; rewrite the model without it, or write it natively with -- @config dialect=clickhouse`,
    { model, constructs, version },
  );
}
