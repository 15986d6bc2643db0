/**
 * The results grid: virtualized rows (@tanstack/react-virtual) so 10,000 rows scroll as fast as
 * 10, column types under the names, numbers right-aligned, NULLs dimmed, masked columns marked.
 */
import { useMemo, useRef } from 'react';
import { useVirtualizer } from '@tanstack/react-virtual';
import { formatValue, Icon, isNumericType } from './components';

export interface ResultsGridProps {
  columns: string[];
  /** DuckDB type names, one per column. */
  columnTypes?: string[];
  /** Rows as arrays in `columns` order (the shape /api/query answers). */
  rows: unknown[][];
  /** Columns whose values the server masked for this caller: shown with a lock. */
  masked?: Iterable<string>;
  /**
   * Masked columns by position, with the tooltip saying how (the query response's
   * `masked_columns`); exact where two result columns share a name.
   */
  maskedAt?: ReadonlyMap<number, string>;
  /** Height of the scrolling area (CSS length; default fills the parent). */
  height?: number | string;
  /** Row number of the first row (for pages past the first). */
  firstRowNumber?: number;
}

const ROW_HEIGHT = 28;
const CHAR_PX = 7.6;

export function ResultsGrid({ columns, columnTypes = [], rows, masked, maskedAt, height = '100%', firstRowNumber = 1 }: ResultsGridProps) {
  const scroller = useRef<HTMLDivElement>(null);
  // Per column: the masked tooltip, or undefined when the column is not masked.
  const maskTitles = useMemo(() => {
    const names = new Set(masked ?? []);
    return columns.map((c, i) => maskedAt?.get(i) ?? (names.has(c) ? `${c}: masked for your role` : undefined));
  }, [columns, masked, maskedAt]);
  // Column widths from the header and a sample of values: stable while scrolling.
  const widths = useMemo(() => {
    const sample = rows.slice(0, 200);
    return columns.map((c, i) => {
      const longest = Math.max(c.length + (maskTitles[i] ? 3 : 0), (columnTypes[i] ?? '').length, ...sample.map((r) => Math.min(60, formatValue(r[i]).length)));
      return Math.round(Math.max(64, Math.min(420, longest * CHAR_PX + 24)));
    });
  }, [columns, columnTypes, rows, maskTitles]);
  const numberWidth = Math.max(40, String(firstRowNumber + rows.length).length * CHAR_PX + 16);
  const template = `${numberWidth}px ${widths.map((w) => `${w}px`).join(' ')}`;
  const total = numberWidth + widths.reduce((a, b) => a + b, 0);
  const virtualizer = useVirtualizer({ count: rows.length, getScrollElement: () => scroller.current, estimateSize: () => ROW_HEIGHT, overscan: 12 });

  return (
    <div className="dp-grid" ref={scroller} style={{ height }} role="grid" aria-rowcount={rows.length + 1} aria-colcount={columns.length} data-testid="results-grid">
      <div className="dp-grid-head" style={{ gridTemplateColumns: template, width: total }} role="row">
        <div className="dp-grid-rownum" role="columnheader">
          #
        </div>
        {columns.map((c, i) => (
          <div
            key={i}
            role="columnheader"
            className={`dp-grid-th${maskTitles[i] ? ' dp-masked' : ''}${isNumericType(columnTypes[i]) ? ' dp-num' : ''}`}
            title={maskTitles[i] ?? `${c} ${columnTypes[i] ?? ''}`}
            data-masked={maskTitles[i] ? 'true' : undefined}
          >
            <span className="dp-grid-name">
              {maskTitles[i] ? <Icon name="lock" size={12} /> : null}
              {c}
            </span>
            <span className="dp-grid-type">{columnTypes[i] ?? ''}</span>
          </div>
        ))}
      </div>
      <div style={{ height: virtualizer.getTotalSize(), width: total, position: 'relative' }}>
        {virtualizer.getVirtualItems().map((v) => {
          const row = rows[v.index];
          return (
            <div key={v.key} className="dp-grid-row" role="row" style={{ gridTemplateColumns: template, transform: `translateY(${v.start}px)`, height: ROW_HEIGHT }}>
              <div className="dp-grid-rownum" role="rowheader">
                {firstRowNumber + v.index}
              </div>
              {columns.map((_c, i) => {
                const value = row[i];
                const text = formatValue(value);
                return (
                  <div
                    key={i}
                    role="gridcell"
                    className={`dp-grid-td${value === null || value === undefined ? ' dp-null' : ''}${isNumericType(columnTypes[i]) ? ' dp-num' : ''}${maskTitles[i] ? ' dp-masked' : ''}`}
                    title={text.length > 40 ? text : undefined}
                  >
                    {text}
                  </div>
                );
              })}
            </div>
          );
        })}
      </div>
    </div>
  );
}

/** Rows as CSV text (RFC 4180 quoting), for copying a visible result. */
export function toCsv(columns: string[], rows: unknown[][]): string {
  const cell = (v: unknown) => {
    let s = v === null || v === undefined ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v);
    // As the server's export (plugins/query/csv.ts): formula-like text is kept as text in spreadsheets.
    if (typeof v === 'string' && /^[=+\-@\t\r]/.test(s) && !/^[+-]?((\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?|Infinity)$/.test(s)) s = `'${s}`;
    return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
  };
  return [columns.map(cell).join(','), ...rows.map((r) => r.map(cell).join(','))].join('\n');
}
