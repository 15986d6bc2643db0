/**
 * The database catalog: which relations (tables, views) and columns the engine holds. Plugins
 * never query an engine's catalog functions (DuckDB's `duckdb_tables()`, `information_schema`...)
 * themselves: they read it through this port, so a second engine (a warehouse target) answers
 * the same questions with its own catalog. dbt's `list_relations` / `get_columns_in_relation`
 * and SQLMesh's `_get_data_objects` are the models.
 */

/** One table or view. */
export interface CatalogRelation {
  schema: string;
  name: string;
  kind: 'table' | 'view';
}

/** One column of a table or view; `ordinal` counts from 1 in the relation's column order. */
export interface CatalogColumn {
  schema: string;
  table: string;
  name: string;
  type: string;
  nullable: boolean;
  ordinal: number;
}

/**
 * The engine-side reader an execution target implements (the kernel's DuckDB file, a ClickHouse
 * database). It reads the engine's catalog as it is now, with no cache and no filter beyond the
 * options: the port plugins use (`DbCatalog`) caches and filters on top of it.
 */
export interface CatalogSource {
  relations(opts?: { schema?: string }): Promise<CatalogRelation[]>;
  columns(opts?: { schema?: string; table?: string }): Promise<CatalogColumn[]>;
}
