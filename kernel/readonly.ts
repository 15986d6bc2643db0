import fs from 'node:fs';
import { duckdb } from './database/duckdb-api.js';
import type { DatabasePort, DbConnection, SerializedSql, SqlNode } from '../sdk/db.js';
import type { MacroBody } from '../sdk/hooks.js';
import type { QueryTarget } from '../sdk/query-target.js';
import { badRequest, forbidden, notFound } from '../sdk/errors.js';
import { walkSqlTree } from '../sdk/sql.js';
import { locationAt } from './sql-location.js';
import { assertSqlNesting } from './sql-nesting.js';

/**
 * Table functions a read-only query may call. Everything else (read_csv*, read_parquet,
 * read_json*, read_text, read_blob, glob, query, query_table, parquet_*, duckdb_secrets,
 * and whatever an extension adds later) is refused: an allowlist fails closed.
 */
export const ALLOWED_TABLE_FUNCTIONS: ReadonlySet<string> = new Set([
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
 * Validations that passed, per database and SQL text, kept while the database's catalog version
 * holds (it changes on every statement that is not a read, the same signal as
 * `catalog.changed`, and on every reopen): what decides a validation (the parse, the catalog's
 * tables, views and macros) changes only then. A repeated query skips the tree walks and the
 * catalog lookups. Refusals are not kept: they are rare and cheap to repeat.
 */
interface ValidationCache {
  version: number;
  passed: Map<string, ReadOnlyStatement>;
}
const validations = new WeakMap<DatabasePort, ValidationCache>();
const VALIDATIONS_MAX = 1000;

/** The database's catalog version (DuckDatabase.catalogVersion), or undefined for a port that has none: nothing is kept then. */
function catalogVersion(db: DatabasePort): number | undefined {
  const v = (db as { catalogVersion?: unknown }).catalogVersion;
  return typeof v === 'number' ? v : undefined;
}

/**
 * Throws read_only_violation unless sql is a single SELECT (or SHOW/DESCRIBE/SUMMARIZE) that
 * touches no file or state. The `_service` schema is readable by admins only, and its
 * credential tables by nobody. Returns DuckDB's parse of sql and of the user macros it reaches
 * (shared: do not modify them).
 */
export async function assertReadOnly(db: DatabasePort, sql: string, options: { allowServiceSchema?: boolean; target?: QueryTarget } = {}): Promise<ReadOnlyStatement> {
  // The DuckDB catalog version says nothing of a target's catalog: a target's validations are not kept.
  if (options.target) return validate(db, sql, options);
  const version = catalogVersion(db);
  const key = `${options.allowServiceSchema ? 'service' : 'user'}\0${sql}`;
  let cache = validations.get(db);
  if (version !== undefined && cache?.version === version) {
    const hit = cache.passed.get(key);
    if (hit) return hit;
  }
  const checked = await validate(db, sql, options);
  // Kept only when no write ran while the catalog was asked (the version is still the one seen first).
  if (version !== undefined && catalogVersion(db) === version) {
    if (!cache || cache.version !== version) validations.set(db, (cache = { version, passed: new Map() }));
    if (cache.passed.size >= VALIDATIONS_MAX) cache.passed.delete(cache.passed.keys().next().value as string);
    cache.passed.set(key, checked);
  }
  return checked;
}

async function validate(db: DatabasePort, sql: string, options: { allowServiceSchema?: boolean; target?: QueryTarget }): Promise<ReadOnlyStatement> {
  const parsed = await db.parse(sql);
  if (!parsed.ok) {
    if (parsed.notSelect) throw readOnlyError('the statement is not a SELECT (mutations, DDL, COPY, ATTACH, INSTALL/LOAD, PRAGMA, SET and CALL are refused)');
    throw badRequest('sql_error', parsed.error, { kind: parsed.errorType ?? 'parser', ...locationAt(sql, parsed.position) });
  }
  const statements = parsed.tree.statements;
  if (statements.length !== 1) throw readOnlyError(`send exactly one statement (got ${statements.length})`);
  const called = checkTree(statements[0].node, options);
  if (options.target) {
    await assertBuiltinsOnly(db, called);
    await assertTablesResolveOn(options.target, catalogTableRefs(statements[0].node));
    return { tree: parsed.tree, macros: [] };
  }
  const macros: MacroBody[] = [];
  await checkMacros(db, called, options, new Set(), macros);
  await assertTablesResolve(db, [statements[0].node, ...macros.map((m) => m.tree.statements[0].node)]);
  return { tree: parsed.tree, macros };
}

/** A table reference as written: empty strings where the SQL gave no catalog or schema. */
export interface TableRef {
  catalog: string;
  schema: string;
  table: string;
}

/**
 * The BASE_TABLE references of a parse tree that DuckDB will look up in the catalog, that is
 * every one that is not a CTE in scope. CTE scope as DuckDB binds it: a CTE's body sees the CTEs
 * before it (and itself when recursive), the rest of the query sees them all; names match
 * without regard to case.
 */
export function catalogTableRefs(root: unknown): TableRef[] {
  const refs: TableRef[] = [];
  const walk = (value: unknown, scope: ReadonlySet<string>): void => {
    if (Array.isArray(value)) {
      for (const v of value) walk(v, scope);
      return;
    }
    if (!value || typeof value !== 'object') return;
    const node = value as SqlNode;
    let inner = scope;
    if (node.type === 'RECURSIVE_CTE_NODE' && typeof node.cte_name === 'string') inner = new Set([...inner, node.cte_name.toLowerCase()]);
    const ctes: Array<{ key: string; value: unknown }> = Array.isArray(node.cte_map?.map) ? node.cte_map.map : [];
    if (ctes.length) {
      const visible = new Set(inner);
      for (const cte of ctes) {
        walk(cte.value, visible);
        visible.add(String(cte.key).toLowerCase());
      }
      inner = visible;
    }
    if (node.type === 'BASE_TABLE' && typeof node.table_name === 'string') {
      const ref = { catalog: String(node.catalog_name ?? ''), schema: String(node.schema_name ?? ''), table: node.table_name };
      if (ref.catalog || ref.schema || !inner.has(ref.table.toLowerCase())) refs.push(ref);
    }
    for (const [key, child] of Object.entries(node)) if (key !== 'cte_map' && child && typeof child === 'object') walk(child, inner);
  };
  walk(root, new Set());
  return refs;
}

/** A reference as DuckDB prints it in a replacement scan: the parts joined by dots. */
export function refName(ref: TableRef): string {
  return [ref.catalog, ref.schema, ref.table].filter(Boolean).join('.');
}


/** A reference as one qualified name with every part quoted, as DuckDB's name parser reads it. */
function quotedName(ref: TableRef): string {
  return [ref.catalog, ref.schema, ref.table]
    .filter(Boolean)
    .map((part) => `"${part.replace(/"/g, '""')}"`)
    .join('.');
}

/**
 * The catalog lookups of the kernel's connection (kernel/database.ts), named here so that the
 * read-only checks, which the database itself runs, need not import it.
 */
type CatalogConnection = DbConnection & {
  tableExists(quotedName: string): Promise<boolean>;
  preparedValue(sql: string, value: string): Promise<unknown>;
};

/**
 * The references among refs that DuckDB would not find in its catalog. DuckDB binds a name it
 * cannot find as a replacement scan: `FROM '.en[.csv?v]'` or `FROM main."data.csv"` read files,
 * with globs. So what decides is the catalog, asked through DuckDB's own lookup
 * (`pragma_table_info`: the same search path, catalog and schema rules as the binder, tables
 * and views, and no replacement scan), kept per database until the next write (CatalogLookups).
 */
export async function unresolvedTableRefs(db: DatabasePort, refs: TableRef[]): Promise<TableRef[]> {
  const missing: TableRef[] = [];
  const seen = new Map<string, boolean>();
  // DuckDB's name parser has no escape for a double quote inside a quoted part: those few
  // names are looked up in the catalog listing instead.
  const withQuote = (r: TableRef) => [r.catalog, r.schema, r.table].some((p) => p.includes('"'));
  for (const ref of refs.filter((r) => !withQuote(r))) {
    const name = quotedName(ref);
    let found = seen.get(name);
    if (found === undefined) {
      found = await db.withConnection((c) => (c as CatalogConnection).tableExists(name));
      seen.set(name, found);
    }
    if (!found) missing.push(ref);
  }
  const quoted = refs.filter(withQuote);
  if (quoted.length) missing.push(...(await unresolvedInListing(db, quoted)));
  return missing;
}

const CATALOG_LISTING = `SELECT to_json({
    db: current_database(), sch: current_schema(), search_path: current_setting('search_path'),
    found: (SELECT coalesce(list([lower(database_name), lower(schema_name), lower(name)]), []) FROM (
      SELECT database_name, schema_name, table_name AS name FROM duckdb_tables()
      UNION ALL SELECT database_name, schema_name, view_name FROM duckdb_views())
      WHERE list_contains(string_split($1::VARCHAR, chr(0)), lower(name)))
  })::VARCHAR`;

/**
 * The binder's lookup rebuilt on the catalog listing: the full name when qualified by catalog;
 * a schema in the searched catalogs or a catalog's default schema when qualified by one name;
 * else temp, the current schema, search_path and the system schemas. Slower than
 * pragma_table_info, so only for names it cannot parse.
 */
async function unresolvedInListing(db: DatabasePort, refs: TableRef[]): Promise<TableRef[]> {
  // NUL cannot occur in an identifier DuckDB parsed, so it separates the names.
  const names = [...new Set(refs.map((r) => r.table.toLowerCase()))].join('\0');
  const text = await db.withConnection((c) => (c as CatalogConnection).preparedValue(CATALOG_LISTING, names));
  const row = JSON.parse(String(text)) as { db: string; sch: string; search_path: string; found: string[][] };
  const found = new Set(row.found.map(([d, s, t]) => `${d}\0${s}\0${t}`));
  const has = (d: string, s: string, t: string) => found.has(`${d.toLowerCase()}\0${s.toLowerCase()}\0${t.toLowerCase()}`);
  const searched: Array<[string, string]> = [
    ['temp', 'main'],
    [row.db, row.sch],
    ...row.search_path
      .split(',')
      .map((e) => e.trim().replace(/"/g, ''))
      .filter(Boolean)
      .map((e): [string, string] => (e.includes('.') ? [e.slice(0, e.indexOf('.')), e.slice(e.indexOf('.') + 1)] : [row.db, e])),
    ['system', 'main'],
    ['system', 'pg_catalog'],
  ];
  const catalogs = [...new Set(searched.map(([d]) => d))];
  return refs.filter(({ catalog: c, schema: s, table: t }) => {
    if (c) return !has(c, s || 'main', t);
    if (s) return !(catalogs.some((d) => has(d, s, t)) || has(s, 'main', t));
    return !searched.some(([d, sc]) => has(d, sc, t));
  });
}

/**
 * Refuses a query that names anything DuckDB would bind as a file (a replacement scan). A
 * missing name that could only ever be a table (plain identifiers, nothing a file path needs)
 * is answered as the typo it most likely is: table_not_found with the closest existing names.
 */
async function assertTablesResolve(db: DatabasePort, roots: SqlNode[]): Promise<void> {
  const missing = await unresolvedTableRefs(db, roots.flatMap((r) => catalogTableRefs(r)));
  if (missing.length) {
    const name = refName(missing[0]);
    if (isPlainTableName(missing[0])) throw await tableNotFound(db, missing[0]);
    throw readOnlyError(`'${name}' is not a table or view in the database (a query reads tables and views, never files)`, { kind: 'catalog', table: name });
  }
}

/**
 * On a target, a name resolves in the target's catalog, never the DuckDB file's: what the target
 * does not hold is not found (a file path included: the target reads no file of this machine).
 */
async function assertTablesResolveOn(target: QueryTarget, refs: TableRef[]): Promise<void> {
  const missing = await target.unresolved(refs);
  if (!missing.length) return;
  const name = refName(missing[0]);
  if (!isPlainTableName(missing[0])) throw readOnlyError(`'${name}' is not a table or view on the target (a query reads tables and views, never files)`, { kind: 'catalog', table: name });
  const shown = name.length > MAX_SUGGESTED_NAME ? `${name.slice(0, MAX_SUGGESTED_NAME)}…` : name;
  throw notFound('table_not_found', `table '${shown}' does not exist on the target; \`dp tables\` lists the local file's tables, the SQL page's catalog the target's`, { table: shown, closest: [] });
}

/**
 * A query on a target calls DuckDB's built-in functions only: a user macro lives in the local
 * file (the target has none), and a name DuckDB does not know would reach the target's engine
 * unchecked, where it may mean something else (ClickHouse's `file()` reads the server's files).
 */
async function assertBuiltinsOnly(db: DatabasePort, called: Set<string>): Promise<void> {
  if (!called.size) return;
  const internal = await builtins(db);
  for (const call of called) {
    if (call.includes('.') || !internal.has(call)) {
      throw readOnlyError(`function '${call}' is not a DuckDB built-in (a query on the target calls built-in functions only, no macros)`, { function: call });
    }
  }
}

const PLAIN_IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** No dot, slash, glob or scheme in any part: the name cannot be a file's. */
function isPlainTableName(ref: TableRef): boolean {
  return [ref.catalog, ref.schema, ref.table].filter(Boolean).every((part) => PLAIN_IDENTIFIER.test(part));
}

/** The few existing tables and views whose names are nearest (DuckDB's own levenshtein) to a missing one, or start with it; never dp's own schemas (`_service`, `_masking`). */
const CLOSEST_TABLES = `SELECT name FROM (
    SELECT schema_name AS sch, schema_name || '.' || table_name AS name, table_name AS bare FROM duckdb_tables() WHERE NOT internal AND database_name = current_database()
    UNION ALL SELECT schema_name, schema_name || '.' || view_name, view_name FROM duckdb_views() WHERE NOT internal AND database_name = current_database())
  WHERE NOT starts_with(sch, '_')
    AND (least(levenshtein(lower(name), lower($1)), levenshtein(lower(bare), lower($2))) <= greatest(2, length($2) // 2)
      OR starts_with(lower(bare), lower($2)))
  ORDER BY least(levenshtein(lower(name), lower($1)), levenshtein(lower(bare), lower($2))), name
  LIMIT 3`;

/**
 * Past this length a name is no typo of a table's: no suggestions (levenshtein costs length × length
 * per table, so a megabyte of name would hold the engine for minutes), and the message shows its start.
 */
const MAX_SUGGESTED_NAME = 128;

async function tableNotFound(db: DatabasePort, ref: TableRef) {
  const name = refName(ref);
  const qualifiedName = [ref.schema, ref.table].filter(Boolean).join('.');
  const closest =
    qualifiedName.length > MAX_SUGGESTED_NAME ? [] : (await db.all<{ name: string }>(CLOSEST_TABLES, [qualifiedName, ref.table])).map((r) => r.name);
  const hint = closest.length ? `; did you mean ${closest.join(', ')}?` : '; `dp tables` lists the tables';
  const shown = name.length > MAX_SUGGESTED_NAME ? `${name.slice(0, MAX_SUGGESTED_NAME)}…` : name;
  return notFound('table_not_found', `table '${shown}' does not exist${hint}`, { table: shown, closest });
}

/** Walks one statement's tree; returns the scalar functions it calls (lower case, `schema.name` when qualified). */
function checkTree(root: SqlNode, options: { allowServiceSchema?: boolean }): Set<string> {
  // Before anything binds it: a value or type nested too deeply can crash the engine.
  assertSqlNesting(root);
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

/** DuckDB's own functions' names (lower case, distinct): the build reads them too (scripts/build.mjs). */
export const BUILTIN_FUNCTIONS_SQL = 'SELECT DISTINCT lower(function_name) AS n FROM duckdb_functions() WHERE internal';
/** Where the build writes them, with the DuckDB version they were read from. */
export const BUILTIN_FUNCTIONS_FILE = new URL('./duckdb-builtins.json', import.meta.url);

/**
 * The names the build read, when it read them from this DuckDB library (the same version has
 * the same built-in functions; an extension loaded later only adds some, which are then looked
 * up as macros and not found): reading them from the database costs a `dp query` about 70 ms
 * of CPU. Null without that file or for another version: the database is asked.
 */
let builtAt: { functions: Set<string> } | null | undefined;
function buildTimeBuiltins(): Set<string> | null {
  if (builtAt === undefined) {
    builtAt = null;
    try {
      const file = JSON.parse(fs.readFileSync(BUILTIN_FUNCTIONS_FILE, 'utf8')) as { version?: string; functions?: string[] };
      if (file.version === duckdb.version() && Array.isArray(file.functions)) builtAt = { functions: new Set(file.functions) };
    } catch {
      // No file (a build that did not write it): the database is asked.
    }
  }
  return builtAt?.functions ?? null;
}

function builtins(db: DatabasePort): Promise<Set<string>> {
  let hit = internalFunctions.get(db);
  if (!hit) {
    const known = buildTimeBuiltins();
    hit = known ? Promise.resolve(known) : db.all<{ n: string }>(BUILTIN_FUNCTIONS_SQL).then((rows) => new Set(rows.map((r) => r.n)));
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
