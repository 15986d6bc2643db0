import fs from 'node:fs';
import path from 'node:path';
import type { DatabasePort, SqlNode } from '../sdk/db.js';
import { badRequest } from '../sdk/errors.js';
import { walkSqlTree } from '../sdk/sql.js';
import { ownWorkingFolder } from './process-cwd.js';
import { assertSqlNesting } from './sql-nesting.js';
import { ALLOWED_TABLE_FUNCTIONS, catalogTableRefs, refName, unresolvedTableRefs, type TableRef } from './readonly.js';

/** Table functions that read the files their first arguments name (DuckDB 1.5 and its built-in extensions). */
const FILE_READERS = new Set([
  'read_csv',
  'read_csv_auto',
  'sniff_csv',
  'read_parquet',
  'parquet_scan',
  'parquet_metadata',
  'parquet_schema',
  'parquet_file_metadata',
  'parquet_kv_metadata',
  'parquet_bloom_probe',
  'read_json',
  'read_json_auto',
  'read_json_objects',
  'read_json_objects_auto',
  'read_ndjson',
  'read_ndjson_auto',
  'read_ndjson_objects',
  'read_text',
  'read_blob',
  'glob',
]);

const GLOB_CHARS = /[*?[\]{}]/;

/** Where the project is and which of its files no SQL may read. */
export interface FileReadPolicy {
  /** Absolute project folder. */
  root: string;
  /** Relations the caller just built (`schema.name`, lowercase): found in the catalog without asking it (FileReadOptions). */
  builtRelations?: ReadonlySet<string>;
}

/** A reference by schema and name (no catalog) to a relation the caller built: DuckDB binds it to that relation, never to a file. */
function namesBuiltRelation(ref: TableRef, built: ReadonlySet<string> | undefined): boolean {
  return Boolean(built?.size && !ref.catalog && ref.schema && built.has(`${ref.schema}.${ref.table}`.toLowerCase()));
}

/** A DuckDB data file, WAL or temp file: the warehouse itself is never read as a file. */
function isDatabaseFile(name: string): boolean {
  return /\.(duckdb|db|wal|tmp)$/i.test(name) || /\.duckdb\./i.test(name);
}

function refuse(shown: string, why: string) {
  return badRequest('file_read_refused', `SQL may read files only inside the project, never hidden files or the database: '${shown}' ${why}`, { path: shown });
}

/** The path as a message may show it: relative to the project when inside, else its last segment. */
function shownPath(root: string, abs: string): string {
  const rel = path.relative(root, abs);
  return rel && !rel.startsWith('..') && !path.isAbsolute(rel) ? rel : path.basename(abs);
}

/** Throws unless abs (a concrete file) is inside root, in no hidden folder, and no database file. */
function checkFile(root: string, abs: string): void {
  const shown = shownPath(root, abs);
  const rel = path.relative(root, abs);
  if (rel === '' || rel.startsWith('..') || path.isAbsolute(rel)) throw refuse(shown, 'is outside the project');
  const parts = rel.split(path.sep);
  if (parts.some((p) => p.startsWith('.'))) throw refuse(shown, 'is hidden');
  if (isDatabaseFile(parts[parts.length - 1])) throw refuse(shown, 'is a database file');
  // A symbolic link is judged by where it leads.
  let real: string | null = null;
  try {
    real = fs.realpathSync(abs);
  } catch {
    real = null;
  }
  if (real && real !== abs) {
    const realRoot = fs.realpathSync(root);
    const realRel = path.relative(realRoot, real);
    if (realRel.startsWith('..') || path.isAbsolute(realRel) || realRel.split(path.sep).some((p) => p.startsWith('.')) || isDatabaseFile(path.basename(real))) {
      throw refuse(shown, 'leads outside what may be read');
    }
  }
}

/**
 * Checks one path as DuckDB will open it: relative paths resolve against the process's working
 * folder (DuckDB's rule), and a glob is expanded by DuckDB itself so that what it matches (a
 * `*` matches dot-files) is what is judged.
 */
async function checkPath(db: DatabasePort, root: string, written: string): Promise<void> {
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(written)) throw refuse(written.replace(/[?#].*$/, ''), 'is not a project file');
  // DuckDB's folder, the process's own: never a relayed CLI client's (kernel/process-cwd.ts).
  const abs = path.resolve(ownWorkingFolder(), written);
  if (!GLOB_CHARS.test(written)) return checkFile(root, abs);
  // The literal part of the pattern must already be inside the project and not hidden.
  const literal = abs.split(path.sep);
  const firstGlob = literal.findIndex((p) => GLOB_CHARS.test(p));
  const prefix = literal.slice(0, firstGlob).join(path.sep) || path.sep;
  const rel = path.relative(root, prefix);
  if (rel.startsWith('..') || path.isAbsolute(rel) || rel.split(path.sep).some((p) => p.startsWith('.'))) throw refuse(shownPath(root, prefix), 'is outside what may be read');
  let matches: Array<{ file: string }> = [];
  try {
    matches = await db.all<{ file: string }>('SELECT file FROM glob($1)', [abs]);
  } catch {
    throw refuse(shownPath(root, prefix), 'cannot be listed');
  }
  for (const m of matches) checkFile(root, path.resolve(m.file));
}

/** The string constants of a file reader's positional arguments; anything computed cannot be checked. */
function pathArguments(fn: SqlNode, name: string): string[] {
  const out: string[] = [];
  const constant = (n: SqlNode): void => {
    if (n?.class === 'CONSTANT' && n.value && !n.value.is_null && typeof n.value.value === 'string') out.push(n.value.value);
    else if (n?.class === 'FUNCTION' && n.function_name === 'list_value' && Array.isArray(n.children)) n.children.forEach(constant);
    else throw badRequest('file_read_refused', `The file '${name}' reads must be written as a string constant (or a list of them), so it can be checked`, { function: name });
  };
  for (const child of (fn.children ?? []) as SqlNode[]) {
    const named = child?.class === 'COMPARISON' && child.left?.class === 'COLUMN_REF';
    if (!named) constant(child);
  }
  return out;
}

/**
 * Throws 400 `file_read_refused` unless every file the SELECT in sql reads is inside the project,
 * in no hidden folder and no database file: file functions (read_csv, read_text, glob, …) with
 * constant paths, and replacement scans (a table reference DuckDB's catalog does not hold is read
 * as a file path). Other table functions than the read-only allowlist are refused (query(),
 * query_table() run SQL that cannot be checked here). The engine's sandbox already keeps every
 * read inside the project; this adds the hidden files and the database.
 */
export async function assertProjectFileReads(db: DatabasePort, sql: string, policy: FileReadPolicy): Promise<void> {
  const parsed = await db.parse(sql);
  if (!parsed.ok) {
    if (parsed.notSelect) throw badRequest('file_read_refused', 'Only a SELECT can be checked for the files it reads', {});
    return; // a syntax error: running the SQL reports it
  }
  const paths: string[] = [];
  for (const { node } of parsed.tree.statements) {
    assertSqlNesting(node);
    walkSqlTree(node, (n) => {
      if (n.type !== 'TABLE_FUNCTION' || !n.function) return;
      const name = String(n.function.function_name ?? '').toLowerCase();
      if (FILE_READERS.has(name)) paths.push(...pathArguments(n.function, name));
      else if (!ALLOWED_TABLE_FUNCTIONS.has(name)) throw badRequest('file_read_refused', `Table function '${name}' is not allowed here`, { function: name });
    });
    const refs = catalogTableRefs(node).filter((ref) => !namesBuiltRelation(ref, policy.builtRelations));
    for (const ref of await unresolvedTableRefs(db, refs)) paths.push(refName(ref));
  }
  for (const p of paths) await checkPath(db, policy.root, p);
}
