/**
 * Ordering an incremental read by its cursor column when the source cannot: an HTTP API returns
 * records in its own order (a payments API lists newest first), but the connectors plugin keeps
 * the last row's cursor value as the new watermark, so rows must arrive in cursor order. The rows
 * are spooled into a private in-memory DuckDB (it spills to disk past its memory limit) and
 * streamed back sorted, one batch at a time.
 */
import type { ConnectorBatch, ConnectorColumn, ConnectorRuntime } from '../../sdk/index.js';
import { privateDuckDb } from './files.js';

const ISO = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?\s*(Z|[+-]\d{2}(:?\d{2})?)?$/i;

/** A sort key: numbers and instants as a number, anything else as text. */
function keyOf(v: unknown): { num: number | null; text: string | null } {
  if (v === null || v === undefined) return { num: null, text: null };
  if (typeof v === 'number') return { num: v, text: null };
  if (typeof v === 'bigint') return { num: Number(v), text: null };
  if (v instanceof Date) return { num: v.getTime(), text: null };
  const s = String(v);
  if (ISO.test(s)) {
    const t = Date.parse(/[T ]/.test(s) ? s.replace(' ', 'T') : s);
    if (!Number.isNaN(t)) return { num: t, text: null };
  }
  if (/^-?\d+(\.\d+)?$/.test(s)) return { num: Number(s), text: null };
  return { num: null, text: s };
}

function serialize(row: unknown[]): string {
  return JSON.stringify(row, (_k, v) => (typeof v === 'bigint' ? v.toString() : v));
}

/** The batches' rows sorted by `column` (nulls first, ties in arrival order), in batches of `batchRows`. */
export async function* orderedByCursor(
  batches: AsyncIterable<ConnectorBatch>,
  column: string,
  batchRows: number,
  signal: AbortSignal,
  runtime: ConnectorRuntime | undefined,
): AsyncGenerator<ConnectorBatch> {
  const conn = await privateDuckDb(runtime, { memoryLimit: '256MB' });
  try {
    let columns: ConnectorColumn[] | undefined;
    let index = -1;
    let seq = 0;
    await conn.bulkLoad(
      {
        table: 'spool',
        mode: 'create',
        columns: [
          { name: 'key_num', type: 'DOUBLE' },
          { name: 'key_text', type: 'VARCHAR' },
          { name: 'seq', type: 'BIGINT' },
          { name: 'row_json', type: 'VARCHAR' },
        ],
      },
      async (writer) => {
        for await (const batch of batches) {
          signal.throwIfAborted();
          if (!columns) {
            columns = batch.columns;
            index = columns.findIndex((c) => c.name === column);
          }
          const rows = batch.rows.map((row) => {
            const key = keyOf(index >= 0 ? row[index] : null);
            return [key.num, key.text, seq++, serialize(row)];
          });
          if (rows.length) await writer.appendRows(rows);
        }
      },
    );
    if (!columns) return;
    const result = await conn.stream('SELECT row_json FROM spool ORDER BY key_num NULLS FIRST, key_text NULLS FIRST, seq');
    let pending: unknown[][] = [];
    let yielded = false;
    for await (const rows of result.chunks) {
      signal.throwIfAborted();
      for (const r of rows) pending.push(JSON.parse(String(r[0])) as unknown[]);
      while (pending.length >= batchRows) {
        yield { columns, rows: pending.slice(0, batchRows) };
        yielded = true;
        pending = pending.slice(batchRows);
      }
    }
    if (pending.length || !yielded) yield { columns, rows: pending };
  } finally {
    conn.close();
  }
}
