/**
 * The diff of two states of the warehouse: a version against a later version or the current
 * tables. Per table: added, removed, or modified (row count, columns, or row content changed),
 * with rows added, removed and changed counted by the table's key when both sides have the same
 * key, else by whole row (EXCEPT ALL both ways over the columns both sides share, so a changed
 * row counts as one removed and one added).
 */
import { qualified, quoteIdent, quoteLiteral, type DbConnection } from '../../sdk/index.js';

/** What the diff reads through: one connection under the caller's deadline (the route), or the database port (the CLI). */
export type DiffReader = Pick<DbConnection, 'all' | 'value' | 'catalog'>;
import type { ColumnInfo, DiffResult, TableChange } from './api-types.js';
import { rowCount, userTables } from './catalog.js';
import type { VersionStore } from './versions.js';

/** One side of a table comparison: its columns, key, row count and the SQL relation that reads it. */
interface Side {
  table: string;
  columns: ColumnInfo[];
  key: string[];
  rows: number;
  relation: string;
}

async function versionSides(store: VersionStore, id: string): Promise<Map<string, Side>> {
  const { manifest, files } = await store.manifest(id);
  return new Map(
    manifest.tables.map((t) => [t.table, { table: t.table, columns: t.columns, key: t.key ?? [], rows: t.row_count, relation: `read_parquet(${quoteLiteral(files.get(t.table)!)})` }]),
  );
}

async function currentSides(db: DiffReader): Promise<Map<string, Side>> {
  const out = new Map<string, Side>();
  for (const t of await userTables(db)) out.set(t.table, { table: t.table, columns: t.columns, key: t.key, rows: await rowCount(db, t), relation: qualified(t.schema, t.name) });
  return out;
}

async function count(db: DiffReader, sql: string): Promise<number> {
  return Number((await db.value(sql)) ?? 0);
}

async function compareTable(db: DiffReader, before: Side, after: Side): Promise<TableChange | null> {
  const beforeTypes = new Map(before.columns.map((c) => [c.name, c.type]));
  const afterTypes = new Map(after.columns.map((c) => [c.name, c.type]));
  const added = after.columns.filter((c) => !beforeTypes.has(c.name)).map((c) => c.name);
  const removed = before.columns.filter((c) => !afterTypes.has(c.name)).map((c) => c.name);
  const typeChanged = after.columns.filter((c) => beforeTypes.has(c.name) && beforeTypes.get(c.name) !== c.type).map((c) => c.name);
  // Rows are compared on the columns both sides have with one type.
  const common = after.columns.filter((c) => beforeTypes.get(c.name) === c.type).map((c) => c.name);
  const byKey = before.key.length > 0 && before.key.join('\u0000') === after.key.join('\u0000') && before.key.every((k) => common.includes(k));
  let rowsAdded = 0;
  let rowsRemoved = 0;
  let rowsChanged: number | null = null;
  if (common.length > 0) {
    const cols = common.map(quoteIdent).join(', ');
    if (byKey) {
      const keyCols = before.key.map(quoteIdent).join(', ');
      rowsAdded = await count(db, `SELECT count(*) FROM (SELECT ${keyCols} FROM ${after.relation} EXCEPT SELECT ${keyCols} FROM ${before.relation})`);
      rowsRemoved = await count(db, `SELECT count(*) FROM (SELECT ${keyCols} FROM ${before.relation} EXCEPT SELECT ${keyCols} FROM ${after.relation})`);
      const rest = common.filter((c) => !before.key.includes(c));
      rowsChanged = rest.length
        ? await count(
            db,
            `SELECT count(*) FROM ${after.relation} a JOIN ${before.relation} b ON ${before.key.map((k) => `a.${quoteIdent(k)} = b.${quoteIdent(k)}`).join(' AND ')}
              WHERE ${rest.map((c) => `a.${quoteIdent(c)} IS DISTINCT FROM b.${quoteIdent(c)}`).join(' OR ')}`,
          )
        : 0;
    } else {
      rowsAdded = await count(db, `SELECT count(*) FROM (SELECT ${cols} FROM ${after.relation} EXCEPT ALL SELECT ${cols} FROM ${before.relation})`);
      rowsRemoved = await count(db, `SELECT count(*) FROM (SELECT ${cols} FROM ${before.relation} EXCEPT ALL SELECT ${cols} FROM ${after.relation})`);
    }
  } else {
    rowsAdded = after.rows;
    rowsRemoved = before.rows;
  }
  const schemaChanged = added.length + removed.length + typeChanged.length > 0;
  if (!schemaChanged && before.rows === after.rows && rowsAdded === 0 && rowsRemoved === 0 && !rowsChanged) return null;
  return {
    table: after.table,
    change: 'modified',
    rows_before: before.rows,
    rows_after: after.rows,
    row_diff: after.rows - before.rows,
    rows_added: rowsAdded,
    rows_removed: rowsRemoved,
    rows_changed: rowsChanged,
    compared_by: byKey ? 'key' : 'row',
    ...(byKey ? { key: before.key } : {}),
    columns_added: added,
    columns_removed: removed,
    columns_type_changed: typeChanged,
  };
}

/** `from` against `to`, or against the current tables when `to` is absent (`to_version: 'current'`). */
export async function diffVersions(db: DiffReader, store: VersionStore, from: string, to?: string | null): Promise<DiffResult> {
  const before = await versionSides(store, from);
  const after = to ? await versionSides(store, to) : await currentSides(db);
  const changes: TableChange[] = [];
  const names = [...new Set([...before.keys(), ...after.keys()])].sort();
  for (const name of names) {
    const b = before.get(name);
    const a = after.get(name);
    if (!b) changes.push({ table: name, change: 'added', rows: a!.rows });
    else if (!a) changes.push({ table: name, change: 'removed', rows_before: b.rows });
    else {
      const c = await compareTable(db, b, a);
      if (c) changes.push(c);
    }
  }
  return { from_version: from, to_version: to ?? 'current', tables_compared: names.length, changes };
}
