/**
 * User queries on a ClickHouse target (`dp query --env prod`, `POST /api/query`, the SQL page):
 * the kernel's guarded runner validates the DuckDB SQL against this target's catalog, the
 * masking rewrite runs in DuckDB SQL as on the file, and only the final text comes here. Before
 * anything runs on the server it is
 *
 * 1. searched on DuckDB's parse tree for what the server cannot run or must not (table
 *    functions, constructs of later versions: `unsupportedConstructs`),
 * 2. transpiled to ClickHouse (`@polyglot-sql/sdk`, cached by text), masking's `* REPLACE`
 *    wrappers first expanded into their columns on a server without it (star-expand.ts),
 * 3. read back into DuckDB SQL by the same transpiler and checked again by the runner's own
 *    read-only validation and final checks (masking's: every masked scan still wrapped in its
 *    masks, every late mask still around its column), so a transpile that dropped or changed a
 *    mask is refused rather than run,
 * 4. planned by the server (`DESCRIBE (SELECT ...)`), as model bodies are,
 *
 * and then run with `readonly=2` (the server refuses any write) and the role's remaining time as
 * `max_execution_time`, its `$name` parameters sent as query parameters beside the text
 * (params.ts), never written into it. A stop (deadline, client gone) sends `KILL QUERY` for the query's id:
 * closing the HTTP request does not stop a ClickHouse query.
 */
import crypto from 'node:crypto';
import {
  badRequest,
  isDpError,
  loadPolyglot,
  type CatalogColumn,
  type DatabasePort,
  type QueryTarget,
  type QueryTargetRef,
  type QueryTargetRun,
  type TabularResult,
  type TargetConfig,
  walkSqlTree,
} from '../../sdk/index.js';
import { serverMessage, type ClickHouseTarget } from './client.js';
import { bindParameters, hasQueryParameters, parameterNodes } from './params.js';
import { contractExpanded, expandStarReplace, hasStarReplace } from './star-expand.js';
import { transpileToClickHouse, unsupportedConstructs } from './transpile.js';

/** The database an unqualified name resolves in, as on the DuckDB file (`orders` is `main.orders`). */
export const DEFAULT_SCHEMA = 'main';
/** The name masking's catalog gives the target's one database (its tables are `<schema>.<table>` in it). */
const CURRENT = 'clickhouse';
/** dp's local schemas: never on the target (the keyed masks read `_masking.keys`, which stays in the file). */
const LOCAL_SCHEMAS = new Set(['_masking', '_service']);
/** How long a read of the target's relation list serves name resolution (a query resolves its names three times). */
const RELATIONS_TTL_MS = 1000;
const WHAT = 'The query';

const SIMPLE_TYPES: Record<string, string> = {
  String: 'VARCHAR',
  UUID: 'UUID',
  Int8: 'TINYINT',
  Int16: 'SMALLINT',
  Int32: 'INTEGER',
  Int64: 'BIGINT',
  UInt8: 'UTINYINT',
  UInt16: 'USMALLINT',
  UInt32: 'UINTEGER',
  UInt64: 'UBIGINT',
  Float32: 'FLOAT',
  Float64: 'DOUBLE',
  Date: 'DATE',
  DateTime: 'TIMESTAMP',
  Bool: 'BOOLEAN',
};

/**
 * A ClickHouse column type as DuckDB names it, for masking, whose masks are DuckDB SQL typed by
 * the column (`CAST(NULL AS BIGINT)`). A type without a DuckDB twin keeps its ClickHouse name:
 * masking then treats it as no plain type (no typed NULL, no masking at the result).
 */
export function duckdbType(clickhouseType: string): string {
  let t = clickhouseType.trim();
  for (let m = /^(?:Nullable|LowCardinality)\((.*)\)$/.exec(t); m; m = /^(?:Nullable|LowCardinality)\((.*)\)$/.exec(t)) t = m[1]!;
  if (SIMPLE_TYPES[t]) return SIMPLE_TYPES[t]!;
  if (/^FixedString\(\d+\)$/.test(t) || /^Enum(8|16)\(/.test(t)) return 'VARCHAR';
  if (/^DateTime(64)?\(/.test(t)) return 'TIMESTAMP';
  const decimal = /^Decimal\((\d+),\s*(\d+)\)$/.exec(t);
  if (decimal) return `DECIMAL(${decimal[1]},${decimal[2]})`;
  return clickhouseType;
}

/** ClickHouse SQL read back into DuckDB SQL (the transpiler's own reading of what it wrote). */
async function readBack(clickhouseSql: string): Promise<string> {
  const { transpile, Dialect } = await loadPolyglot();
  const r = transpile(clickhouseSql, Dialect.ClickHouse, Dialect.DuckDB) as { success: boolean; sql?: string[]; error?: string | null };
  if (!r.success || !r.sql || r.sql.length !== 1) throw refusal(`its ClickHouse text cannot be read back to be checked (${r.error ?? 'no single statement'})`);
  return r.sql[0]!;
}

/**
 * A keyed mask (consistent_hash, noise, date_shift) anywhere but at the result: its key stays in
 * dp, so the server cannot compute it (docs/security.md "Keyed masks on a warehouse target").
 */
function keyedRefusal() {
  return refusal(
    'its keyed masks (consistent_hash, noise, date_shift) would have to be computed on the server, and their keys stay in dp: on a ClickHouse target they mask only a column read as a whole select item of a plain SELECT (dp masks those values itself); the keyed masks cannot mask on a ClickHouse target what the query computes from the column',
  );
}

function refusal(why: string) {
  return badRequest('unsupported_on_target', `${WHAT} cannot run on the ClickHouse target: ${why}`, { model: 'query' });
}

export class ClickHouseQueryTarget implements QueryTarget {
  readonly id: string;
  private relations: { at: number; names: Promise<Set<string>> } | null = null;

  constructor(
    private readonly target: ClickHouseTarget,
    /** The target as unqualified names resolve on it: its default database is `main` (see queriesIn). */
    private readonly queries: () => Promise<ClickHouseTarget>,
    private readonly db: Pick<DatabasePort, 'parse' | 'deparse'>,
    config: TargetConfig,
  ) {
    this.id = `clickhouse:${config.url ?? ''}:${config.database ?? ''}`;
  }

  async resolvableColumns(): Promise<{ current: string; columns: CatalogColumn[] }> {
    const columns = await this.target.columns();
    return { current: CURRENT, columns: columns.map((c) => ({ ...c, database: CURRENT, type: duckdbType(c.type) })) };
  }

  private relationNames(): Promise<Set<string>> {
    if (!this.relations || Date.now() - this.relations.at > RELATIONS_TTL_MS) {
      const names = this.target.relations().then((rels) => new Set(rels.map((r) => `${r.schema}\u0000${r.name}`)));
      names.catch(() => (this.relations = null));
      this.relations = { at: Date.now(), names };
    }
    return this.relations.names;
  }

  /** ClickHouse resolves names exactly as written (case-sensitive), in `main` when unqualified; it has no catalog level. */
  async unresolved(refs: QueryTargetRef[]): Promise<QueryTargetRef[]> {
    for (const r of refs) {
      const schema = r.schema.toLowerCase();
      if (!LOCAL_SCHEMAS.has(schema)) continue;
      if (schema === '_masking') {
        throw keyedRefusal();
      }
      throw refusal(`it reads dp's own schema ${schema}, which stays in the local DuckDB file`);
    }
    const names = await this.relationNames();
    return refs.filter((r) => r.catalog !== '' || !names.has(`${r.schema || DEFAULT_SCHEMA}\u0000${r.table}`));
  }

  /** A table's columns on the target, in order (star-expand.ts). */
  private readonly columnsOf = async (schema: string, table: string) => (await this.target.columns({ schema, table })).map((c) => c.name);

  /** The final DuckDB SQL as ClickHouse SQL and its parameters' values, checked (steps 1-4 of the file comment). */
  private async clickhouseSql(sql: string, run: QueryTargetRun): Promise<{ sql: string; params?: Record<string, unknown> }> {
    const caps = await this.target.capabilities();
    const parsed = await this.db.parse(sql);
    let parameters: string[] = [];
    if (parsed.ok) {
      // Before anything reaches the server: a keyed mask's key table is dp's (its row ids must not even be sent).
      walkSqlTree(parsed.tree.statements, (n) => {
        if (n.type === 'BASE_TABLE' && String(n.schema_name ?? '').toLowerCase() === '_masking') throw keyedRefusal();
      });
      parameters = parameterNodes(parsed.tree.statements);
      if (parameters.length && !hasQueryParameters(caps.version)) throw refusal(`ClickHouse ${caps.version} has no query parameters ({name:Type}, 19.5 and later), and dp never writes a value into the text; write the values in the SQL`);
      const constructs = parsed.tree.statements.flatMap((s) => unsupportedConstructs(s.node, caps));
      if (constructs.length) throw refusal(`ClickHouse ${caps.version} cannot run ${constructs.join(', ')}`);
    }
    // A server without SELECT * REPLACE gets masking's wrappers as their columns, and the checks see them as written (star-expand.ts).
    const expanded = hasStarReplace(caps.version) ? null : await expandStarReplace(this.db, sql, this.columnsOf, DEFAULT_SCHEMA);
    const clickhouse = await transpileToClickHouse(expanded ?? sql, WHAT);
    try {
      const back = await readBack(clickhouse);
      await run.verify(expanded === null ? back : await contractExpanded(this.db, back, this.columnsOf, DEFAULT_SCHEMA));
    } catch (e) {
      if (isDpError(e) && e.code === 'unsupported_on_target') throw e;
      const why = isDpError(e) ? e.message : 'its check failed';
      throw refusal(`its ClickHouse text does not pass the checks the DuckDB text passed (${why})`);
    }
    const bound: { sql: string; params?: Record<string, unknown> } = parameters.length ? bindParameters(clickhouse, parameters, run.params) : { sql: clickhouse };
    try {
      await (await this.queries()).describe(bound.sql, { signal: run.signal, settings: this.settings(run), params: bound.params });
    } catch (e) {
      if (run.signal.aborted) throw e;
      throw badRequest('unsupported_on_target', `${WHAT}: ClickHouse ${caps.version} cannot run it: ${serverMessage(e).replace(/^ClickHouse: /, '')}`, { model: 'query', version: caps.version });
    }
    return bound;
  }

  /** Read-only on the server too, and no longer than the role's deadline. */
  private settings(run: QueryTargetRun): Record<string, number> {
    return { readonly: 2, max_execution_time: Math.max(1, Math.ceil(run.remainingMs / 1000)) };
  }

  async read(sql: string, window: { offset: number; limit: number }, run: QueryTargetRun): Promise<TabularResult> {
    const clickhouse = await this.clickhouseSql(sql, run);
    // On lines of their own: a line comment the transpiler kept ends before the parenthesis.
    const page = `SELECT * FROM (\n${clickhouse.sql}\n) LIMIT ${Math.trunc(window.limit)} OFFSET ${Math.trunc(window.offset)}`;
    return (await this.queries()).query(page, { signal: run.signal, settings: this.settings(run), params: clickhouse.params });
  }

  async stream(sql: string, run: QueryTargetRun) {
    const clickhouse = await this.clickhouseSql(sql, run);
    const target = await this.queries();
    // The stop must reach the server for as long as rows come, not only while the request starts.
    const queryId = `dp_${crypto.randomUUID()}`;
    const kill = () => void target.interrupt(queryId).catch(() => {});
    run.signal.addEventListener('abort', kill, { once: true });
    try {
      const s = await target.stream(clickhouse.sql, { queryId, settings: this.settings(run), params: clickhouse.params });
      const chunks = (async function* () {
        try {
          yield* s.chunks;
        } finally {
          run.signal.removeEventListener('abort', kill);
        }
      })();
      return { columns: s.columns, column_types: s.column_types, chunks };
    } catch (e) {
      run.signal.removeEventListener('abort', kill);
      throw e;
    }
  }
}

/** Schemas, tables and columns of the target, for the SQL page's catalog (ClickHouse's own type names). */
export async function browseTarget(target: ClickHouseTarget) {
  const [relations, columns] = await Promise.all([target.relations(), target.columns()]);
  const byTable = new Map<string, Array<{ name: string; type: string }>>();
  for (const c of columns) {
    const key = `${c.schema}\u0000${c.table}`;
    if (!byTable.has(key)) byTable.set(key, []);
    byTable.get(key)!.push({ name: c.name, type: c.type });
  }
  return {
    schemas: [...new Set(relations.map((r) => r.schema))],
    tables: relations.map((r) => ({ schema: r.schema, name: r.name, type: r.kind, columns: byTable.get(`${r.schema}\u0000${r.name}`) ?? [] })),
  };
}
