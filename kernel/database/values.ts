/** Values between JavaScript and DuckDB: parameters bound, result rows converted to JSON. */
import type { DuckDBResult, DuckDBResultReader, DuckDBValue } from '@duckdb/node-api';
import type { SqlParams } from '../../sdk/db.js';

export type Values = DuckDBValue[] | Record<string, DuckDBValue>;

/** JSON conversion that keeps integers as numbers when they fit and DECIMALs as numbers. */
function fixValue(type: string, v: unknown): unknown {
  if (v === null || v === undefined) return null;
  if (typeof v === 'string') {
    if (/^(BIGINT|UBIGINT|HUGEINT|UHUGEINT)$/.test(type)) {
      const n = Number(v);
      return Number.isSafeInteger(n) ? n : v;
    }
    if (type.startsWith('DECIMAL')) return Number(v);
  }
  return v;
}

function needsFix(type: string): boolean {
  return /^(BIGINT|UBIGINT|HUGEINT|UHUGEINT)$/.test(type) || type.startsWith('DECIMAL');
}

export function convertRows(types: string[], rows: unknown[][]): unknown[][] {
  const fixCols = types.map((t, i) => (needsFix(t) ? i : -1)).filter((i) => i >= 0);
  if (fixCols.length === 0) return rows;
  for (const row of rows) for (const i of fixCols) row[i] = fixValue(types[i], row[i]);
  return rows;
}

export function typeNames(r: DuckDBResultReader | DuckDBResult): string[] {
  return r.columnTypes().map((t) => t.toString());
}

/** Binds JS values: DuckDB's node API infers INTEGER/DOUBLE/BOOLEAN/VARCHAR; bigints stay BIGINT. */
export function toValues(params?: SqlParams): Values | undefined {
  if (params === undefined) return undefined;
  const conv = (v: unknown): DuckDBValue => {
    if (v === undefined) return null;
    if (v instanceof Date) return v.toISOString();
    if (typeof v === 'object' && v !== null) return JSON.stringify(v);
    return v as DuckDBValue;
  };
  if (Array.isArray(params)) return params.map(conv);
  const out: Record<string, DuckDBValue> = {};
  for (const [k, v] of Object.entries(params)) out[k] = conv(v);
  return out;
}
