/** Where in a statement's text an SQL error points (details.line / details.column of `sql_error`). */

/**
 * Where in its SQL a DuckDB error points, from the `LINE n: <text>` and caret lines it appends
 * (only the message's first line is sent, so the location travels as details). The column is
 * 1-based and given only when DuckDB showed the line from its start (a long line is cut with `...`).
 */
export function errorLocation(message: string): { line?: number; column?: number } {
  const m = /\nLINE (\d+): ([^\n]*)\n( *)\^/.exec(message);
  if (!m) return {};
  const line = Number(m[1]);
  const prefix = `LINE ${m[1]}: `.length;
  const column = m[3].length - prefix + 1;
  return m[2].startsWith('...') || column < 1 ? { line } : { line, column };
}

/** 1-based line and column of a byte offset into `sql` (the parser's error position). */
export function locationAt(sql: string, position: number | undefined): { line?: number; column?: number } {
  if (position === undefined) return {};
  const before = Buffer.from(sql, 'utf8').subarray(0, position).toString('utf8');
  const lines = before.split('\n');
  return { line: lines.length, column: lines[lines.length - 1].length + 1 };
}
