/**
 * Bulk loading through DuckDB's appender, a column chunk at a time (`appendDataChunk`): the
 * port's way for connectors and scripts to move rows in, never one INSERT per row.
 *
 * @duckdb/node-api (1.5) has no Arrow ingestion: the C API's `duckdb_data_chunk_from_arrow`
 * is not bound and there is no `register`/`insertArrowTable`. Column-major batches
 * (`appendColumns`) are the columnar path instead: Arrow record batches map onto them one
 * column array at a time.
 */
import type { DuckDBAppender, DuckDBConnection, DuckDBDecimalType, DuckDBType, DuckDBValue } from '@duckdb/node-api';
import { duckdb } from './database/duckdb-api.js';
import type { BulkLoadResult, BulkTarget, BulkWriter } from '../sdk/db.js';
import { badRequest } from '../sdk/errors.js';
import { qualified, quoteIdent } from '../sdk/sql.js';

const { DuckDBDataChunk, DuckDBDateValue, DuckDBDecimalValue, DuckDBTimestampTZValue, DuckDBTimestampValue, DuckDBTypeId, JSToDuckDBValueConverter } = duckdb;

/** DuckDB's vector size: the most rows one data chunk holds. */
const CHUNK_ROWS = 2048;
const MS_PER_DAY = 86_400_000;
const ISO_INSTANT = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?\s*(Z|[+-]\d{2}(?::?\d{2})?)?$/i;

type Convert = (v: unknown) => DuckDBValue;

/** One turn of the event loop (timers, I/O, other requests) before the work goes on. */
const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Microseconds since the epoch, exactly (fractions down to the microsecond, offsets honoured; no offset means UTC). */
function epochMicros(v: unknown, column: string): bigint {
  if (v instanceof Date) return BigInt(v.getTime()) * 1000n;
  if (typeof v === 'number') return BigInt(Math.round(v * 1000));
  if (typeof v === 'bigint') return v * 1000n;
  const m = typeof v === 'string' ? ISO_INSTANT.exec(v.trim()) : null;
  if (!m) throw badRequest('invalid_bulk_value', `Column '${column}': ${JSON.stringify(String(v))} is not a date or timestamp (use ISO 8601, a Date or epoch milliseconds)`, { column });
  const [, y, mo, d, h = '0', mi = '0', s = '0', frac = '', zone] = m;
  let ms = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s));
  if (zone && zone.toUpperCase() !== 'Z') {
    const sign = zone.startsWith('-') ? -1 : 1;
    const digits = zone.slice(1).replace(':', '');
    ms -= sign * (Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2, 4) || '0')) * 60_000;
  }
  return BigInt(ms) * 1000n + BigInt((frac + '000000').slice(0, 6));
}

/** The scaled integer of a decimal string, exactly. */
function scaledDecimal(v: string, scale: number, column: string): bigint {
  const m = /^\s*([+-]?)(\d*)(?:\.(\d*))?\s*$/.exec(v);
  if (!m || (m[2] === '' && !m[3])) throw badRequest('invalid_bulk_value', `Column '${column}': ${JSON.stringify(v)} is not a decimal number`, { column });
  const [, sign, whole, frac = ''] = m;
  if (frac.length > scale && /[1-9]/.test(frac.slice(scale))) {
    throw badRequest('invalid_bulk_value', `Column '${column}': ${v} has more than ${scale} decimal places`, { column });
  }
  const digits = BigInt((whole || '0') + (frac + '0'.repeat(scale)).slice(0, scale));
  return sign === '-' ? -digits : digits;
}

function converterFor(type: DuckDBType, column: string): Convert {
  const nullable =
    (f: Convert): Convert =>
    (v) =>
      v === null || v === undefined ? null : f(v);
  switch (type.typeId) {
    case DuckDBTypeId.TIMESTAMP:
      return nullable((v) => new DuckDBTimestampValue(epochMicros(v, column)));
    case DuckDBTypeId.TIMESTAMP_TZ:
      return nullable((v) => new DuckDBTimestampTZValue(epochMicros(v, column)));
    case DuckDBTypeId.DATE:
      return nullable((v) => new DuckDBDateValue(Math.floor(Number(epochMicros(v, column) / 1000n) / MS_PER_DAY)));
    case DuckDBTypeId.DECIMAL: {
      const { width, scale } = type as DuckDBDecimalType;
      return nullable((v) => {
        if (typeof v === 'string') return new DuckDBDecimalValue(scaledDecimal(v, scale, column), width, scale);
        if (typeof v === 'bigint') return new DuckDBDecimalValue(v * 10n ** BigInt(scale), width, scale);
        return DuckDBDecimalValue.fromDouble(Number(v), width, scale);
      });
    }
    case DuckDBTypeId.BIGINT:
    case DuckDBTypeId.HUGEINT:
    case DuckDBTypeId.UBIGINT:
    case DuckDBTypeId.UHUGEINT:
      return nullable((v) => (typeof v === 'string' ? BigInt(v) : typeof v === 'number' ? BigInt(v) : (v as bigint)));
    case DuckDBTypeId.VARCHAR:
      return nullable((v) => (typeof v === 'string' ? v : typeof v === 'object' ? JSON.stringify(v) : String(v)));
    default:
      return nullable((v) => JSToDuckDBValueConverter(v as never, type, JSToDuckDBValueConverter));
  }
}

function columnSql(c: { name: string; type: string }): string {
  if (!/^[A-Za-z][A-Za-z0-9_ ,()[\]]*$/.test(c.type)) throw badRequest('invalid_bulk_column', `Column '${c.name}': '${c.type}' is not a DuckDB type name`, { column: c.name });
  return `${quoteIdent(c.name)} ${c.type}`;
}

/** Creates the target when asked, then hands fn a writer over one appender. */
export async function bulkLoadOn(conn: DuckDBConnection, target: BulkTarget, fn: (writer: BulkWriter) => Promise<void>): Promise<BulkLoadResult> {
  const schema = target.schema ?? 'main';
  const name = qualified(schema, target.table);
  const mode = target.mode ?? 'append';
  if (mode !== 'append') {
    if (!target.columns?.length) throw badRequest('invalid_bulk_target', `Bulk load into ${schema}.${target.table}: mode '${mode}' needs columns`);
    const body = target.columns.map(columnSql).join(', ');
    await conn.run(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(schema)}`);
    await conn.run(`CREATE ${mode === 'replace' ? 'OR REPLACE TABLE' : 'TABLE IF NOT EXISTS'} ${name} (${body})`);
  }
  const appender: DuckDBAppender = await conn.createAppender(target.table, schema);
  let rows = 0;
  try {
    const types: DuckDBType[] = [];
    for (let i = 0; i < appender.columnCount; i++) types.push(appender.columnType(i));
    const columns = (await conn.runAndReadAll(
      'SELECT column_name FROM duckdb_columns() WHERE database_name = current_database() AND schema_name = $1 AND table_name = $2 ORDER BY column_index',
      [schema, target.table],
    )).getRows().map((r) => String(r[0]));
    const converters = types.map((t, i) => converterFor(t, columns[i] ?? `#${i + 1}`));

    const appendColumnMajor = async (cols: ReadonlyArray<ReadonlyArray<unknown>>) => {
      if (cols.length !== types.length) {
        throw badRequest('invalid_bulk_batch', `Bulk load into ${schema}.${target.table}: a batch has ${cols.length} columns, the table ${types.length}`);
      }
      const n = cols[0]?.length ?? 0;
      if (cols.some((c) => c.length !== n)) throw badRequest('invalid_bulk_batch', 'Bulk load: the columns of a batch differ in length');
      for (let start = 0; start < n; start += CHUNK_ROWS) {
        // Converting and appending is synchronous work on the event loop: a turn between chunks
        // keeps one large batch from holding every other request (issue 34 item 5).
        if (start > 0) await turn();
        const size = Math.min(CHUNK_ROWS, n - start);
        const chunk = DuckDBDataChunk.create(types, size);
        chunk.setColumns(cols.map((col, i) => {
          const out: DuckDBValue[] = new Array(size);
          const convert = converters[i];
          for (let r = 0; r < size; r++) out[r] = convert(col[start + r]);
          return out;
        }));
        appender.appendDataChunk(chunk);
      }
      rows += n;
    };

    // Batches append one after another, as when each append ran to its end at once.
    let appending: Promise<void> = Promise.resolve();
    const inOrder = (append: () => Promise<void>) => (appending = appending.then(append, append));
    const writer: BulkWriter = {
      columns,
      get rows() {
        return rows;
      },
      appendColumns: (cols) => inOrder(() => appendColumnMajor(cols)),
      appendRows: (batch) =>
        inOrder(() => {
          const width = types.length;
          for (const row of batch) {
            if (row.length !== width) throw badRequest('invalid_bulk_batch', `Bulk load into ${schema}.${target.table}: a row has ${row.length} values, the table ${width} columns`);
          }
          const cols: unknown[][] = types.map((_, i) => batch.map((row) => row[i]));
          return appendColumnMajor(cols);
        }),
    };
    await fn(writer);
    await appending;
    appender.flushSync();
  } catch (e) {
    // Rows still buffered in the appender are dropped rather than flushed by close.
    appender.clear();
    throw e;
  } finally {
    appender.closeSync();
  }
  return { rows };
}
