/**
 * A quick summary of each result column over the rows loaded: non-null and null counts,
 * distinct values, min and max, the mean of numbers, and the most frequent value.
 */
import { useMemo } from 'react';
import { formatValue, isNumericType } from '@dp/ui';
import { toNumber } from '@dp/ui/chart';

export interface ColumnStats {
  name: string;
  type: string;
  count: number;
  nulls: number;
  distinct: number;
  min: string | null;
  max: string | null;
  mean: number | null;
  top: { value: string; count: number } | null;
}

export function summarizeColumns(columns: string[], types: string[], rows: unknown[][]): ColumnStats[] {
  return columns.map((name, c) => {
    const numeric = isNumericType(types[c]);
    const counts = new Map<string, number>();
    let nulls = 0;
    let sum = 0;
    let numbers = 0;
    let min: { key: unknown; text: string } | null = null;
    let max: { key: unknown; text: string } | null = null;
    for (const r of rows) {
      const v = r[c];
      if (v === null || v === undefined) {
        nulls++;
        continue;
      }
      const text = formatValue(v);
      counts.set(text, (counts.get(text) ?? 0) + 1);
      const key = numeric ? toNumber(v) : text;
      if (numeric && key !== null) {
        sum += key as number;
        numbers++;
      }
      if (key === null) continue;
      if (!min || (key as number | string) < (min.key as number | string)) min = { key, text };
      if (!max || (key as number | string) > (max.key as number | string)) max = { key, text };
    }
    let top: ColumnStats['top'] = null;
    for (const [value, count] of counts) if (!top || count > top.count) top = { value, count };
    return { name, type: types[c] ?? '', count: rows.length - nulls, nulls, distinct: counts.size, min: min?.text ?? null, max: max?.text ?? null, mean: numeric && numbers ? sum / numbers : null, top };
  });
}

export function ColumnSummary({ columns, types, rows, more }: { columns: string[]; types: string[]; rows: unknown[][]; more: boolean }) {
  const stats = useMemo(() => summarizeColumns(columns, types, rows), [columns, types, rows]);
  const n = (x: number) => x.toLocaleString();
  return (
    <div className="dp-table-wrap" data-testid="column-summary">
      <p className="dp-muted" style={{ margin: '0 0 0.4rem' }}>
        Over the {n(rows.length)} rows loaded{more ? ' (the result has more: page through it or count rows for the whole)' : ''}.
      </p>
      <table className="dp-table">
        <thead>
          <tr>
            <th>column</th>
            <th>type</th>
            <th style={{ textAlign: 'right' }}>values</th>
            <th style={{ textAlign: 'right' }}>nulls</th>
            <th style={{ textAlign: 'right' }}>distinct</th>
            <th>min</th>
            <th>max</th>
            <th style={{ textAlign: 'right' }}>mean</th>
            <th>most frequent</th>
          </tr>
        </thead>
        <tbody>
          {stats.map((s) => (
            <tr key={s.name}>
              <th scope="row" style={{ textAlign: 'left', position: 'static' }}>
                {s.name}
              </th>
              <td className="dp-muted">{s.type}</td>
              <td style={{ textAlign: 'right' }}>{n(s.count)}</td>
              <td style={{ textAlign: 'right' }}>{s.nulls ? `${n(s.nulls)} (${Math.round((100 * s.nulls) / Math.max(1, rows.length))}%)` : '0'}</td>
              <td style={{ textAlign: 'right' }}>{n(s.distinct)}</td>
              <td>{s.min ?? '—'}</td>
              <td>{s.max ?? '—'}</td>
              <td style={{ textAlign: 'right' }}>{s.mean === null ? '—' : +s.mean.toFixed(4)}</td>
              <td>{s.top ? `${s.top.value.length > 30 ? s.top.value.slice(0, 29) + '…' : s.top.value} (${n(s.top.count)})` : '—'}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
