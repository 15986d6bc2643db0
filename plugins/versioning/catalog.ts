/**
 * The user tables a version or snapshot covers: every base table outside the internal schemas
 * (`_service` is dp's bookkeeping, `_masking` the masking plugin's keyed pads, never copied out),
 * with its columns and its key (primary key, else the first unique constraint), which the diff
 * compares rows by.
 */
import crypto from 'node:crypto';
import { qualified, type DatabasePort, type DbConnection } from '../../sdk/index.js';
import type { ColumnInfo } from './api-types.js';

export interface TableInfo {
  schema: string;
  name: string;
  /** `schema.name`, the table's name in every response. */
  table: string;
  columns: ColumnInfo[];
  /** Key columns, or [] when the table has no primary key or unique constraint. */
  key: string[];
}

const INTERNAL_SCHEMAS = ['_service', '_masking', 'information_schema', 'pg_catalog'];
const internalList = INTERNAL_SCHEMAS.map((s) => `'${s}'`).join(', ');

type Reader = Pick<DatabasePort | DbConnection, 'all'>;

export async function userTables(db: Reader): Promise<TableInfo[]> {
  const cols = await db.all<{ schema: string; name: string; column: string; type: string }>(
    `SELECT c.schema_name AS schema, c.table_name AS name, c.column_name AS "column", c.data_type AS type
       FROM duckdb_columns() c JOIN duckdb_tables() t
         ON t.database_name = c.database_name AND t.schema_name = c.schema_name AND t.table_name = c.table_name
      WHERE c.database_name = current_database() AND NOT t.internal AND NOT t.temporary
        AND lower(c.schema_name) NOT IN (${internalList})
      ORDER BY c.schema_name, c.table_name, c.column_index`,
  );
  const keys = await db.all<{ schema: string; name: string; kind: string; columns: string[] }>(
    `SELECT schema_name AS schema, table_name AS name, constraint_type AS kind, constraint_column_names AS columns
       FROM duckdb_constraints()
      WHERE database_name = current_database() AND constraint_type IN ('PRIMARY KEY', 'UNIQUE')
      ORDER BY constraint_type = 'PRIMARY KEY' DESC, constraint_index`,
  );
  const byName = new Map<string, TableInfo>();
  for (const c of cols) {
    const table = `${c.schema}.${c.name}`;
    let t = byName.get(table);
    if (!t) byName.set(table, (t = { schema: c.schema, name: c.name, table, columns: [], key: [] }));
    t.columns.push({ name: c.column, type: c.type });
  }
  for (const k of keys) {
    const t = byName.get(`${k.schema}.${k.name}`);
    if (t && t.key.length === 0) t.key = [...k.columns];
  }
  return [...byName.values()];
}

/** SHA-256 of a column list (name and type, in order): equal hashes, equal schemas. */
export function columnsHash(columns: ColumnInfo[]): string {
  return crypto.createHash('sha256').update(columns.map((c) => `${c.name}\u0000${c.type}`).join('\n')).digest('hex');
}

export async function rowCount(db: Reader, t: { schema: string; name: string }): Promise<number> {
  const [r] = await db.all<{ n: number | bigint }>(`SELECT count(*)::BIGINT AS n FROM ${qualified(t.schema, t.name)}`);
  return Number(r.n);
}

/** `schema.table` or a bare table name that is unique among `names`; null when neither matches. */
export function matchTable(requested: string, names: string[]): string | null {
  if (names.includes(requested)) return requested;
  const bare = names.filter((n) => n.slice(n.indexOf('.') + 1) === requested);
  return bare.length === 1 ? bare[0] : null;
}
