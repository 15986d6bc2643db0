/**
 * The statements that materialize a model, per materialization. Everything here runs on the
 * caller's connection inside the caller's transaction (one per model per run), so a failing
 * incremental or scd2 run leaves the table exactly as it was.
 *
 * incremental (table exists, no --full-refresh):
 *   1. the new rows: the model's query filtered by incremental_filter (`{{ this }}` is the
 *      existing table) into a temporary table;
 *   2. on_schema_change: `fail` refuses a batch whose columns differ from the table's,
 *      `append_new_columns` adds the batch's new columns, `sync_all_columns` also drops the
 *      table's columns the batch lacks and changes column types to the batch's;
 *   3. the strategy: `append` inserts the batch, `merge` updates rows whose unique_key matches
 *      and inserts the rest (MERGE INTO), `delete+insert` deletes every row whose unique_key
 *      appears in the batch and inserts the batch.
 *
 * scd2 (table exists): compares the query's rows with the current versions (is_current) by
 * unique_key; a new key or a changed row (updated_at increased, or a check column differs)
 * closes the current version (valid_to, is_current=false) and inserts a new one;
 * hard_deletes=invalidate also closes current versions whose key left the query.
 */
import { badRequest, qualified, quoteIdent, quoteLiteral, type DbConnection } from '../../sdk/index.js';
import type { GraphModel } from './dag.js';
import { THIS_PLACEHOLDER, type IncrementalConfig, type Scd2Config } from './materializations.js';

/** The columns scd2 adds to a model's own. */
export const SCD2_COLUMNS = ['valid_from', 'valid_to', 'is_current'] as const;

const BATCH = '__dp_batch';
const CHANGES = '__dp_changes';

interface Column {
  name: string;
  type: string;
}

export interface MaterializeOutcome {
  /** Rows the run added or changed (incremental and scd2), for the run report. */
  rows_applied?: number;
  /** Columns added or dropped by on_schema_change. */
  schema_changes?: string[];
}

/** DuckDB's CREATE TABLE AS text of a table or view model (and scd2/incremental first builds). */
export function createStatement(m: GraphModel, runStamp: string): string {
  const target = qualified(m.info.schema, m.info.name);
  if (m.info.materialized === 'view') return `CREATE OR REPLACE VIEW ${target} AS\n${m.file.body}\n`;
  if (m.info.materialized === 'scd2') {
    const cfg = m.file.modelConfig.scd2!;
    return `CREATE OR REPLACE TABLE ${target} AS
SELECT __dp_src.*, ${validFrom(cfg, '__dp_src', runStamp)} AS valid_from, CAST(NULL AS TIMESTAMP) AS valid_to, TRUE AS is_current
FROM (
${m.file.body}
) AS __dp_src\n`;
  }
  return `CREATE OR REPLACE TABLE ${target} AS\n${m.file.body}\n`;
}

function validFrom(cfg: Scd2Config, alias: string, runStamp: string): string {
  return cfg.strategy === 'timestamp' ? `CAST(${alias}.${quoteIdent(cfg.updatedAt!)} AS TIMESTAMP)` : `TIMESTAMP ${quoteLiteral(runStamp)}`;
}

/** A relation's columns as this connection sees them: inside its transaction, temp tables included. */
async function columnsOf(c: DbConnection, relation: string): Promise<Column[]> {
  return (await c.all<{ column_name: string; column_type: string }>(`DESCRIBE ${relation}`)).map((r) => ({ name: r.column_name, type: r.column_type }));
}

const lc = (s: string) => s.toLowerCase();

function keyMatch(left: string, right: string, keys: string[]): string {
  return keys.map((k) => `${left}.${quoteIdent(k)} = ${right}.${quoteIdent(k)}`).join(' AND ');
}

function requireColumns(columns: Column[], wanted: string[], what: string): void {
  const names = new Set(columns.map((c) => lc(c.name)));
  const missing = wanted.filter((w) => !names.has(lc(w)));
  if (missing.length) throw badRequest('invalid_config', `${what} names ${missing.map((m) => `'${m}'`).join(', ')}, which the model's query does not return`, { missing });
}

/** Adds the new rows to an existing incremental table; returns what changed. */
export async function applyIncremental(c: DbConnection, m: GraphModel): Promise<MaterializeOutcome> {
  const cfg: IncrementalConfig = m.file.modelConfig.incremental!;
  const target = qualified(m.info.schema, m.info.name);
  const where = cfg.filter ? `\nWHERE (${cfg.filter.replace(THIS_PLACEHOLDER, target)})` : '';
  // The new rows are read straight into the INSERT or MERGE (no temporary copy of the batch);
  // delete+insert reads them twice, so it keeps them in a temporary table first.
  let source = `(SELECT * FROM (\n${m.file.body}\n) AS __dp_new${where})`;
  const staged = cfg.strategy === 'delete+insert';
  if (staged) {
    await c.run(`CREATE OR REPLACE TEMP TABLE ${BATCH} AS\nSELECT * FROM ${source} AS __dp_b`);
    source = `temp.main.${BATCH}`;
  }
  try {
    const batch = (await c.all<{ column_name: string; column_type: string }>(`DESCRIBE SELECT * FROM ${source} AS __dp_b`)).map((r) => ({ name: r.column_name, type: r.column_type }));
    const existing = await columnsOf(c, target);
    requireColumns(batch, cfg.uniqueKey, 'unique_key');
    const schemaChanges = await reconcileColumns(c, m, cfg, target, batch, existing);
    const cols = batch.map((b) => quoteIdent(b.name));
    const insert = `INSERT INTO ${target} (${cols.join(', ')}) SELECT ${cols.join(', ')} FROM ${source} AS __dp_b`;
    const count = async (sql: string) => Number((await c.value<bigint | number>(sql)) ?? 0);
    let rows: number;
    if (cfg.strategy === 'append') rows = await count(insert);
    else if (cfg.strategy === 'delete+insert') {
      const keys = cfg.uniqueKey.map(quoteIdent).join(', ');
      await c.run(`DELETE FROM ${target} WHERE (${keys}) IN (SELECT (${keys}) FROM ${source})`);
      rows = await count(insert);
    } else {
      const keySet = new Set(cfg.uniqueKey.map(lc));
      const updates = batch.filter((b) => !keySet.has(lc(b.name))).map((b) => `${quoteIdent(b.name)} = __dp_n.${quoteIdent(b.name)}`);
      rows = await count(
        `MERGE INTO ${target} AS __dp_t USING ${source} AS __dp_n ON (${keyMatch('__dp_t', '__dp_n', cfg.uniqueKey)})
         ${updates.length ? `WHEN MATCHED THEN UPDATE SET ${updates.join(', ')}` : ''}
         WHEN NOT MATCHED THEN INSERT (${cols.join(', ')}) VALUES (${batch.map((b) => `__dp_n.${quoteIdent(b.name)}`).join(', ')})`,
      );
    }
    return { rows_applied: rows, ...(schemaChanges.length ? { schema_changes: schemaChanges } : {}) };
  } finally {
    if (staged) await c.run(`DROP TABLE IF EXISTS temp.main.${BATCH}`);
  }
}

/** on_schema_change: compares the batch's columns with the table's and acts on the difference. */
async function reconcileColumns(c: DbConnection, m: GraphModel, cfg: IncrementalConfig, target: string, batch: Column[], existing: Column[]): Promise<string[]> {
  const have = new Map(existing.map((e) => [lc(e.name), e]));
  const incoming = new Map(batch.map((b) => [lc(b.name), b]));
  const added = batch.filter((b) => !have.has(lc(b.name)));
  const removed = existing.filter((e) => !incoming.has(lc(e.name)));
  const retyped = batch.filter((b) => have.has(lc(b.name)) && have.get(lc(b.name))!.type !== b.type);
  if (!added.length && !removed.length && !retyped.length) return [];
  const describe = [
    ...added.map((a) => `+${a.name} ${a.type}`),
    ...removed.map((r) => `-${r.name}`),
    ...retyped.map((t) => `~${t.name} ${have.get(lc(t.name))!.type} → ${t.type}`),
  ];
  if (cfg.onSchemaChange === 'fail') {
    throw badRequest(
      'schema_changed',
      `the model's columns changed (${describe.join(', ')}) and on_schema_change=fail; set on_schema_change=append_new_columns or sync_all_columns, or run dp transform --full-refresh`,
      { changes: describe },
    );
  }
  const changes: string[] = [];
  for (const a of added) {
    await c.run(`ALTER TABLE ${target} ADD COLUMN ${quoteIdent(a.name)} ${a.type}`);
    changes.push(`+${a.name}`);
  }
  if (cfg.onSchemaChange === 'sync_all_columns') {
    for (const r of removed) {
      await c.run(`ALTER TABLE ${target} DROP COLUMN ${quoteIdent(r.name)}`);
      changes.push(`-${r.name}`);
    }
    for (const t of retyped) {
      await c.run(`ALTER TABLE ${target} ALTER COLUMN ${quoteIdent(t.name)} SET DATA TYPE ${t.type}`);
      changes.push(`~${t.name}`);
    }
  }
  return changes;
}

/** Records new versions of changed rows in an existing scd2 table. */
export async function applyScd2(c: DbConnection, m: GraphModel, runStamp: string): Promise<MaterializeOutcome> {
  const cfg: Scd2Config = m.file.modelConfig.scd2!;
  const target = qualified(m.info.schema, m.info.name);
  await c.run(`CREATE OR REPLACE TEMP TABLE ${BATCH} AS\nSELECT * FROM (\n${m.file.body}\n) AS __dp_src`);
  try {
    const batch = await columnsOf(c, `temp.main.${BATCH}`);
    const existing = await columnsOf(c, target);
    const own = existing.filter((e) => !(SCD2_COLUMNS as readonly string[]).includes(lc(e.name)));
    const ownNames = own.map((o) => lc(o.name)).join(',');
    if (batch.map((b) => lc(b.name)).join(',') !== ownNames) {
      throw badRequest(
        'schema_changed',
        `the model's columns (${batch.map((b) => b.name).join(', ')}) differ from the scd2 table's (${own.map((o) => o.name).join(', ')}); dp transform --full-refresh rebuilds it from the current rows (its history is lost)`,
        {},
      );
    }
    requireColumns(batch, cfg.uniqueKey, 'unique_key');
    const keySet = new Set(cfg.uniqueKey.map(lc));
    let changed: string;
    if (cfg.strategy === 'timestamp') {
      requireColumns(batch, [cfg.updatedAt!], 'updated_at');
      changed = `__dp_n.${quoteIdent(cfg.updatedAt!)} > __dp_t.${quoteIdent(cfg.updatedAt!)}`;
    } else {
      const checked = cfg.checkCols ?? batch.map((b) => b.name).filter((n) => !keySet.has(lc(n)));
      requireColumns(batch, checked, 'check_cols');
      changed = checked.length ? checked.map((col) => `__dp_n.${quoteIdent(col)} IS DISTINCT FROM __dp_t.${quoteIdent(col)}`).join(' OR ') : 'FALSE';
    }
    const firstKey = quoteIdent(cfg.uniqueKey[0]);
    await c.run(
      `CREATE OR REPLACE TEMP TABLE ${CHANGES} AS
       SELECT __dp_n.*, ${validFrom(cfg, '__dp_n', runStamp)} AS __dp_valid_from
         FROM ${BATCH} AS __dp_n
         LEFT JOIN ${target} AS __dp_t ON __dp_t.is_current AND ${keyMatch('__dp_t', '__dp_n', cfg.uniqueKey)}
        WHERE __dp_t.${firstKey} IS NULL OR (${changed})`,
    );
    try {
      const rows = Number((await c.value<bigint | number>(`SELECT count(*) FROM ${CHANGES}`)) ?? 0);
      if (rows > 0) {
        await c.run(
          `UPDATE ${target} SET valid_to = __dp_c.__dp_valid_from, is_current = FALSE
             FROM ${CHANGES} AS __dp_c WHERE ${target}.is_current AND ${keyMatch(target, '__dp_c', cfg.uniqueKey)}`,
        );
        const cols = batch.map((b) => quoteIdent(b.name));
        await c.run(
          `INSERT INTO ${target} (${cols.join(', ')}, valid_from, valid_to, is_current)
           SELECT ${cols.join(', ')}, __dp_valid_from, NULL, TRUE FROM ${CHANGES}`,
        );
      }
      let closed = 0;
      if (cfg.hardDeletes === 'invalidate') {
        closed = Number(
          (await c.value<bigint | number>(
            `SELECT count(*) FROM ${target} AS __dp_t WHERE is_current AND NOT EXISTS (SELECT 1 FROM ${BATCH} AS __dp_n WHERE ${keyMatch('__dp_t', '__dp_n', cfg.uniqueKey)})`,
          )) ?? 0,
        );
        if (closed > 0) {
          await c.run(
            `UPDATE ${target} SET valid_to = TIMESTAMP ${quoteLiteral(runStamp)}, is_current = FALSE
              WHERE is_current AND NOT EXISTS (SELECT 1 FROM ${BATCH} AS __dp_n WHERE ${keyMatch(target, '__dp_n', cfg.uniqueKey)})`,
          );
        }
      }
      return { rows_applied: rows + closed };
    } finally {
      await c.run(`DROP TABLE IF EXISTS temp.main.${CHANGES}`);
    }
  } finally {
    await c.run(`DROP TABLE IF EXISTS temp.main.${BATCH}`);
  }
}
