import type { DatabasePort, SerializedSql, SqlNode } from '../sdk/db.js';
import type { MacroBody } from '../sdk/hooks.js';
import { badRequest, forbidden } from '../sdk/errors.js';
import { walkSqlTree } from '../sdk/sql.js';

/**
 * Table functions a read-only query may call. Everything else (read_csv*, read_parquet,
 * read_json*, read_text, read_blob, glob, query, query_table, parquet_*, duckdb_secrets,
 * and whatever an extension adds later) is refused: an allowlist fails closed.
 */
const ALLOWED_TABLE_FUNCTIONS = new Set([
  'range',
  'generate_series',
  'unnest',
  'json_each',
  'json_tree',
  'duckdb_tables',
  'duckdb_views',
  'duckdb_columns',
  'duckdb_schemas',
  'duckdb_databases',
  'duckdb_types',
  'duckdb_functions',
  'duckdb_keywords',
  'duckdb_constraints',
  'duckdb_indexes',
  'duckdb_sequences',
  'duckdb_dependencies',
  'pragma_table_info',
  'pragma_show',
  'pragma_version',
  'pragma_database_size',
  'sql_auto_complete',
  'repeat_row',
]);

/** Scalar functions that change state or reach outside the database. */
const DENIED_SCALAR_FUNCTIONS = new Set(['nextval', 'setseed', 'getenv', 'read_text', 'read_blob']);

/** A FROM 'data.csv' / FROM 's3://...' is a replacement scan that reads a file. */
const FILE_LIKE = /[/\\:]|\.(csv|tsv|txt|parquet|json|jsonl|ndjson|gz|zst|xlsx?|arrow|avro|db|duckdb|sqlite)$/i;

export function readOnlyError(reason: string, details: Record<string, unknown> = {}) {
  return badRequest('read_only_violation', `Only read-only SELECT queries are allowed here: ${reason}`, details);
}


/** What validation read: the statement's parse, and the parse of every user macro it reaches. */
export interface ReadOnlyStatement {
  tree: SerializedSql;
  macros: MacroBody[];
}

/** Credentials live here; no query reads them, whatever the role. */
const CREDENTIAL_TABLES = new Set(['users', 'tokens']);

/**
 * Throws read_only_violation unless sql is a single SELECT (or SHOW/DESCRIBE/SUMMARIZE) that
 * touches no file or state. The `_service` schema is readable by admins only, and its
 * credential tables by nobody. Returns DuckDB's parse of sql and of the user macros it reaches
 * (shared: do not modify them).
 */
export async function assertReadOnly(db: DatabasePort, sql: string, options: { allowServiceSchema?: boolean } = {}): Promise<ReadOnlyStatement> {
  const parsed = await db.parse(sql);
  if (!parsed.ok) {
    if (parsed.notSelect) throw readOnlyError('the statement is not a SELECT (mutations, DDL, COPY, ATTACH, INSTALL/LOAD, PRAGMA, SET and CALL are refused)');
    throw badRequest('sql_error', parsed.error, { kind: parsed.errorType ?? 'parser' });
  }
  const statements = parsed.tree.statements;
  if (statements.length !== 1) throw readOnlyError(`send exactly one statement (got ${statements.length})`);
  const called = checkTree(statements[0].node, options);
  const macros: MacroBody[] = [];
  await checkMacros(db, called, options, new Set(), macros);
  return { tree: parsed.tree, macros };
}

/** Walks one statement's tree; returns the scalar functions it calls (lower case, `schema.name` when qualified). */
function checkTree(root: SqlNode, options: { allowServiceSchema?: boolean }): Set<string> {
  const called = new Set<string>();
  walkSqlTree(root, (n) => {
    if (n.type === 'TABLE_FUNCTION' && n.function) {
      const name = String(n.function.function_name ?? '').toLowerCase();
      if (!ALLOWED_TABLE_FUNCTIONS.has(name)) throw readOnlyError(`table function '${name}' is not allowed`, { function: name });
    } else if (n.class === 'FUNCTION' && typeof n.function_name === 'string') {
      const name = n.function_name.toLowerCase();
      if (DENIED_SCALAR_FUNCTIONS.has(name)) throw readOnlyError(`function '${name}' is not allowed`, { function: name });
      called.add(n.schema ? `${String(n.schema).toLowerCase()}.${name}` : name);
    } else if (n.type === 'BASE_TABLE' && typeof n.table_name === 'string') {
      if (FILE_LIKE.test(n.table_name)) throw readOnlyError(`reading files ('${n.table_name}') is not allowed`, { table: n.table_name });
      if (String(n.schema_name ?? '').toLowerCase() === '_service') {
        const table = n.table_name.toLowerCase();
        if (CREDENTIAL_TABLES.has(table) || !options.allowServiceSchema) {
          throw forbidden('internal_table', `_service.${table} is internal to dp and cannot be queried`, { table: `_service.${table}` });
        }
      }
    }
  });
  return called;
}

/** DuckDB's own functions (lower case), read once per database: they change only when an extension loads. */
const internalFunctions = new WeakMap<DatabasePort, Promise<Set<string>>>();
/** How many distinct macros one query may reach (cycles are cut by name before that). */
const MAX_MACROS = 64;

function builtins(db: DatabasePort): Promise<Set<string>> {
  let hit = internalFunctions.get(db);
  if (!hit) {
    hit = db
      .all<{ n: string }>('SELECT DISTINCT lower(function_name) AS n FROM duckdb_functions() WHERE internal')
      .then((rows) => new Set(rows.map((r) => r.n)));
    hit.catch(() => internalFunctions.delete(db));
    internalFunctions.set(db, hit);
  }
  return hit;
}

/**
 * A user macro is expanded by DuckDB after this validation sees the query, so its body is
 * validated too (recursively): `CREATE MACRO m() AS (SELECT … FROM read_csv('/etc/passwd'))`
 * made by a writer must not become a file read for a reader. Table macros are table functions,
 * which the allowlist already refuses.
 */
async function checkMacros(db: DatabasePort, called: Set<string>, options: { allowServiceSchema?: boolean }, seen: Set<string>, found: MacroBody[]): Promise<void> {
  if (!called.size) return;
  const internal = await builtins(db);
  for (const call of called) {
    const dot = call.lastIndexOf('.');
    const name = dot >= 0 ? call.slice(dot + 1) : call;
    if (dot < 0 && internal.has(name)) continue;
    if (seen.has(call)) continue;
    seen.add(call);
    if (seen.size > MAX_MACROS) throw readOnlyError('it reaches more than 64 macros', { function: call });
    const macros = await db.all<{ body: string }>(
      `SELECT macro_definition AS body FROM duckdb_functions()
        WHERE NOT internal AND function_type = 'macro' AND lower(function_name) = $1 AND ($2 = '' OR lower(schema_name) = $2)`,
      [name, dot >= 0 ? call.slice(0, dot) : ''],
    );
    for (const { body } of macros) {
      const parsed = await db.parse(`SELECT ${body}`);
      if (!parsed.ok || parsed.tree.statements.length !== 1) throw readOnlyError(`macro '${call}' cannot be checked`, { function: call });
      found.push({ name: call, tree: parsed.tree });
      try {
        await checkMacros(db, checkTree(parsed.tree.statements[0].node, options), options, seen, found);
      } catch (e) {
        if ((e as { code?: string }).code === 'read_only_violation') throw readOnlyError(`macro '${call}' ${String((e as Error).message).replace(/^.*allowed here: /, '')}`, { function: call });
        throw e;
      }
    }
  }
}
