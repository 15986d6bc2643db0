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

type Reader = Pick<DatabasePort | DbConnection, 'all' | 'catalog'>;

/** Read through `db`'s catalog: inside a transaction, the tables of its snapshot. */
export async function userTables(db: Reader): Promise<TableInfo[]> {
  // One after another: `db` may be a single connection inside its transaction.
  const relations = await db.catalog.relations();
  const cols = await db.catalog.allColumns();
  const keys = await db.catalog.keys();
  const byName = new Map<string, TableInfo>();
  for (const r of relations) {
    if (r.kind !== 'table') continue;
    const table = `${r.schema}.${r.name}`;
    byName.set(table, { schema: r.schema, name: r.name, table, columns: [], key: [] });
  }
  for (const c of cols) byName.get(`${c.schema}.${c.table}`)?.columns.push({ name: c.name, type: c.type });
  for (const k of keys) {
    const t = byName.get(`${k.schema}.${k.table}`);
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
