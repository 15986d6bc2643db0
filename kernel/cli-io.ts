import { LOCAL_ADMIN, type Caller } from '../sdk/auth.js';
import type { CliIO } from '../sdk/plugin.js';

function cell(v: unknown): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

/** Renders rows as an aligned text table (what `dp query` and list commands print). */
export function renderTable(rows: Array<Record<string, unknown>>, columns?: string[]): string {
  const cols = columns ?? [...new Set(rows.flatMap((r) => Object.keys(r)))];
  if (rows.length === 0 && !columns) return '(nothing to list)';
  if (cols.length === 0) return '(no columns)';
  const cells = rows.map((r) => cols.map((c) => cell(r[c]).replace(/\n/g, '\\n')));
  const widths = cols.map((c, i) => Math.min(60, Math.max(c.length, ...cells.map((row) => row[i].length))));
  const fit = (s: string, w: number) => (s.length > w ? s.slice(0, w - 1) + '…' : s.padEnd(w));
  const line = (vals: string[]) => vals.map((v, i) => fit(v, widths[i])).join('  ').trimEnd();
  const out = [line(cols), widths.map((w) => '-'.repeat(w)).join('  ')];
  for (const row of cells) out.push(line(row));
  out.push(`(${rows.length} row${rows.length === 1 ? '' : 's'})`);
  return out.join('\n');
}

export function createCliIO(wantsJson: boolean, caller: Caller = LOCAL_ADMIN): CliIO {
  const tty = Boolean(process.stderr.isTTY);
  let progressShown = false;
  const clearProgress = () => {
    if (tty && progressShown) {
      process.stderr.write('\r\x1b[K');
      progressShown = false;
    }
  };
  return {
    wantsJson,
    caller,
    out(text) {
      clearProgress();
      process.stdout.write(text + '\n');
    },
    err(text) {
      clearProgress();
      process.stderr.write(text + '\n');
    },
    json(value) {
      clearProgress();
      process.stdout.write(JSON.stringify(value, null, 2) + '\n');
    },
    table(rows, columns) {
      clearProgress();
      process.stdout.write(renderTable(rows, columns) + '\n');
    },
    progress(text) {
      if (tty) {
        process.stderr.write('\r\x1b[K' + text.slice(0, (process.stderr.columns ?? 100) - 1));
        progressShown = true;
      } else {
        process.stderr.write(text + '\n');
      }
    },
  };
}
