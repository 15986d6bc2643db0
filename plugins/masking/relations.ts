/**
 * Which physical columns each relation has, read from the live catalog (the catalog port's
 * resolvable columns: every database a query can name).
 *
 * Reading the catalog costs about a millisecond, so the snapshot is kept for a short time and
 * dropped early on any event of the bus (model builds, seed loads, syncs change tables) and
 * whenever a query names a relation the snapshot does not know. `epoch` changes only when the
 * catalog's content changed, so cached rewrites stay valid across identical reloads.
 */
import crypto from 'node:crypto';
import type { CatalogColumn } from '../../sdk/index.js';

/** Where the columns come from: the DuckDB file's catalog port, or a warehouse target's catalog (sdk/query-target.ts). */
export interface ColumnSource {
  resolvableColumns(): Promise<{ current: string; columns: CatalogColumn[] }>;
}

export interface RelationColumn {
  name: string;
  type: string;
}

export interface Relation {
  database: string;
  schema: string;
  name: string;
  columns: RelationColumn[];
  /** Lower-case column name → column. */
  byName: Map<string, RelationColumn>;
}

export interface RelationRef {
  catalog: string;
  schema: string;
  table: string;
}

export interface CatalogSnapshot {
  epoch: number;
  loadedAt: number;
  currentDatabase: string;
  /** `database.schema.table`, lower case → relation. */
  relations: Map<string, Relation>;
}

const key = (db: string, schema: string, table: string) => `${db}\u0000${schema}\u0000${table}`.toLowerCase();

export class RelationCatalog {
  private current: CatalogSnapshot | null = null;
  private loading: Promise<CatalogSnapshot> | null = null;
  private lastDigest = '';
  private epochCounter = 0;

  constructor(
    private readonly source: ColumnSource,
    /** Where the age of a snapshot is read (ctx.clock: a test moves its own). */
    private readonly now: () => number,
    /** How long a snapshot is trusted without any event (ms). */
    private readonly maxAgeMs = 2000,
  ) {}

  invalidate(): void {
    this.current = null;
  }

  async snapshot(): Promise<CatalogSnapshot> {
    if (this.current && this.now() - this.current.loadedAt < this.maxAgeMs) return this.current;
    return this.reload();
  }

  /** Reloads unless a reload finished within `minAgeMs` (so one query reloads at most once). */
  async refreshIfOlderThan(minAgeMs: number): Promise<CatalogSnapshot> {
    if (this.current && this.now() - this.current.loadedAt < minAgeMs) return this.current;
    return this.reload();
  }

  private reload(): Promise<CatalogSnapshot> {
    if (this.loading) return this.loading;
    this.loading = this.read().finally(() => {
      this.loading = null;
    });
    return this.loading;
  }

  private async read(): Promise<CatalogSnapshot> {
    // Every relation a query can name (temp, attached and system ones too), kept by the port until the catalog changes.
    const { current: currentDatabase, columns } = await this.source.resolvableColumns();
    const rows = columns.map((c) => ({ d: c.database ?? currentDatabase, s: c.schema, t: c.table, c: c.name, ty: c.type }));
    const relations = new Map<string, Relation>();
    const hash = crypto.createHash('sha1');
    hash.update(currentDatabase);
    for (const r of rows) {
      const k = key(r.d, r.s, r.t);
      let rel = relations.get(k);
      if (!rel) {
        rel = { database: r.d, schema: r.s, name: r.t, columns: [], byName: new Map() };
        relations.set(k, rel);
      }
      const col = { name: r.c, type: r.ty };
      rel.columns.push(col);
      rel.byName.set(r.c.toLowerCase(), col);
      hash.update(`${k}\u0000${r.c}\u0000${r.ty}\n`);
    }
    const digest = hash.digest('hex');
    if (digest !== this.lastDigest) {
      this.lastDigest = digest;
      this.epochCounter++;
    }
    this.current = { epoch: this.epochCounter, loadedAt: this.now(), currentDatabase, relations };
    return this.current;
  }

  /**
   * The relation a table reference names, resolved as DuckDB does: `t` is main.t of the
   * current database, `a.t` is schema a (or, failing that, database a's main schema),
   * `c.s.t` is exact.
   */
  static resolve(snap: CatalogSnapshot, ref: RelationRef): Relation | undefined {
    const { catalog, schema, table } = ref;
    if (catalog) return snap.relations.get(key(catalog, schema || 'main', table));
    const get = (d: string, s: string) => snap.relations.get(key(d, s, table));
    if (schema) return get(snap.currentDatabase, schema) ?? get('system', schema) ?? get(schema, 'main');
    return get('temp', 'main') ?? get(snap.currentDatabase, 'main') ?? get('system', 'main') ?? get('system', 'pg_catalog');
  }
}
