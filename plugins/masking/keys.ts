/**
 * Keys of the keyed masking methods (`consistent_hash`, `noise`, `date_shift`).
 *
 * One random 256-bit key per project lives in `.env` (DP_MASKING_KEY, through the kernel's
 * secrets store); the server generates it the first time a keyed mask is used, and saves it
 * before that mask runs. Each keyed use derives a
 * key of its own from it: HMAC-SHA256(project key, "dp-masking\0<method>\0<seed_key>"), so the
 * methods' outputs are unrelated to each other and a policy's optional `seed_key` separates it
 * from the other policies of the same method.
 *
 * The masks are HMAC-SHA256 (RFC 2104) computed by DuckDB. No key material is ever written into
 * SQL text (which a caller can read back through explain, current_query() or an error): the
 * padded keys are rows of `_masking.keys`, and a mask reads them with a scalar subquery naming
 * the row by an opaque id. The enforcer refuses every user statement that names the `_masking`
 * schema, whatever the role, so only the masks themselves read that table.
 */
import crypto from 'node:crypto';
import { type DatabasePort, forbidden, type QueryContext, quoteLiteral, type SerializedSql, walkSqlTree } from '../../sdk/index.js';

/** The `.env` entry holding the project's masking key (64 hex digits). */
export const MASKING_KEY_ENV = 'DP_MASKING_KEY';
/** The schema holding the padded keys; no user statement may name it. */
export const KEY_SCHEMA = '_masking';
export const KEY_TABLE = 'keys';

/** Whether a parse names a relation of the key schema (any role is refused such a statement). */
export function readsKeySchema(root: unknown): boolean {
  let found = false;
  walkSqlTree(root, (n) => {
    if (found || n.type !== 'BASE_TABLE') return;
    const parts = [n.catalog_name, n.schema_name, n.table_name].map((p) => String(p ?? '').toLowerCase());
    found = parts.includes(KEY_SCHEMA);
  });
  return found;
}

/**
 * Refuses any statement naming the key schema (or a macro reaching it), whatever the caller's
 * role and whether or not a policy exists: the padded keys must never reach a result, an error
 * or a profile. Each parse is walked once (the kernel caches one tree per SQL text).
 */
export class KeySchemaGuard {
  private readonly checked = new WeakSet<object>();

  constructor(private readonly db: Pick<DatabasePort, 'parse'>) {}

  async check(q: Pick<QueryContext, 'originalSql' | 'macros'>): Promise<void> {
    const parsed = await this.db.parse(q.originalSql);
    const trees: object[] = [...(parsed.ok ? [parsed.tree] : []), ...(q.macros ?? []).map((m) => m.tree)];
    for (const tree of trees) {
      if (this.checked.has(tree)) continue;
      if (readsKeySchema((tree as SerializedSql).statements)) {
        throw forbidden('internal_table', `${KEY_SCHEMA} is internal to dp and cannot be queried`, { table: KEY_SCHEMA });
      }
      this.checked.add(tree);
    }
  }
}

const BLOCK = 64;
const KEY_COLUMNS = 'id VARCHAR PRIMARY KEY, inner_pad BLOB NOT NULL, outer_pad BLOB NOT NULL';
const KEY_COLUMN_NAMES = 'id,inner_pad,outer_pad';

interface DerivedKey {
  id: string;
  key: Buffer;
  inner: Buffer;
  outer: Buffer;
}

type Secrets = { get(key: string): string | undefined; set(key: string, value: string): Promise<void> };

export class MaskKeys {
  private projectKey: Buffer | null;
  /** Set when the key was generated here and must still be saved to `.env`. */
  private unsaved = false;
  private secrets: Secrets | null = null;
  private warn: (message: string) => void = () => {};
  private readonly derived = new Map<string, DerivedKey>();
  /** Ids written to the table since it was (re)created. */
  private readonly stored = new Set<string>();
  private readonly pending = new Map<string, DerivedKey>();
  /** The key table exists (made by load(), or by the first flush of a process that never ran load()). */
  private tableReady = false;

  /** Without `projectKey` and secrets (tests), a random key is made on first use and never saved. */
  constructor(projectKey?: Buffer) {
    this.projectKey = projectKey ?? null;
  }

  /** Where the project key is read from and saved to (`.env` through ctx.secrets). */
  attach(secrets: Secrets, warn: (message: string) => void): void {
    this.secrets = secrets;
    this.warn = warn;
  }

  /**
   * Forgets the derived keys (the project key is read from `.env` again on first use) and
   * recreates the key table, so a key changed in `.env` takes effect on restart and no pad of
   * an old key stays in the database. A table already empty, with these columns, is kept: a start
   * then writes nothing, and a CLI command leaves DuckDB no change to checkpoint when it closes.
   */
  async load(db: DatabasePort): Promise<void> {
    if (this.secrets) this.projectKey = null;
    this.unsaved = false;
    this.derived.clear();
    this.stored.clear();
    this.pending.clear();
    // One read says both (its columns and whether it has a row), with no catalog lookup; it fails when the table is missing.
    const found = await db.query(`SELECT * FROM ${KEY_SCHEMA}.${KEY_TABLE} LIMIT 1`).catch(() => null);
    const emptyAsMade = found !== null && found.columns.join(',') === KEY_COLUMN_NAMES && found.rows.length === 0;
    if (!emptyAsMade) {
      await db.run(`CREATE SCHEMA IF NOT EXISTS ${KEY_SCHEMA}`);
      await db.run(`CREATE OR REPLACE TABLE ${KEY_SCHEMA}.${KEY_TABLE} (${KEY_COLUMNS})`);
    }
    this.tableReady = true;
  }

  private key(): Buffer {
    if (!this.projectKey) {
      const saved = this.secrets?.get(MASKING_KEY_ENV);
      if (saved && /^[0-9a-fA-F]{64}$/.test(saved)) {
        this.projectKey = Buffer.from(saved, 'hex');
      } else {
        if (saved) this.warn(`masking: ${MASKING_KEY_ENV} in .env is not 64 hex digits; a new key was generated`);
        this.projectKey = crypto.randomBytes(32);
        this.unsaved = this.secrets !== null;
      }
    }
    return this.projectKey;
  }

  private derive(method: string, seedKey: string): DerivedKey {
    const purpose = `dp-masking\u0000${method}\u0000${seedKey}`;
    let hit = this.derived.get(purpose);
    if (!hit) {
      const projectKey = this.key();
      const key = crypto.createHmac('sha256', projectKey).update(purpose, 'utf8').digest();
      // The id names the row in SQL text: it must not reveal the seed_key, so it is keyed too.
      const id = 'k' + crypto.createHmac('sha256', projectKey).update(`id\u0000${purpose}`, 'utf8').digest('hex').slice(0, 24);
      const padded = Buffer.alloc(BLOCK);
      key.copy(padded);
      const inner = Buffer.from(padded.map((b) => b ^ 0x36));
      const outer = Buffer.from(padded.map((b) => b ^ 0x5c));
      hit = { id, key, inner, outer };
      this.derived.set(purpose, hit);
    }
    if (!this.stored.has(hit.id)) this.pending.set(hit.id, hit);
    return hit;
  }

  /**
   * SQL for the hex HMAC-SHA256 of `messageSql` (a VARCHAR expression) under the key of
   * (method, seedKey). The text holds only the row's id; NULL in gives NULL out.
   */
  hmacSql(method: string, seedKey: string, messageSql: string): string {
    const { id } = this.derive(method, seedKey);
    const pad = (column: string) => `(SELECT ${column} FROM ${KEY_SCHEMA}.${KEY_TABLE} WHERE id = ${quoteLiteral(id)})`;
    return `sha256(${pad('outer_pad')} || unhex(sha256(${pad('inner_pad')} || encode(${messageSql}))))`;
  }

  /** The JavaScript twin of hmacSql. */
  hmacHex(method: string, seedKey: string, message: string): string {
    return crypto.createHmac('sha256', this.derive(method, seedKey).key).update(message, 'utf8').digest('hex');
  }

  /** Whether keys used by masks since the last flush still have to be written. */
  get dirty(): boolean {
    return this.pending.size > 0 || this.unsaved;
  }

  /** Writes the padded keys masks have asked for since the last flush (before the masked SQL runs). */
  async flush(db: DatabasePort): Promise<void> {
    if (this.unsaved && this.secrets && this.projectKey) {
      this.unsaved = false;
      try {
        await this.secrets.set(MASKING_KEY_ENV, this.projectKey.toString('hex'));
      } catch (e) {
        this.warn(`masking: could not save ${MASKING_KEY_ENV} to .env (${(e as Error).message}); keyed masks will change at the next start`);
      }
    }
    if (!this.pending.size) return;
    if (!this.tableReady) {
      await db.run(`CREATE SCHEMA IF NOT EXISTS ${KEY_SCHEMA}`);
      await db.run(`CREATE TABLE IF NOT EXISTS ${KEY_SCHEMA}.${KEY_TABLE} (${KEY_COLUMNS})`);
      this.tableReady = true;
    }
    const rows = [...this.pending.values()];
    this.pending.clear();
    try {
      // Parameters, never literals: the statement text may be logged or listed, the values are not.
      for (const r of rows) {
        await db.run(`INSERT OR IGNORE INTO ${KEY_SCHEMA}.${KEY_TABLE} VALUES ($1, from_hex($2), from_hex($3))`, [r.id, r.inner.toString('hex'), r.outer.toString('hex')]);
      }
    } catch (e) {
      for (const r of rows) this.pending.set(r.id, r);
      throw e;
    }
    for (const r of rows) this.stored.add(r.id);
  }
}
