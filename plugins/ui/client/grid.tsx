/**
 * The results grid: virtualized rows (@tanstack/react-virtual) so 10,000 rows scroll as fast as
 * 10, column types under the names, numbers right-aligned, NULLs dimmed, masked columns marked.
 * With `tools`: sort by a column (click its name), filter per column, select cells (click,
 * Shift+click) or rows (click the row number) and copy them (Ctrl/Cmd+C or "Copy") as
 * tab-separated text, all over the rows the grid holds.
 */
import { useEffect, useMemo, useRef, useState, type KeyboardEvent, type MouseEvent } from 'react';
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
  /** Sort, filter, select and copy over the rows held (the SQL workspace). */
  tools?: boolean;
}

const ROW_HEIGHT = 28;
const CHAR_PX = 7.6;

/** A rectangle of selected cells, in view positions (after filter and sort); `rows` when whole rows were picked. */
interface Selection {
  r0: number;
  r1: number;
  c0: number;
  c1: number;
  rows: boolean;
}

type Sort = { column: number; descending: boolean } | null;

/** Orders two cell values: numbers as numbers, NULLs last, everything else as text. */
export function compareValues(a: unknown, b: unknown): number {
  const an = a === null || a === undefined;
  const bn = b === null || b === undefined;
  if (an || bn) return an === bn ? 0 : an ? 1 : -1;
  if ((typeof a === 'number' || typeof a === 'bigint') && (typeof b === 'number' || typeof b === 'bigint')) return a < b ? -1 : a > b ? 1 : 0;
  const as = formatValue(a);
  const bs = formatValue(b);
  const numeric = /^-?\d+(\.\d+)?(e[+-]?\d+)?$/i;
  if (numeric.test(as) && numeric.test(bs)) return Number(as) - Number(bs);
  return as.localeCompare(bs);
}

/**
 * A column filter as a predicate: `>10`, `<=3`, `=5`, `!=0` compare numbers (or text), `null` and
 * `!null` test for NULL, anything else is a case-insensitive substring of the shown text.
 */
export function filterPredicate(text: string): ((v: unknown) => boolean) | null {
  const t = text.trim();
  if (!t) return null;
  if (/^!?null$/i.test(t)) {
    const wantNull = !t.startsWith('!');
    return (v) => (v === null || v === undefined) === wantNull;
  }
  const cmp = /^(>=|<=|!=|<>|>|<|=)\s*(.+)$/.exec(t);
  if (cmp) {
    const [, op, operand] = cmp;
    return (v) => {
      if (v === null || v === undefined) return false;
      const c = compareValues(v, /^-?\d+(\.\d+)?$/.test(operand) ? Number(operand) : operand);
      return op === '>' ? c > 0 : op === '<' ? c < 0 : op === '>=' ? c >= 0 : op === '<=' ? c <= 0 : op === '=' ? c === 0 : c !== 0;
    };
  }
  const needle = t.toLowerCase();
  return (v) => formatValue(v).toLowerCase().includes(needle);
}

/** Cells as tab-separated text (a spreadsheet pastes it into cells); `header` first when given. */
export function toTsv(rows: unknown[][], header?: string[]): string {
  const cell = (v: unknown) => (v === null || v === undefined ? '' : formatValue(v).replace(/[\t\n\r]/g, ' '));
  return [...(header ? [header.map(cell).join('\t')] : []), ...rows.map((r) => r.map(cell).join('\t'))].join('\n');
}

export function ResultsGrid({ columns, columnTypes = [], rows, masked, maskedAt, height = '100%', firstRowNumber = 1, tools = false }: ResultsGridProps) {
  const scroller = useRef<HTMLDivElement>(null);
  const [sort, setSort] = useState<Sort>(null);
  const [filters, setFilters] = useState<string[]>([]);
  const [selection, setSelection] = useState<Selection | null>(null);
  const [copied, setCopied] = useState<string | null>(null);
  // A new result starts unsorted, unfiltered and unselected.
  useEffect(() => {
    setSort(null);
    setFilters([]);
    setSelection(null);
    setCopied(null);
  }, [columns, rows]);

  // Per column: the masked tooltip, or undefined when the column is not masked.
  const maskTitles = useMemo(() => {
    const names = new Set(masked ?? []);
    return columns.map((c, i) => maskedAt?.get(i) ?? (names.has(c) ? `${c}: masked for your role` : undefined));
  }, [columns, masked, maskedAt]);
  // The rows shown, as indexes into `rows`: filtered, then sorted.
  const view = useMemo(() => {
    let idx = rows.map((_r, i) => i);
    if (!tools) return idx;
    const preds = filters.map((f, c) => [c, filterPredicate(f ?? '')] as const).filter((p): p is readonly [number, (v: unknown) => boolean] => p[1] !== null);
    if (preds.length) idx = idx.filter((i) => preds.every(([c, p]) => p(rows[i][c])));
    if (sort) {
      const dir = sort.descending ? -1 : 1;
      idx = [...idx].sort((a, b) => dir * compareValues(rows[a][sort.column], rows[b][sort.column]) || a - b);
    }
    return idx;
  }, [rows, filters, sort, tools]);
  // Column widths from the header and a sample of values: stable while scrolling.
  const widths = useMemo(() => {
    const sample = rows.slice(0, 200);
    return columns.map((c, i) => {
      const longest = Math.max(c.length + (maskTitles[i] ? 3 : 0) + (tools ? 2 : 0), (columnTypes[i] ?? '').length, ...sample.map((r) => Math.min(60, formatValue(r[i]).length)));
      return Math.round(Math.max(tools ? 90 : 64, Math.min(420, longest * CHAR_PX + 24)));
    });
  }, [columns, columnTypes, rows, maskTitles, tools]);
  const numberWidth = Math.max(40, String(firstRowNumber + rows.length).length * CHAR_PX + 16);
  const template = `${numberWidth}px ${widths.map((w) => `${w}px`).join(' ')}`;
  const total = numberWidth + widths.reduce((a, b) => a + b, 0);
  const virtualizer = useVirtualizer({ count: view.length, getScrollElement: () => scroller.current, estimateSize: () => ROW_HEIGHT, overscan: 12 });

  const selected = (r: number, c: number) => !!selection && r >= Math.min(selection.r0, selection.r1) && r <= Math.max(selection.r0, selection.r1) && c >= Math.min(selection.c0, selection.c1) && c <= Math.max(selection.c0, selection.c1);
  const pick = (e: MouseEvent, r: number, c: number | null) => {
    if (!tools) return;
    const rowsMode = c === null;
    setCopied(null);
    setSelection((old) =>
      e.shiftKey && old && old.rows === rowsMode
        ? { ...old, r1: r, c1: rowsMode ? columns.length - 1 : c }
        : { r0: r, r1: r, c0: rowsMode ? 0 : c, c1: rowsMode ? columns.length - 1 : c, rows: rowsMode },
    );
  };
  const selectionText = (): { text: string; count: string } | null => {
    if (!selection) return null;
    const [r0, r1] = [Math.min(selection.r0, selection.r1), Math.max(selection.r0, selection.r1)];
    const [c0, c1] = [Math.min(selection.c0, selection.c1), Math.max(selection.c0, selection.c1)];
    const picked = view.slice(r0, r1 + 1).map((i) => rows[i].slice(c0, c1 + 1));
    const n = picked.length;
    if (selection.rows) return { text: toTsv(picked, columns), count: `${n} row${n === 1 ? '' : 's'}` };
    const cells = n * (c1 - c0 + 1);
    return { text: toTsv(picked), count: `${cells} cell${cells === 1 ? '' : 's'}` };
  };
  const copy = async () => {
    const s = selectionText();
    if (!s) return;
    await navigator.clipboard.writeText(s.text);
    setCopied(`Copied ${s.count}`);
  };
  const onKeyDown = (e: KeyboardEvent) => {
    if (!tools) return;
    if ((e.ctrlKey || e.metaKey) && e.key.toLowerCase() === 'c' && selection) {
      e.preventDefault();
      void copy();
    } else if (e.key === 'Escape') setSelection(null);
  };
  const filtered = filters.some((f) => f && f.trim());
  const picked = selectionText();

  const grid = (
    <div className="dp-grid" ref={scroller} style={{ height: tools ? undefined : height }} role="grid" aria-rowcount={view.length + 1} aria-colcount={columns.length} aria-multiselectable={tools || undefined} data-testid="results-grid" tabIndex={tools ? 0 : undefined} onKeyDown={onKeyDown}>
      <div className="dp-grid-headers">
        <div className="dp-grid-head" style={{ gridTemplateColumns: template, width: total }} role="row">
          <div className="dp-grid-rownum" role="columnheader">
            #
          </div>
          {columns.map((c, i) => (
            <div
              key={i}
              role="columnheader"
              aria-sort={sort?.column === i ? (sort.descending ? 'descending' : 'ascending') : undefined}
              className={`dp-grid-th${maskTitles[i] ? ' dp-masked' : ''}${isNumericType(columnTypes[i]) ? ' dp-num' : ''}`}
              title={maskTitles[i] ?? `${c} ${columnTypes[i] ?? ''}`}
              data-masked={maskTitles[i] ? 'true' : undefined}
            >
              <span className="dp-grid-name">
                {maskTitles[i] ? <Icon name="lock" size={12} /> : null}
                {tools ? (
                  <button
                    type="button"
                    className="dp-grid-sort"
                    title={`Sort by ${c} (click again to reverse, a third time to unsort)`}
                    onClick={() => setSort((s) => (s?.column !== i ? { column: i, descending: false } : s.descending ? null : { column: i, descending: true }))}
                  >
                    {c}
                    <span aria-hidden="true">{sort?.column === i ? (sort.descending ? ' ▼' : ' ▲') : ''}</span>
                  </button>
                ) : (
                  c
                )}
              </span>
              <span className="dp-grid-type">{columnTypes[i] ?? ''}</span>
            </div>
          ))}
        </div>
        {tools ? (
          <div className="dp-grid-filters" style={{ gridTemplateColumns: template, width: total }}>
            <div className="dp-grid-rownum" />
            {columns.map((c, i) => (
              <input
                key={i}
                className="dp-grid-filter"
                value={filters[i] ?? ''}
                placeholder="filter"
                title="Text to find, or >10, <=3, =5, !=0, null, !null"
                aria-label={`Filter ${c}`}
                onChange={(e) => {
                  const v = e.target.value;
                  setSelection(null);
                  setFilters((f) => {
                    const next = [...f];
                    next[i] = v;
                    return next;
                  });
                }}
              />
            ))}
          </div>
        ) : null}
      </div>
      <div style={{ height: virtualizer.getTotalSize(), width: total, position: 'relative' }}>
        {virtualizer.getVirtualItems().map((v) => {
          const rowIndex = view[v.index];
          const row = rows[rowIndex];
          const rowSelected = !!selection?.rows && selected(v.index, 0);
          return (
            <div key={v.key} className={`dp-grid-row${rowSelected ? ' dp-grid-row-selected' : ''}`} role="row" aria-selected={tools ? rowSelected : undefined} style={{ gridTemplateColumns: template, transform: `translateY(${v.start}px)`, height: ROW_HEIGHT }}>
              <div className="dp-grid-rownum" role="rowheader" onMouseDown={(e) => pick(e, v.index, null)} title={tools ? 'Select the row (Shift+click: a range)' : undefined}>
                {firstRowNumber + rowIndex}
              </div>
              {columns.map((_c, i) => {
                const value = row[i];
                const text = formatValue(value);
                const isSelected = tools && selected(v.index, i);
                return (
                  <div
                    key={i}
                    role="gridcell"
                    aria-selected={tools ? isSelected : undefined}
                    className={`dp-grid-td${value === null || value === undefined ? ' dp-null' : ''}${isNumericType(columnTypes[i]) ? ' dp-num' : ''}${maskTitles[i] ? ' dp-masked' : ''}${isSelected ? ' dp-grid-selected' : ''}`}
                    title={text.length > 40 ? text : undefined}
                    onMouseDown={(e) => {
                      if (e.shiftKey) e.preventDefault();
                      pick(e, v.index, i);
                    }}
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
  if (!tools) return grid;
  return (
    <div className="dp-grid-box" style={{ height }}>
      <div className="dp-row dp-grid-tools" aria-live="polite">
        <span className="dp-muted" data-testid="grid-shown">
          {filtered ? `${view.length} of ${rows.length} rows match` : `${rows.length} rows`}
          {sort ? ` · sorted by ${columns[sort.column]}${sort.descending ? ' (descending)' : ''}` : ''}
        </span>
        {filtered ? (
          <button type="button" className="dp-btn dp-btn-small" onClick={() => setFilters([])}>
            Clear filters
          </button>
        ) : null}
        <span style={{ marginLeft: 'auto' }} className="dp-muted">
          {copied ?? (picked ? `${picked.count} selected` : 'Click a cell or a row number to select; Shift+click for a range')}
        </span>
        <button type="button" className="dp-btn dp-btn-small" disabled={!picked} title={picked ? 'Copy as tab-separated text (Ctrl/Cmd+C)' : 'Select cells or rows first'} onClick={() => void copy()}>
          Copy
        </button>
      </div>
      {grid}
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
