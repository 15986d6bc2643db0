/**
 * Columns and values shared by the types that read schemaless records (JSON APIs, spreadsheets):
 * a DuckDB type inferred from sample values, and each later value checked against it, so the rows
 * a read yields always fit the table the first batch defined.
 */
import { DpError, type ConnectorBatch, type ConnectorColumn } from '../../sdk/index.js';

const ISO_TIMESTAMP = /^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}(:?\d{2})?)?$/i;
const ISO_DATE = /^\d{4}-\d{2}-\d{2}$/;
const HAS_OFFSET = /(Z|[+-]\d{2}(:?\d{2})?)$/i;

type Kind = 'BIGINT' | 'DOUBLE' | 'BOOLEAN' | 'DATE' | 'TIMESTAMP' | 'TIMESTAMPTZ' | 'JSON' | 'VARCHAR';

function kindOf(v: unknown): Kind | undefined {
  if (v === null || v === undefined) return undefined;
  if (typeof v === 'boolean') return 'BOOLEAN';
  if (typeof v === 'bigint') return 'BIGINT';
  if (typeof v === 'number') return Number.isSafeInteger(v) ? 'BIGINT' : 'DOUBLE';
  if (v instanceof Date) return 'TIMESTAMP';
  if (typeof v === 'string') {
    if (ISO_DATE.test(v)) return 'DATE';
    if (ISO_TIMESTAMP.test(v)) return HAS_OFFSET.test(v) ? 'TIMESTAMPTZ' : 'TIMESTAMP';
    return 'VARCHAR';
  }
  return 'JSON';
}

function widen(a: Kind | undefined, b: Kind | undefined): Kind | undefined {
  if (!a) return b;
  if (!b || a === b) return a;
  const pair = new Set([a, b]);
  if (pair.has('BIGINT') && pair.has('DOUBLE')) return 'DOUBLE';
  if (pair.has('DATE') && (pair.has('TIMESTAMP') || pair.has('TIMESTAMPTZ'))) return pair.has('TIMESTAMPTZ') ? 'TIMESTAMPTZ' : 'TIMESTAMP';
  if (pair.has('TIMESTAMP') && pair.has('TIMESTAMPTZ')) return 'TIMESTAMPTZ';
  return 'VARCHAR';
}

/** Columns of a set of records: keys in first-seen order, each typed from every value seen. */
export function inferColumns(records: ReadonlyArray<Record<string, unknown>>): ConnectorColumn[] {
  const kinds = new Map<string, Kind | undefined>();
  for (const r of records) {
    for (const [k, v] of Object.entries(r)) kinds.set(k, widen(kinds.get(k), kindOf(v)));
  }
  return [...kinds].map(([name, kind]) => ({ name, type: kind ?? 'VARCHAR' }));
}

/** Columns of row arrays under known names. */
export function inferColumnsOfRows(names: readonly string[], rows: ReadonlyArray<ReadonlyArray<unknown>>): ConnectorColumn[] {
  return names.map((name, i) => {
    let kind: Kind | undefined;
    for (const row of rows) kind = widen(kind, kindOf(row[i]));
    return { name, type: kind ?? 'VARCHAR' };
  });
}

/** A value in the form the database port's bulk loader takes for `type`; throws when it cannot fit. */
export function coerce(value: unknown, column: ConnectorColumn): unknown {
  if (value === null || value === undefined) return null;
  const kind = column.type;
  const misfit = () =>
    new DpError(502, 'remote_schema_changed', `Column '${column.name}' was read as ${kind}, but a later value is ${JSON.stringify(String(value)).slice(0, 60)}: list the column's type in the connection's config or re-discover`, {
      column: column.name,
      type: kind,
    });
  switch (kind) {
    case 'VARCHAR':
      return typeof value === 'string' ? value : value instanceof Date ? value.toISOString() : typeof value === 'object' ? JSON.stringify(value) : String(value);
    case 'JSON':
      return JSON.stringify(value);
    case 'BIGINT':
      if (typeof value === 'bigint') return value;
      if (typeof value === 'number' && Number.isSafeInteger(value)) return value;
      if (typeof value === 'string' && /^-?\d+$/.test(value)) return value;
      throw misfit();
    case 'DOUBLE':
      if (typeof value === 'number') return value;
      if (typeof value === 'bigint') return Number(value);
      if (typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value))) return Number(value);
      throw misfit();
    case 'BOOLEAN':
      if (typeof value === 'boolean') return value;
      if (value === 'true' || value === 'false') return value === 'true';
      throw misfit();
    case 'DATE':
    case 'TIMESTAMP':
    case 'TIMESTAMPTZ':
      if (value instanceof Date) return value;
      if (typeof value === 'string' && (ISO_DATE.test(value) || ISO_TIMESTAMP.test(value))) return value;
      throw misfit();
    default:
      return value;
  }
}

/** Record objects as rows in `columns` order (keys not in `columns` are dropped). */
export function recordsToRows(records: ReadonlyArray<Record<string, unknown>>, columns: readonly ConnectorColumn[]): unknown[][] {
  return records.map((r) => columns.map((c) => coerce(r[c.name], c)));
}

export const DEFAULT_BATCH_ROWS = 10_000;

export function batchRowsOf(requested: number | undefined): number {
  return requested && requested > 0 ? Math.min(requested, 100_000) : DEFAULT_BATCH_ROWS;
}

/** Splits rows into batches of at most `size` rows. */
export function* chunked(columns: ConnectorColumn[], rows: unknown[][], size: number): Generator<ConnectorBatch> {
  for (let i = 0; i < rows.length; i += size) yield { columns, rows: rows.slice(i, i + size) };
}

/** Only the requested columns (in the requested order), when the request names some. */
export function pickColumns(columns: ConnectorColumn[], wanted: string[] | undefined, table: string): { columns: ConnectorColumn[]; index: number[] } {
  if (!wanted?.length) return { columns, index: columns.map((_, i) => i) };
  const index = wanted.map((w) => {
    const i = columns.findIndex((c) => c.name === w);
    if (i < 0) throw new DpError(404, 'source_table_not_found', `Table '${table}' has no column '${w}'`, { table, column: w });
    return i;
  });
  return { columns: index.map((i) => columns[i]!), index };
}

/** Compares a record's cursor value with a high watermark: numbers numerically, dates as instants, else as text. */
export function isAfter(value: unknown, after: unknown): boolean {
  if (value === null || value === undefined) return false;
  if (after === null || after === undefined) return true;
  if (typeof value === 'number' || typeof value === 'bigint') {
    const a = typeof after === 'string' ? Number(after) : after;
    return typeof a === 'number' || typeof a === 'bigint' ? value > a : String(value) > String(after);
  }
  const v = value instanceof Date ? value.getTime() : typeof value === 'string' && (ISO_TIMESTAMP.test(value) || ISO_DATE.test(value)) ? Date.parse(value) : NaN;
  const a = after instanceof Date ? after.getTime() : typeof after === 'string' ? Date.parse(after) : NaN;
  if (!Number.isNaN(v) && !Number.isNaN(a)) return v > a;
  return String(value) > String(after);
}

/** A watermark as text for a URL parameter or a SQL literal (dates in ISO 8601). */
export function watermarkText(after: unknown): string {
  if (after instanceof Date) return after.toISOString();
  return String(after);
}
