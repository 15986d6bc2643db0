/**
 * The database catalog: which relations (tables, views) and columns the engine holds. Plugins
 * never query an engine's catalog functions (DuckDB's `duckdb_tables()`, `information_schema`...)
 * themselves: they read it through `ctx.db.catalog` (a `DbCatalog`), so a second engine (a
 * warehouse target) answers the same questions from its own catalog. dbt's `list_relations` /
 * `get_columns_in_relation` and SQLMesh's `_get_data_objects` are the models.
 */

/** One table or view. */
export interface CatalogRelation {
  schema: string;
  name: string;
  kind: 'table' | 'view';
  /** The database (DuckDB: catalog) holding it; set when the source was asked for every database. */
  database?: string;
  /** The engine's estimate of a table's rows, when it keeps one (never counted: reading it costs nothing). */
  estimatedRows?: number;
  /** A table's number of columns, when the engine's list of relations gives it (DuckDB's does): no read of its columns needed. */
  columnCount?: number;
  /** The relation's comment (`COMMENT ON`), when it has one. */
  comment?: string;
  /** A view's defining SQL, as the engine keeps it. */
  definition?: string;
}

/** One column of a table or view; `ordinal` counts from 1 in the relation's column order. */
export interface CatalogColumn {
  schema: string;
  table: string;
  name: string;
  type: string;
  nullable: boolean;
  ordinal: number;
  /** The database holding the relation; set when the source was asked for every database. */
  database?: string;
}

/**
 * The engine-side reader an execution target implements (the kernel's DuckDB file, a ClickHouse
 * database). It reads the engine's catalog as it is now, with no cache: the port plugins use
 * (`DbCatalog`) caches and filters on top of it. Without options it answers the relations of the
 * project's database (DuckDB: the current database, no internal or temporary relations); a
 * `schema`/`table` filter compares names as the engine resolves identifiers (DuckDB:
 * case-insensitively); `database` reads another attached database (DuckDB: an ATTACHed file)
 * instead of the project's. Results are ordered by schema, name (and ordinal).
 */
export interface CatalogSource {
  relations(opts?: { schema?: string; name?: string; database?: string }): Promise<CatalogRelation[]>;
  columns(opts?: { schema?: string; table?: string }): Promise<CatalogColumn[]>;
  /**
   * Every column a query can name, in every attached database (temporary and the engine's own
   * system relations included), each with `database`, and which database unqualified names
   * resolve in. Masking resolves table references against this. Optional: an engine with one
   * database answers `columns()` with `database` set to `current`.
   */
  resolvableColumns?(): Promise<{ current: string; columns: CatalogColumn[] }>;
  /** Primary keys and unique constraints of the project's tables, primary keys first. Optional: an engine without them answers none. */
  keys?(): Promise<CatalogKey[]>;
}

/** A primary key or unique constraint. */
export interface CatalogKey {
  schema: string;
  table: string;
  kind: 'primary' | 'unique';
  columns: string[];
}

/**
 * Schemas that hold no user data: the kernel's bookkeeping (`_service`), the masking plugin's keys
 * (`_masking`) and the SQL-standard catalog views. Listings leave them out unless asked.
 */
export const INTERNAL_SCHEMAS: ReadonlySet<string> = new Set(['_service', '_masking', 'information_schema', 'pg_catalog']);

/** Whether a schema is one of INTERNAL_SCHEMAS (names compare case-insensitively, as DuckDB's do). */
export function isInternalSchema(schema: string): boolean {
  return INTERNAL_SCHEMAS.has(schema.toLowerCase());
}

/**
 * The catalog port plugins use (`ctx.db.catalog`): answers cached until the catalog version
 * changes (every statement that is not a read, every reopen or environment switch), so a
 * repeated lookup costs no engine round trip. Lookups by name resolve as the engine does (DuckDB:
 * case-insensitively, the exact spelling preferred). Answers are shared between callers: read
 * them, never change them.
 */
export interface DbCatalog {
  /**
   * The user relations of the project's database (or of the attached `database`), ordered by
   * schema and name; internal schemas only with `includeInternal`.
   */
  relations(opts?: { schema?: string; database?: string; includeInternal?: boolean }): Promise<CatalogRelation[]>;
  /** The relation `schema.name`, or null when the catalog holds none. */
  relation(schema: string, name: string): Promise<CatalogRelation | null>;
  /** Whether `schema.name` is a table or view. */
  exists(schema: string, name: string): Promise<boolean>;
  /** `table`, `view`, or null when absent. */
  kind(schema: string, name: string): Promise<'table' | 'view' | null>;
  /** The columns of `schema.table` in order (empty when the relation is absent). */
  columns(schema: string, table: string): Promise<CatalogColumn[]>;
  /** The columns of every user relation (of one schema), ordered by schema, table, ordinal; internal schemas only with `includeInternal`. */
  allColumns(opts?: { schema?: string; includeInternal?: boolean }): Promise<CatalogColumn[]>;
  /** See CatalogSource.resolvableColumns. */
  resolvableColumns(): Promise<{ current: string; columns: CatalogColumn[] }>;
  /** See CatalogSource.keys. */
  keys(): Promise<CatalogKey[]>;
  /** Changes whenever the catalog may have changed; undefined when the port keeps nothing. */
  readonly version: number | undefined;
}

/** Kept answers at most (per catalog version); past that the oldest goes. */
const CACHED_ANSWERS_MAX = 4096;

const lower = (s: string) => s.toLowerCase();
/** The entry spelled exactly as asked, else the first that matches case-insensitively. */
function pick<T>(rows: T[], exact: (r: T) => boolean): T | undefined {
  return rows.find(exact) ?? rows[0];
}

/**
 * `DbCatalog` over a `CatalogSource`, its answers kept per `version()` (undefined: nothing kept).
 * An answer read while a write ran is dropped with the version the write ends, so none outlives
 * a change it could have missed.
 */
export class CachedCatalog implements DbCatalog {
  private cachedVersion: number | undefined;
  private readonly answers = new Map<string, Promise<unknown>>();

  constructor(
    private readonly source: CatalogSource,
    private readonly currentVersion: () => number | undefined = () => undefined,
  ) {}

  get version(): number | undefined {
    return this.currentVersion();
  }

  /** The kept answer of `key` under the current version, or a fresh one. A failed read is not kept. */
  private cached<T>(key: string, read: () => Promise<T>): Promise<T> {
    const version = this.currentVersion();
    if (version === undefined) return read();
    if (version !== this.cachedVersion) {
      this.answers.clear();
      this.cachedVersion = version;
    }
    const hit = this.answers.get(key);
    if (hit) return hit as Promise<T>;
    const answer = read();
    if (this.answers.size >= CACHED_ANSWERS_MAX) this.answers.delete(this.answers.keys().next().value as string);
    this.answers.set(key, answer);
    answer.catch(() => {
      if (this.answers.get(key) === answer) this.answers.delete(key);
    });
    return answer;
  }

  async relations(opts: { schema?: string; database?: string; includeInternal?: boolean } = {}): Promise<CatalogRelation[]> {
    const { schema, database } = opts;
    const all = await this.cached(`r\u0000${database ?? ''}\u0000${schema ?? ''}`, () =>
      this.source.relations({ ...(schema === undefined ? {} : { schema }), ...(database === undefined ? {} : { database }) }),
    );
    return opts.includeInternal ? all : all.filter((r) => !isInternalSchema(r.schema));
  }

  relation(schema: string, name: string): Promise<CatalogRelation | null> {
    return this.cached(`n\u0000${lower(schema)}\u0000${lower(name)}`, async () => {
      const rows = await this.source.relations({ schema, name });
      return pick(rows, (r) => r.schema === schema && r.name === name) ?? null;
    });
  }

  async exists(schema: string, name: string): Promise<boolean> {
    return (await this.relation(schema, name)) !== null;
  }

  async kind(schema: string, name: string): Promise<'table' | 'view' | null> {
    return (await this.relation(schema, name))?.kind ?? null;
  }

  async columns(schema: string, table: string): Promise<CatalogColumn[]> {
    const rel = await this.relation(schema, table);
    if (!rel) return [];
    return this.cached(`c\u0000${rel.schema}\u0000${rel.name}`, async () =>
      (await this.source.columns({ schema: rel.schema, table: rel.name })).filter((c) => c.schema === rel.schema && c.table === rel.name),
    );
  }

  async allColumns(opts: { schema?: string; includeInternal?: boolean } = {}): Promise<CatalogColumn[]> {
    const all = await this.cached(`a\u0000${opts.schema ?? ''}`, () => this.source.columns(opts.schema === undefined ? {} : { schema: opts.schema }));
    return opts.includeInternal ? all : all.filter((c) => !isInternalSchema(c.schema));
  }

  keys(): Promise<CatalogKey[]> {
    return this.cached('k', async () => (this.source.keys ? this.source.keys() : []));
  }

  resolvableColumns(): Promise<{ current: string; columns: CatalogColumn[] }> {
    return this.cached('e', async () => {
      if (this.source.resolvableColumns) return this.source.resolvableColumns();
      return { current: '', columns: await this.source.columns() };
    });
  }
}
