/**
 * Rows read by DuckDB on this machine (seeds, connector syncs) landed in a ClickHouse table in
 * large batches: one streamed INSERT per load (DuckDB's chunks of rows, never row by row).
 *
 *   replace  the rows go to a new table swapped in like a table model (`rebuildSteps`): a failed
 *            load leaves the old table as it was.
 *   append   the rows are staged in `<name>__dp_batch` (created like the table, sharded alike on
 *            a cluster), then added with one INSERT ... SELECT on the server and the stage
 *            dropped: a load that fails while streaming adds nothing, so the table's greatest
 *            cursor value (the next sync's watermark) is never that of a half-sent batch.
 */
import { chIdent, type ClickHouseTarget } from './client.js';
import { BATCH, createDataTable, dropDataTable, rebuildSteps, tableName, type Step, type TargetModel } from './materialize.js';

/** A DuckDB column type as ClickHouse declares it (Nullable: a CSV cell may be empty). */
export function clickhouseType(duck: string): string {
  const t = duck.toUpperCase();
  const decimal = /^DECIMAL\((\d+),\s*(\d+)\)$/.exec(t);
  const base =
    decimal ? `Decimal(${decimal[1]}, ${decimal[2]})`
    : ({ BIGINT: 'Int64', INTEGER: 'Int32', SMALLINT: 'Int16', TINYINT: 'Int8', HUGEINT: 'Int64', UBIGINT: 'UInt64', UINTEGER: 'UInt32', DOUBLE: 'Float64', FLOAT: 'Float32', BOOLEAN: 'UInt8', DATE: 'Date', TIMESTAMP: 'DateTime', 'TIMESTAMP WITH TIME ZONE': 'DateTime' } as Record<string, string>)[t] ?? 'String';
  return `Nullable(${base})`;
}

export interface RowsLoad {
  schema: string;
  table: string;
  mode: 'replace' | 'append';
  /** The rows' columns with their DuckDB types. */
  columns: ReadonlyArray<{ name: string; type: string }>;
  rows: AsyncIterable<unknown[][]>;
}

const DECIMAL_TEXT = /^-?(\d+)(?:\.(\d+))?$/;

/**
 * 18.16 reads a Decimal in JSONEachRow only as a JSON number, and readers give decimals as text
 * (exact). A text of up to 15 significant digits is sent as the number it spells (a double keeps
 * 15 digits, so the number's text is the same decimal); a longer one stays text, which the server
 * refuses rather than round.
 */
function decimalsAsNumbers(columns: RowsLoad['columns'], rows: AsyncIterable<unknown[][]>): AsyncIterable<unknown[][]> {
  const decimals = columns.flatMap((c, i) => (/^DECIMAL/i.test(c.type) ? [i] : []));
  if (!decimals.length) return rows;
  const exact = (v: unknown): unknown => {
    if (v === null || v === undefined || typeof v === 'number') return v;
    const text = String(v);
    const m = DECIMAL_TEXT.exec(text);
    return m && (m[1]!.replace(/^0+/, '') + (m[2] ?? '')).length <= 15 ? Number(text) : text;
  };
  return (async function* () {
    for await (const batch of rows) {
      for (const row of batch) for (const i of decimals) row[i] = exact(row[i]);
      yield batch;
    }
  })();
}

function tableModel(schema: string, table: string, columns: RowsLoad['columns']): TargetModel {
  return { model: `${schema}.${table}`, database: schema, name: table, materialized: 'table', strategy: 'append', uniqueKey: [], orderBy: null, shardingKey: null, select: 'SELECT 1', filter: null, columns: columns.map((c) => ({ name: c.name, type: clickhouseType(c.type) })) };
}

async function run(target: ClickHouseTarget, steps: Step[]): Promise<void> {
  for (const step of steps) if ('sql' in step) await target.command(step.sql);
}

/** What `schema` holds under `table` on the target: a table, a view, or nothing. */
export async function relationKind(target: ClickHouseTarget, schema: string, table: string): Promise<'table' | 'view' | null> {
  return (await target.relations({ schema })).find((r) => r.name === table)?.kind ?? null;
}

/** Loads `load.rows` into `schema.table` on the target (see the file comment); the rows sent. */
export async function loadRowsOnTarget(target: ClickHouseTarget, load: RowsLoad, existing?: 'table' | 'view' | null): Promise<{ rows: number }> {
  const on = target.cluster ? ` ON CLUSTER ${chIdent(target.cluster)}` : '';
  await target.command(`CREATE DATABASE IF NOT EXISTS ${chIdent(load.schema)}${on}`);
  const kind = existing === undefined ? await relationKind(target, load.schema, load.table) : existing;
  const model = tableModel(load.schema, load.table, load.columns);
  const names = load.columns.map((c) => c.name);
  if (load.mode === 'replace' || kind !== 'table') {
    const steps = rebuildSteps(model, kind, target.cluster);
    // Instead of INSERT ... SELECT: the rows, streamed from DuckDB.
    const insertAt = steps.findIndex((s) => 'sql' in s && s.sql.startsWith('INSERT INTO'));
    await run(target, steps.slice(0, insertAt));
    const into = /^INSERT INTO `[^`]*`\.`([^`]*)`/.exec((steps[insertAt] as { sql: string }).sql)![1]!;
    const loaded = await target.bulkInsert({ schema: load.schema, name: into }, names, decimalsAsNumbers(load.columns, load.rows));
    await run(target, steps.slice(insertAt + 1));
    return loaded;
  }
  const have = new Set((await target.columns({ schema: load.schema, table: load.table })).map((c) => c.name));
  const added = names.filter((n) => !have.has(n));
  if (added.length) throw new Error(`the source has columns the table ${load.schema}.${load.table} on the target lacks (${added.join(', ')}): a full re-sync (reset the table's CDC state) rebuilds it`);
  const stage = load.table + BATCH;
  const drop = dropDataTable(load.schema, stage, target.cluster);
  await run(target, [...drop, ...createDataTable(model, stage, target.cluster)].map((sql) => ({ sql })));
  try {
    const loaded = await target.bulkInsert({ schema: load.schema, name: stage }, names, decimalsAsNumbers(load.columns, load.rows));
    const cols = names.map(chIdent).join(', ');
    await target.command(`INSERT INTO ${tableName(load.schema, load.table)} (${cols}) SELECT ${cols} FROM ${tableName(load.schema, stage)}`);
    return loaded;
  } finally {
    await run(target, drop.map((sql) => ({ sql })));
  }
}

/** The greatest value of `column` in `schema.table` on the target as text, or null when the table is absent or holds no value. */
export async function greatestOnTarget(target: ClickHouseTarget, schema: string, table: string, column: string): Promise<string | null> {
  if ((await relationKind(target, schema, table)) !== 'table') return null;
  if (!(await target.columns({ schema, table })).some((c) => c.name === column)) return null;
  const r = await target.query(`SELECT toString(max(${chIdent(column)})) AS w, count(${chIdent(column)}) AS n FROM ${tableName(schema, table)}`);
  const [w, n] = r.rows[0] ?? [];
  return Number(n) > 0 ? String(w) : null;
}
