/**
 * A sync on an environment whose target is a warehouse (ClickHouse): the rows are read on this
 * machine (the type's SELECT run by DuckDB, or the reader's batches) and handed to the
 * warehouse-target port, which lands them in `schema.table` there in large batches, never row by
 * row. The sync's history and CDC state stay in the local file; no landing table is made there.
 *
 * High watermark: the watermark is the greatest cursor value of the table on the target, not the
 * one stored in the local state. The table and the state live in two places and cannot change in
 * one transaction, so the table is the truth: a table dropped or restored to an older copy is
 * re-read from what it holds (none: a full re-sync), never left with a silent gap. The local
 * state still says whether there is a watermark at all: without its row (first sync, a reset)
 * the sync is a full re-sync, as on the file.
 */
import type { CdcMode, ConnectorReadRequest, ConnectorType, DbConnection, WarehouseTargetService } from '../../sdk/index.js';

/** The CDC modes a sync on a target does; the others are refused (`not_on_target`) naming the mode. */
export const TARGET_CDC_MODES: readonly CdcMode[] = ['full_refresh', 'high_watermark'];

export interface TargetSync {
  schema: string;
  table: string;
  mode: CdcMode;
  /** high_watermark's column, or null. */
  cdcColumn: string | null;
}

/** The watermark a high-watermark sync reads past: the table's greatest cursor value on the target. */
export function targetWatermark(warehouse: WarehouseTargetService, into: TargetSync): Promise<string | null> {
  return into.mode === 'high_watermark' && into.cdcColumn ? warehouse.greatestValue(into.schema, into.table, into.cdcColumn) : Promise.resolve(null);
}

/** The source's columns and rows, read on `conn`: the type's SELECT streamed by DuckDB, else its reader's batches. */
async function readRows(conn: DbConnection, type: ConnectorType, config: Record<string, unknown>, request: ConnectorReadRequest) {
  const select = type.readSql?.(config, request) ?? null;
  if (select) {
    const s = await conn.stream(select);
    const rows = s.chunks[Symbol.asyncIterator]();
    return { columns: s.columns.map((name, i) => ({ name, type: s.column_types[i]! })), rows: { [Symbol.asyncIterator]: () => rows }, close: async () => void (await rows.return?.()) };
  }
  const it = type.read(config, request)[Symbol.asyncIterator]();
  const first = await it.next();
  if (first.done) throw new Error('the source returned no result (not even its columns)');
  const rows = (async function* () {
    yield first.value.rows;
    for (let next = await it.next(); !next.done; next = await it.next()) yield next.value.rows;
  })();
  return { columns: first.value.columns.map((c) => ({ name: c.name, type: c.type })), rows, close: async () => void (await it.return?.()) };
}

/**
 * Loads one table on the target: replaced (full refresh, or a high watermark with none on the
 * target), else the rows past `before` appended. Returns the rows loaded and the watermark after.
 */
export async function syncTableToTarget(
  warehouse: WarehouseTargetService,
  conn: DbConnection,
  type: ConnectorType,
  config: Record<string, unknown>,
  request: ConnectorReadRequest,
  into: TargetSync,
  before: string | null,
): Promise<{ rows: number; watermark: string | null }> {
  const source = await readRows(conn, type, config, request);
  // A load that fails before reading every row still ends the source's read (its connection).
  try {
    return await loadRows(warehouse, source, into, before);
  } finally {
    await source.close().catch(() => undefined);
  }
}

async function loadRows(warehouse: WarehouseTargetService, source: Awaited<ReturnType<typeof readRows>>, into: TargetSync, before: string | null): Promise<{ rows: number; watermark: string | null }> {
  if (into.cdcColumn && !source.columns.some((c) => c.name === into.cdcColumn)) {
    throw new Error(`cdc_column '${into.cdcColumn}' is not a column of the source (columns: ${source.columns.map((c) => c.name).join(', ')})`);
  }
  const mode = into.mode === 'high_watermark' && before !== null ? 'append' : 'replace';
  const { rows } = await warehouse.loadRows({ schema: into.schema, table: into.table, mode, columns: source.columns, rows: source.rows });
  const watermark = into.mode === 'high_watermark' ? (rows > 0 ? await targetWatermark(warehouse, into) : before) : null;
  return { rows, watermark };
}
