/**
 * Models written natively for a warehouse target (`-- @config dialect=clickhouse`): their SQL runs
 * on the target as written, so DuckDB's parser is not asked (it refuses ClickHouse's `arrayJoin`,
 * `FINAL`, `SETTINGS`, `LIMIT n BY`, `ANY LEFT JOIN`...). Their references come from a parser of
 * ClickHouse's own dialect, `@polyglot-sql/sdk` (the transpiler the target plugin already uses,
 * imported only when a project has such a model): its `analyzeQuery` lists the base tables of the
 * statement, through CTEs, subqueries and set operations. That works offline (discovery, the DAG
 * and `dp check` need no server) and is deterministic (no server version decides the graph).
 *
 * `-- @depends_on a, b` adds to what the parser found (a dictionary read by `dictGet`, a table
 * named in a string, is not a table reference), and is the way out when the parser cannot read
 * the text: the model is then accepted with what it declares, and its references count as not
 * known (masking treats it as reading everything). Without a declaration, unreadable SQL is a
 * parse error naming the model, as for DuckDB SQL.
 *
 * ClickHouse resolves an unqualified table name in the server's default database, not in `main`:
 * a native model must qualify what it reads (`main.orders`), or dp's graph and the server would
 * disagree on what it reads. ClickHouse's own `system` database is not a dependency.
 */
import { loadPolyglot } from '../../sdk/index.js';
import type { TableRef } from './sqltree.js';

export interface NativeReferences {
  /** Whether the ClickHouse parser read the statement. */
  parses: boolean;
  refs: TableRef[];
  /** The parser's refusal, or a reference dp cannot place; null when fine. */
  error: string | null;
}

/** The base tables a ClickHouse statement reads, by ClickHouse's grammar (see the file comment). */
export async function nativeReferences(body: string): Promise<NativeReferences> {
  const { analyzeQuery, Dialect } = await loadPolyglot();
  let result: ReturnType<typeof analyzeQuery>;
  try {
    result = analyzeQuery(body, Dialect.ClickHouse);
  } catch (e) {
    result = { success: false, error: e instanceof Error ? e.message : String(e) };
  }
  if (!result.success || !result.analysis) return { parses: false, refs: [], error: `ClickHouse SQL that dp cannot read: ${String(result.error ?? 'not one query').split('\n')[0]}` };
  const refs: TableRef[] = [];
  const unqualified: string[] = [];
  for (const t of result.analysis.baseTables) {
    if (t.kind !== 'table' || !t.table) continue;
    if (t.catalog) return { parses: true, refs: [], error: `'${t.name}' has three parts; a ClickHouse table is database.table` };
    if (!t.schema) {
      unqualified.push(t.table);
      continue;
    }
    if (t.schema.toLowerCase() === 'system') continue;
    if (!refs.some((r) => r.schema === t.schema && r.table === t.table)) refs.push({ schema: t.schema, table: t.table, location: null });
  }
  if (unqualified.length) {
    const names = unqualified.map((n) => `'${n}'`).join(', ');
    return { parses: true, refs, error: `${names} ${unqualified.length > 1 ? 'are' : 'is'} not qualified: ClickHouse resolves an unqualified name in the server's default database, not main; write main.${unqualified[0]} (or its schema)` };
  }
  return { parses: true, refs, error: null };
}

/** The refusal of a native model on an environment that builds into the DuckDB file. */
export function nativeOnDuckdb(file: { path: string; full_name: string; dialect: string | null }): string {
  return `${file.path}: ${file.full_name} is written in ClickHouse SQL (@config dialect=${file.dialect}); it runs on a ClickHouse target only (dp transform --env <an environment whose target is clickhouse>), not on the DuckDB file`;
}
