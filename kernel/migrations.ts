/**
 * The migration runner: each owner's steps run once per database file, in order, tracked in
 * `_service.migrations` by (owner, id) together with a hash of the step's SQL. A step is
 * identified by its id, not its place in the list, so steps can be removed or reordered
 * without running another one twice; an applied step whose SQL changed is refused at boot
 * (write a new step instead). Databases from before ids (rows numbered by list index) are
 * converted in place: an old row N becomes the id of the owner's current step N.
 */
import crypto from 'node:crypto';
import type { DatabasePort, MigrationSet, MigrationStep } from '../sdk/db.js';
import { DpError } from '../sdk/errors.js';

const MIGRATION_ID = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$/;
/** Rows of a database migrated before ids keep their list index here until their owner's steps map them. */
const LEGACY_PREFIX = 'legacy:';

/** Whitespace-insensitive, so re-indenting an applied step is not a change. */
export function migrationHash(sql: string): string {
  return crypto.createHash('sha256').update(sql.trim().replace(/\s+/g, ' ')).digest('hex').slice(0, 16);
}

function checkSteps(set: MigrationSet): void {
  const seen = new Set<string>();
  for (const step of set.steps as unknown[]) {
    const s = step as Partial<MigrationStep>;
    if (typeof step !== 'object' || step === null || typeof s.id !== 'string' || typeof s.sql !== 'string') {
      throw new DpError(500, 'invalid_migration', `Migrations of '${set.owner}' must be {id, sql} objects (got ${typeof step === 'string' ? 'a bare SQL string' : typeof step})`, {
        owner: set.owner,
      });
    }
    if (!MIGRATION_ID.test(s.id)) {
      throw new DpError(500, 'invalid_migration', `Migration id '${s.id}' of '${set.owner}' must be letters, digits, '_', '.' or '-'`, { owner: set.owner, id: s.id });
    }
    if (seen.has(s.id)) throw new DpError(500, 'duplicate_migration_id', `Migration id '${s.id}' appears twice in the steps of '${set.owner}'`, { owner: set.owner, id: s.id });
    seen.add(s.id);
  }
}

async function ensureTable(db: DatabasePort): Promise<void> {
  await db.run('CREATE SCHEMA IF NOT EXISTS _service');
  const columns = new Set((await db.catalog.columns('_service', 'migrations')).map((c) => c.name));
  const create = (name: string) =>
    `CREATE TABLE ${name} (owner VARCHAR NOT NULL, id VARCHAR NOT NULL, sql_hash VARCHAR, applied_at TIMESTAMP DEFAULT current_timestamp, PRIMARY KEY (owner, id))`;
  if (columns.size === 0) {
    await db.run(create('IF NOT EXISTS _service.migrations'));
    return;
  }
  if (columns.has('id')) return;
  // The index-numbered table of earlier versions: same rows, ids to be mapped per owner.
  await db.withConnection((c) =>
    c.transaction(async () => {
      await c.run(create('_service.migrations_by_id'));
      await c.run(
        `INSERT INTO _service.migrations_by_id (owner, id, sql_hash, applied_at) SELECT owner, '${LEGACY_PREFIX}' || step, NULL, applied_at FROM _service.migrations`,
      );
      await c.run('DROP TABLE _service.migrations');
      await c.run('ALTER TABLE _service.migrations_by_id RENAME TO migrations');
    }),
  );
}

type AppliedRow = { owner: string; id: string; sql_hash: string | null };
const APPLIED = 'SELECT owner, id, sql_hash FROM _service.migrations';

/**
 * The steps applied so far. A database that has the table with ids, the common case, answers the
 * read at once: no catalog lookup and no statement that would count as a change. When the read
 * fails (no table yet, or the index-numbered table of earlier versions), the table is made or
 * converted and read again.
 */
async function appliedSteps(db: DatabasePort): Promise<AppliedRow[]> {
  try {
    return await db.all<AppliedRow>(APPLIED);
  } catch {
    await ensureTable(db);
    return db.all<AppliedRow>(APPLIED);
  }
}

export async function runMigrations(db: DatabasePort, sets: MigrationSet[]): Promise<void> {
  for (const set of sets) checkSteps(set);
  const rows = await appliedSteps(db);
  for (const set of sets) {
    const applied = new Map(rows.filter((r) => r.owner === set.owner).map((r) => [r.id, r.sql_hash]));
    // Legacy rows: the step at that index of today's list is the one that ran.
    for (const [id] of [...applied]) {
      if (!id.startsWith(LEGACY_PREFIX)) continue;
      const step = set.steps[Number(id.slice(LEGACY_PREFIX.length))];
      if (!step) continue;
      const hash = migrationHash(step.sql);
      await db.run('UPDATE _service.migrations SET id = $1, sql_hash = $2 WHERE owner = $3 AND id = $4', [step.id, hash, set.owner, id]);
      applied.delete(id);
      applied.set(step.id, hash);
    }
    for (const step of set.steps) {
      const hash = migrationHash(step.sql);
      if (applied.has(step.id)) {
        const was = applied.get(step.id);
        if (was && was !== hash) {
          throw new DpError(
            500,
            'migration_changed',
            `Migration '${step.id}' of '${set.owner}' was applied with different SQL: an applied step must not change; add a new step with a new id instead`,
            { owner: set.owner, id: step.id, applied_hash: was, current_hash: hash },
          );
        }
        if (!was) await db.run('UPDATE _service.migrations SET sql_hash = $1 WHERE owner = $2 AND id = $3', [hash, set.owner, step.id]);
        continue;
      }
      await db.withConnection((c) =>
        c.transaction(async () => {
          await c.run(step.sql);
          await c.run('INSERT INTO _service.migrations (owner, id, sql_hash) VALUES ($1, $2, $3)', [set.owner, step.id, hash]);
        }),
      );
    }
  }
}
