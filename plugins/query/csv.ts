/** RFC 4180 CSV writing (DuckDB reads CSV; writing a row is all we do here). */

/**
 * Text a spreadsheet would run as a formula (OWASP "CSV Injection"): a cell starting with `=`,
 * `+`, `-`, `@`, a tab or a carriage return. A plain number (`-12.5`, `+3`, `1e-9`, a DECIMAL
 * sent as text) is no formula and keeps its sign, and so do `-Infinity` and `NaN`, how
 * non-finite doubles are written.
 */
const FORMULA_START = /^[=+\-@\t\r]/;
const PLAIN_NUMBER = /^[+-]?((\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?|Infinity)$/;

export interface CsvOptions {
  /** Prefix formula-like text cells with `'` so spreadsheets show them as text (default true). */
  escapeFormulas?: boolean;
}

export function csvField(value: unknown, options: CsvOptions = {}): string {
  if (value === null || value === undefined) return '';
  let s = typeof value === 'object' ? JSON.stringify(value) : String(value);
  if (options.escapeFormulas !== false && typeof value !== 'number' && typeof value !== 'bigint' && FORMULA_START.test(s) && !PLAIN_NUMBER.test(s)) s = `'${s}`;
  return /[",\r\n]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;
}

export function csvLine(values: unknown[], options: CsvOptions = {}): string {
  return values.map((v) => csvField(v, options)).join(',') + '\r\n';
}

/** Header line, then one line per row, chunk by chunk: memory stays bounded by one chunk. */
export async function* csvLines(columns: string[], chunks: AsyncIterable<unknown[][]>, options: CsvOptions = {}): AsyncGenerator<string> {
  yield csvLine(columns, options);
  for await (const rows of chunks) {
    let block = '';
    for (const row of rows) block += csvLine(row, options);
    if (block) yield block;
  }
}
