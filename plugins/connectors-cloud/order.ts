/**
 * Ordering an incremental read by its cursor column when the source cannot: an HTTP API returns
 * records in its own order (a payments API lists newest first), but the connectors plugin keeps
 * the last row's cursor value as the new watermark, so rows must arrive in cursor order. The rows
 * are spooled into a private in-memory DuckDB (it spills to disk past its memory limit) and
 * streamed back sorted, one batch at a time.
 */
import os from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import type { ConnectorBatch, ConnectorColumn } from '../../sdk/index.js';

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
export async function* orderedByCursor(batches: AsyncIterable<ConnectorBatch>, column: string, batchRows: number, signal: AbortSignal): AsyncGenerator<ConnectorBatch> {
  const instance = await DuckDBInstance.create(':memory:', { threads: '1', memory_limit: '256MB', temp_directory: path.join(os.tmpdir(), 'dp-cloud-spill') });
  const conn = await instance.connect();
  try {
    await conn.run('CREATE TABLE spool (key_num DOUBLE, key_text VARCHAR, seq BIGINT, row_json VARCHAR)');
    const appender = await conn.createAppender('spool');
    let columns: ConnectorColumn[] | undefined;
    let index = -1;
    let seq = 0n;
    for await (const batch of batches) {
      signal.throwIfAborted();
      if (!columns) {
        columns = batch.columns;
        index = columns.findIndex((c) => c.name === column);
      }
      for (const row of batch.rows) {
        const key = keyOf(index >= 0 ? row[index] : null);
        if (key.num === null) appender.appendNull();
        else appender.appendDouble(key.num);
        if (key.text === null) appender.appendNull();
        else appender.appendVarchar(key.text);
        appender.appendBigInt(seq++);
        appender.appendVarchar(serialize(row));
        appender.endRow();
      }
    }
    appender.flushSync();
    appender.closeSync();
    if (!columns) return;
    const result = await conn.stream('SELECT row_json FROM spool ORDER BY key_num NULLS FIRST, key_text NULLS FIRST, seq');
    let pending: unknown[][] = [];
    let yielded = false;
    for await (const rows of result.yieldRowsJs()) {
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
    conn.closeSync();
    instance.closeSync();
  }
}
