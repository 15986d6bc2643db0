/** RFC 4180 CSV writing (DuckDB reads CSV; writing a row is all we do here). */
export function csvField(value: unknown): string {
  if (value === null || value === undefined) return '';
  const s = typeof value === 'object' ? JSON.stringify(value) : String(value);
  return /[",\r\n]/.test(s) ? '"' + s.replace(/"/g, '""') + '"' : s;
}

export function csvLine(values: unknown[]): string {
  return values.map(csvField).join(',') + '\r\n';
}

/** Header line, then one line per row, chunk by chunk: memory stays bounded by one chunk. */
export async function* csvLines(columns: string[], chunks: AsyncIterable<unknown[][]>): AsyncGenerator<string> {
  yield csvLine(columns);
  for await (const rows of chunks) {
    let block = '';
    for (const row of rows) block += csvLine(row);
    if (block) yield block;
  }
}
