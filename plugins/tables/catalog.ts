import { notFound, qualified, type DatabasePort } from '../../sdk/index.js';

export interface TableEntry {
  schema: string;
  name: string;
  type: 'table' | 'view';
}

export interface ColumnEntry {
  name: string;
  type: string;
  nullable: boolean;
}

/**
 * User relations only: the catalog port leaves out the service schemas (`_service`, the kernel's
 * bookkeeping; `_masking`, the masking plugin's keyed pads, which no user statement may read;
 * the SQL-standard catalog views) for every role. The schema filter is exact, as the route's
 * path names it.
 */
export async function listTables(db: DatabasePort, schema?: string): Promise<TableEntry[]> {
  const rows = await db.catalog.relations();
  return rows.filter((r) => schema === undefined || r.schema === schema).map((r) => ({ schema: r.schema, name: r.name, type: r.kind }));
}

/**
 * Exact row counts of tables, in one statement; views get null: a view's rows exist only when it
 * runs, and a listing must not run every view. The names come from the catalog (never from input).
 */
export async function withRowCounts(db: Pick<DatabasePort, 'all'>, tables: TableEntry[]): Promise<Array<TableEntry & { rows: number | null }>> {
  const base = tables.filter((t) => t.type === 'table');
  const counts = new Map<string, number>();
  // A few hundred tables per statement keeps the text small; most projects need one.
  for (let i = 0; i < base.length; i += 200) {
    const part = base.slice(i, i + 200);
    const sql = part.map((t, j) => `SELECT ${j} AS i, count(*) AS n FROM ${qualified(t.schema, t.name)}`).join(' UNION ALL ');
    for (const r of await db.all<{ i: number; n: number | bigint }>(sql)) counts.set(`${part[r.i]!.schema}.${part[r.i]!.name}`, Number(r.n));
  }
  return tables.map((t) => ({ ...t, rows: t.type === 'table' ? (counts.get(`${t.schema}.${t.name}`) ?? 0) : null }));
}

export async function describeTable(db: DatabasePort, schema: string, table: string): Promise<{ schema: string; name: string; type: string; columns: ColumnEntry[] }> {
  const found = (await listTables(db, schema)).find((t) => t.name === table);
  if (!found) throw notFound('table_not_found', `No table or view ${schema}.${table}`, { schema, table });
  const columns = (await db.catalog.columns(found.schema, found.name)).map((c) => ({ name: c.name, type: c.type, nullable: c.nullable }));
  return { schema, name: table, type: found.type, columns };
}

/** Every user table with its columns, for editor autocomplete. */
export async function autocompleteCatalog(db: DatabasePort) {
  const tables = await listTables(db);
  const cols = await db.catalog.allColumns();
  const byTable = new Map<string, Array<{ name: string; type: string }>>();
  for (const c of cols) {
    const key = `${c.schema}.${c.table}`;
    if (!byTable.has(key)) byTable.set(key, []);
    byTable.get(key)!.push({ name: c.name, type: c.type });
  }
  const keywords = (await db.all<{ keyword_name: string }>(`SELECT keyword_name FROM duckdb_keywords() WHERE keyword_category = 'reserved' ORDER BY 1`)).map(
    (k) => k.keyword_name.toUpperCase(),
  );
  return {
    schemas: [...new Set(tables.map((t) => t.schema))],
    tables: tables.map((t) => ({ ...t, columns: byTable.get(`${t.schema}.${t.name}`) ?? [] })),
    keywords,
  };
}
