/**
 * The DuckDB file's catalog source (sdk/db-catalog.ts): the one place that reads DuckDB's catalog
 * functions for the port plugins use. Names compare case-insensitively, as DuckDB resolves them.
 */
import type { CatalogColumn, CatalogKey, CatalogRelation, CatalogSource, DbCatalog } from '../sdk/db-catalog.js';
import type { Row, SqlParams } from '../sdk/db.js';

/** What the source reads through: a database's pooled reads. */
export interface CatalogReader {
  all<T = Row>(sql: string, params?: SqlParams): Promise<T[]>;
}

/** One database's own relations (the project's unless another is named by `$1`): no temporary or internal one. */
const own = (named: boolean) => `database_name = ${named ? '$1' : 'current_database()'} AND NOT internal AND NOT temporary`;

/** The WHERE conditions and parameters of name filters on `schema_name` and `nameColumn`. */
function filters(nameColumn: string, opts: { schema?: string; name?: string }, params: string[] = []): { where: string; params: string[] } {
  let where = '';
  if (opts.schema !== undefined) {
    params.push(opts.schema);
    where += ` AND lower(schema_name) = lower($${params.length})`;
  }
  if (opts.name !== undefined) {
    params.push(opts.name);
    where += ` AND lower(${nameColumn}) = lower($${params.length})`;
  }
  return { where, params };
}

interface ColumnRow {
  d: string;
  s: string;
  t: string;
  c: string;
  ty: string;
  n: boolean;
  o: number | bigint;
}

const COLUMN_FIELDS = 'database_name AS d, schema_name AS s, table_name AS t, column_name AS c, data_type AS ty, is_nullable AS n, column_index AS o';

function column(r: ColumnRow, withDatabase: boolean): CatalogColumn {
  const c: CatalogColumn = { schema: r.s, table: r.t, name: r.c, type: r.ty, nullable: r.n, ordinal: Number(r.o) };
  if (withDatabase) c.database = r.d;
  return c;
}

export class DuckCatalogSource implements CatalogSource {
  constructor(private readonly db: CatalogReader) {}

  async relations(opts: { schema?: string; name?: string; database?: string } = {}): Promise<CatalogRelation[]> {
    const named = opts.database !== undefined;
    const tables = filters('table_name', opts, named ? [opts.database!] : []);
    const views = filters('view_name', opts, named ? [opts.database!] : []);
    const scope = own(named);
    // Both branches take the same parameters in the same order.
    const rows = await this.db.all<{ s: string; n: string; k: 'table' | 'view'; e: number | bigint | null; w: number | bigint | null; c: string | null; d: string | null }>(
      `SELECT schema_name AS s, table_name AS n, 'table' AS k, estimated_size AS e, column_count AS w, comment AS c, NULL AS d FROM duckdb_tables() WHERE ${scope}${tables.where}
       UNION ALL
       SELECT schema_name, view_name, 'view', NULL, NULL, comment, sql FROM duckdb_views() WHERE ${scope}${views.where}
       ORDER BY 1, 2`,
      tables.params,
    );
    return rows.map((r) => {
      const rel: CatalogRelation = { schema: r.s, name: r.n, kind: r.k };
      if (r.e !== null && r.e !== undefined) rel.estimatedRows = Number(r.e);
      if (r.w !== null && r.w !== undefined) rel.columnCount = Number(r.w);
      if (r.c) rel.comment = r.c;
      if (r.d !== null && r.d !== undefined) rel.definition = r.d;
      return rel;
    });
  }

  async columns(opts: { schema?: string; table?: string } = {}): Promise<CatalogColumn[]> {
    const { where, params } = filters('table_name', { schema: opts.schema, name: opts.table });
    const rows = await this.db.all<ColumnRow>(
      `SELECT ${COLUMN_FIELDS} FROM duckdb_columns() WHERE database_name = current_database() AND NOT internal${where}
       ORDER BY schema_name, table_name, column_index`,
      params,
    );
    return rows.map((r) => column(r, false));
  }

  async keys(): Promise<CatalogKey[]> {
    const rows = await this.db.all<{ s: string; t: string; k: string; c: string[] }>(
      `SELECT schema_name AS s, table_name AS t, constraint_type AS k, constraint_column_names AS c FROM duckdb_constraints()
        WHERE database_name = current_database() AND constraint_type IN ('PRIMARY KEY', 'UNIQUE')
        ORDER BY constraint_type = 'PRIMARY KEY' DESC, constraint_index`,
    );
    return rows.map((r) => ({ schema: r.s, table: r.t, kind: r.k === 'PRIMARY KEY' ? 'primary' : 'unique', columns: [...r.c] }));
  }

  async resolvableColumns(): Promise<{ current: string; columns: CatalogColumn[] }> {
    const rows = await this.db.all<ColumnRow & { cur: string }>(
      `SELECT ${COLUMN_FIELDS}, current_database() AS cur FROM duckdb_columns() ORDER BY database_name, schema_name, table_name, column_index`,
    );
    const current = rows[0]?.cur ?? String((await this.db.all<{ cur: string }>('SELECT current_database() AS cur'))[0]?.cur ?? 'memory');
    return { current, columns: rows.map((r) => column(r, true)) };
  }
}

/** A catalog port that forwards to whichever database is open now (the app's handle across environment switches). */
export function forwardingCatalog(current: () => DbCatalog): DbCatalog {
  return {
    relations: (opts) => current().relations(opts),
    relation: (schema, name) => current().relation(schema, name),
    exists: (schema, name) => current().exists(schema, name),
    kind: (schema, name) => current().kind(schema, name),
    columns: (schema, table) => current().columns(schema, table),
    allColumns: (opts) => current().allColumns(opts),
    resolvableColumns: () => current().resolvableColumns(),
    keys: () => current().keys(),
    get version() {
      return current().version;
    },
  };
}
