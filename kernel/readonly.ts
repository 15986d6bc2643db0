import type { DatabasePort, SerializedSql, SqlNode } from '../sdk/db.js';
import { badRequest, forbidden } from '../sdk/errors.js';

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

function walk(node: unknown, visit: (n: SqlNode) => void): void {
  if (Array.isArray(node)) {
    for (const child of node) walk(child, visit);
  } else if (node && typeof node === 'object') {
    visit(node as SqlNode);
    for (const value of Object.values(node)) if (value && typeof value === 'object') walk(value, visit);
  }
}

/** Credentials live here; no query reads them, whatever the role. */
const CREDENTIAL_TABLES = new Set(['users', 'tokens']);

/**
 * Throws read_only_violation unless sql is a single SELECT (or SHOW/DESCRIBE/SUMMARIZE) that
 * touches no file or state. The `_service` schema is readable by admins only, and its
 * credential tables by nobody. Returns DuckDB's parse of sql (shared: do not modify it).
 */
export async function assertReadOnly(db: DatabasePort, sql: string, options: { allowServiceSchema?: boolean } = {}): Promise<SerializedSql> {
  const parsed = await db.parse(sql);
  if (!parsed.ok) {
    if (parsed.notSelect) throw readOnlyError('the statement is not a SELECT (mutations, DDL, COPY, ATTACH, INSTALL/LOAD, PRAGMA, SET and CALL are refused)');
    throw badRequest('sql_error', parsed.error, { kind: parsed.errorType ?? 'parser' });
  }
  const statements = parsed.tree.statements;
  if (statements.length !== 1) throw readOnlyError(`send exactly one statement (got ${statements.length})`);
  walk(statements[0].node, (n) => {
    if (n.type === 'TABLE_FUNCTION' && n.function) {
      const name = String(n.function.function_name ?? '').toLowerCase();
      if (!ALLOWED_TABLE_FUNCTIONS.has(name)) throw readOnlyError(`table function '${name}' is not allowed`, { function: name });
    } else if (n.class === 'FUNCTION' && typeof n.function_name === 'string') {
      const name = n.function_name.toLowerCase();
      if (DENIED_SCALAR_FUNCTIONS.has(name)) throw readOnlyError(`function '${name}' is not allowed`, { function: name });
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
  return parsed.tree;
}
