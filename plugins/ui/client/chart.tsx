/**
 * @dp/ui/chart: small charts with uPlot. BarChart for distributions (a profile's per-column
 * histogram or top values), LineChart for history over time (row counts, run durations).
 */
import { useEffect, useMemo, useRef, useState } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

function cssVar(name: string, fallback: string): string {
  return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || fallback;
}

function usePlot(make: (width: number) => uPlot.Options, data: uPlot.AlignedData, deps: unknown[]) {
  const host = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = host.current;
    if (!el) return;
    const plot = new uPlot(make(el.clientWidth || 320), data, el);
    const resize = new ResizeObserver(() => plot.setSize({ width: el.clientWidth || 320, height: plot.height }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      plot.destroy();
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, deps);
  return host;
}

interface ChartTheme {
  /** Bars and lines. */
  accent: string;
  /** Grid lines. */
  grid: uPlot.Axis.Grid;
}

/**
 * The options every chart shares: its size, no legend, the axes in the muted text colour and a
 * small font, and one data series. The colours are read from the page's CSS variables when the
 * chart is drawn, so they follow the theme.
 */
function chartOptions(
  width: number,
  height: number,
  build: (theme: ChartTheme) => { axes: [uPlot.Axis, uPlot.Axis]; series: uPlot.Series } & Omit<Partial<uPlot.Options>, 'axes' | 'series'>,
): uPlot.Options {
  const fg = cssVar('--dp-fg-muted', '#667085');
  const theme: ChartTheme = { accent: cssVar('--dp-accent', '#2f6fde'), grid: { stroke: cssVar('--dp-border', '#ddd'), width: 1 } };
  const { axes, series, ...rest } = build(theme);
  return {
    width,
    height,
    legend: { show: false },
    ...rest,
    axes: axes.map((axis) => ({ stroke: fg, font: '10px sans-serif', ...axis })),
    series: [{}, series],
  };
}

/** Bars over labelled buckets; the label of each bar shows on hover. */
export function BarChart({ labels, values, height = 120, ariaLabel = 'Bar chart' }: { labels: string[]; values: number[]; height?: number; ariaLabel?: string }) {
  const host = usePlot(
    (width) =>
      chartOptions(width, height, ({ accent, grid }) => ({
        cursor: { points: { show: false } },
        scales: { x: { time: false, range: [-0.5, labels.length - 0.5] } },
        axes: [
          { grid: { show: false }, ticks: { show: false }, values: (_u, splits) => splits.map((s) => (Number.isInteger(s) ? (labels[s] ?? '') : '')), size: 28 },
          { grid, size: 40 },
        ],
        series: { stroke: accent, fill: accent, paths: uPlot.paths.bars!({ size: [0.7, 60] }), points: { show: false } },
      })),
    [labels.map((_, i) => i), values],
    [labels.join('\u0000'), values.join(',')],
  );
  return <div ref={host} className="dp-chart" role="img" aria-label={ariaLabel} data-testid="bar-chart" />;
}

/** A line over time: `times` in seconds since the epoch. */
export function LineChart({ times, values, height = 160, label = 'value' }: { times: number[]; values: number[]; height?: number; label?: string }) {
  const host = usePlot(
    (width) =>
      chartOptions(width, height, ({ accent, grid }) => ({
        axes: [{ grid }, { grid, size: 50 }],
        series: { label, stroke: accent, width: 2, points: { show: true, size: 5 } },
      })),
    [times, values],
    [times.join(','), values.join(',')],
  );
  return <div ref={host} className="dp-chart" role="img" aria-label={label} data-testid="line-chart" />;
}

export type SeriesChartKind = 'line' | 'bar' | 'area';

/** The x axis of a SeriesChart: times (seconds since the epoch), numbers, or labelled categories (positions 0..n-1). */
export interface ChartAxis {
  kind: 'time' | 'number' | 'category';
  values: number[];
  /** The category names, for `category`. */
  labels?: string[];
  title?: string;
}

export interface ChartSeries {
  label: string;
  values: Array<number | null>;
}

const SERIES_VARS = 8;

/** Colour of the i-th series (the shell's `--dp-series-N` variables, repeating after eight). */
export function seriesColor(i: number): string {
  return cssVar(`--dp-series-${(i % SERIES_VARS) + 1}`, ['#2f6fde', '#d9480f', '#2b8a3e', '#ae3ec9', '#c99700', '#0c8599', '#e64980', '#5c677d'][i % SERIES_VARS]);
}

/** 1234567 as "1.2M": short tick labels that fit the axis. */
export function compactNumber(n: number): string {
  const abs = Math.abs(n);
  if (abs >= 1e12) return `${+(n / 1e12).toFixed(1)}T`;
  if (abs >= 1e9) return `${+(n / 1e9).toFixed(1)}B`;
  if (abs >= 1e6) return `${+(n / 1e6).toFixed(1)}M`;
  if (abs >= 1e4) return `${+(n / 1e3).toFixed(1)}k`;
  return String(+n.toFixed(Math.abs(n) < 1 && n !== 0 ? 3 : 2));
}

function withAlpha(color: string, alpha: number): string {
  const m = /^#([0-9a-f]{6})$/i.exec(color);
  if (!m) return color;
  const v = parseInt(m[1], 16);
  return `rgba(${(v >> 16) & 255}, ${(v >> 8) & 255}, ${v & 255}, ${alpha})`;
}

/**
 * Lines, grouped bars or areas, one per series, with a legend: the chart of query results (the
 * SQL workspace, notebooks) and of metrics with a dimension. Bars and areas start at zero.
 */
export function SeriesChart({ kind, x, series, height = 260, yTitle, ariaLabel = 'Chart' }: { kind: SeriesChartKind; x: ChartAxis; series: ChartSeries[]; height?: number; yTitle?: string; ariaLabel?: string }) {
  const data = [x.values, ...series.map((s) => s.values)] as uPlot.AlignedData;
  const host = usePlot(
    (width) => {
      const fg = cssVar('--dp-fg-muted', '#667085');
      const grid = { stroke: cssVar('--dp-border', '#ddd'), width: 1 };
      const n = Math.max(1, series.length);
      const groupWidth = 0.8;
      const barWidth = groupWidth / n;
      const categories = x.kind === 'category';
      const values = series.flatMap((s) => s.values.filter((v): v is number => v !== null && Number.isFinite(v)));
      const lo = Math.min(0, ...values);
      const hi = Math.max(0, ...values);
      const fromZero = kind !== 'line';
      return {
        width,
        height,
        legend: { show: false },
        cursor: { points: { show: kind === 'line' } },
        scales: {
          x: categories ? { time: false, range: [-0.5, Math.max(0, x.values.length - 0.5)] } : { time: x.kind === 'time' },
          y: fromZero ? { range: (_u, min, max) => [Math.min(lo, min), Math.max(hi, max) * 1.05 || 1] } : {},
        },
        axes: [
          {
            stroke: fg,
            font: '11px sans-serif',
            grid: { show: !categories, ...grid },
            ticks: { show: !categories },
            size: categories ? 44 : 36,
            label: x.title,
            labelSize: x.title ? 16 : 0,
            labelFont: '11px sans-serif',
            ...(categories
              ? {
                  // Every label when they fit, else every k-th; long ones shortened.
                  values: (_u: uPlot, splits: number[]) => {
                    const step = Math.max(1, Math.ceil((x.labels?.length ?? 0) / Math.max(1, Math.floor(width / 70))));
                    return splits.map((s) => (Number.isInteger(s) && s % step === 0 ? truncate(x.labels?.[s] ?? '', 12) : ''));
                  },
                  splits: () => x.values,
                }
              : {}),
          },
          { stroke: fg, font: '11px sans-serif', grid, size: 56, values: (_u: uPlot, splits: number[]) => splits.map(compactNumber), label: yTitle, labelSize: yTitle ? 16 : 0, labelFont: '11px sans-serif' },
        ],
        series: [
          {},
          ...series.map((s, i): uPlot.Series => {
            const color = seriesColor(i);
            if (kind === 'bar') {
              return {
                label: s.label,
                stroke: color,
                fill: color,
                width: 0,
                points: { show: false },
                paths: uPlot.paths.bars!({
                  size: [barWidth, 80],
                  // Grouped: the series' bar sits at its slot inside the group around each x.
                  disp: categories
                    ? {
                        x0: { unit: 1, values: (u: uPlot) => (u.data[0] as number[]).map((v) => v - groupWidth / 2 + i * barWidth) },
                        size: { unit: 1, values: () => [barWidth] },
                      }
                    : undefined,
                } as Parameters<NonNullable<typeof uPlot.paths.bars>>[0]),
              };
            }
            return { label: s.label, stroke: color, width: 2, fill: kind === 'area' ? withAlpha(color, series.length > 1 ? 0.18 : 0.3) : undefined, points: { show: x.values.length <= 60, size: 4 }, spanGaps: false };
          }),
        ],
      };
    },
    data,
    [kind, x.kind, x.values.join(','), (x.labels ?? []).join('\u0000'), JSON.stringify(series), height, yTitle],
  );
  return (
    <figure className="dp-series-chart" aria-label={ariaLabel}>
      <div ref={host} className="dp-chart" role="img" aria-label={`${kind} chart of ${series.map((s) => s.label).join(', ')}`} data-testid="series-chart" data-kind={kind} data-series={series.length} />
      {series.length > 1 || series[0]?.label ? (
        <ul className="dp-legend" aria-label="Legend">
          {series.map((s, i) => (
            <li key={s.label + i}>
              <span className="dp-legend-swatch" style={{ background: seriesColor(i) }} aria-hidden="true" />
              {s.label}
            </li>
          ))}
        </ul>
      ) : null}
    </figure>
  );
}

function truncate(s: string, n: number): string {
  return s.length > n ? s.slice(0, n - 1) + '…' : s;
}

const TEMPORAL = /^(DATE|TIMESTAMP.*|TIMESTAMPTZ|TIME)$/i;
const NUMERIC = /^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|UHUGEINT|FLOAT|DOUBLE|REAL|DECIMAL.*|NUMERIC.*)$/i;

/** A cell as a number (charts, column summaries): numbers and numeric text; otherwise null (a gap). */
export function toNumber(v: unknown): number | null {
  if (typeof v === 'number') return Number.isFinite(v) ? v : null;
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'string' && v.trim() !== '' && Number.isFinite(Number(v))) return Number(v);
  return null;
}

/**
 * Rows as chart data: `x` column on the x axis (time for dates, numbers, else categories in
 * order of appearance), `y` the values, and with `by` one series per distinct value of that
 * column (in order of appearance, at most `maxSeries`; more are dropped and counted). Rows
 * sharing an x (and series) are summed.
 */
export function chartDataFromRows(
  columns: string[],
  types: string[],
  rows: unknown[][],
  pick: { x: number; y: number; by: number | null },
  maxSeries = 12,
): { x: ChartAxis; series: ChartSeries[]; droppedSeries: number } {
  const xType = types[pick.x] ?? '';
  const kind: ChartAxis['kind'] = TEMPORAL.test(xType) ? 'time' : NUMERIC.test(xType) ? 'number' : 'category';
  const xKey = (v: unknown): number | null => {
    if (kind === 'time') {
      const t = Date.parse(String(v).replace(' ', 'T') + (/^\d{4}-\d\d-\d\d$/.test(String(v)) ? 'T00:00:00Z' : /[zZ+]|[-]\d\d:?\d\d$/.test(String(v).slice(10)) ? '' : 'Z'));
      return Number.isFinite(t) ? t / 1000 : null;
    }
    if (kind === 'number') return toNumber(v);
    return null;
  };
  const labels: string[] = [];
  const labelIndex = new Map<string, number>();
  const xs = new Map<number, number>();
  const seriesNames: string[] = [];
  const seriesIndex = new Map<string, number>();
  let dropped = 0;
  const cells: Array<[number, number, number]> = [];
  for (const r of rows) {
    let xv: number | null;
    if (kind === 'category') {
      const label = r[pick.x] === null || r[pick.x] === undefined ? 'NULL' : typeof r[pick.x] === 'object' ? JSON.stringify(r[pick.x]) : String(r[pick.x]);
      if (!labelIndex.has(label)) {
        labelIndex.set(label, labels.length);
        labels.push(label);
      }
      xv = labelIndex.get(label)!;
    } else xv = xKey(r[pick.x]);
    if (xv === null) continue;
    const name = pick.by === null ? (columns[pick.y] ?? 'value') : r[pick.by] === null || r[pick.by] === undefined ? 'NULL' : String(r[pick.by]);
    if (!seriesIndex.has(name)) {
      if (seriesNames.length >= maxSeries) {
        dropped++;
        continue;
      }
      seriesIndex.set(name, seriesNames.length);
      seriesNames.push(name);
    }
    const yv = toNumber(r[pick.y]);
    if (yv === null) continue;
    xs.set(xv, 0);
    cells.push([xv, seriesIndex.get(name)!, yv]);
  }
  const xValues = kind === 'category' ? labels.map((_l, i) => i) : [...xs.keys()].sort((a, b) => a - b);
  const position = new Map(xValues.map((v, i) => [v, i]));
  const series: ChartSeries[] = seriesNames.map((label) => ({ label, values: xValues.map(() => null as number | null) }));
  for (const [xv, si, yv] of cells) {
    const i = position.get(xv)!;
    series[si].values[i] = (series[si].values[i] ?? 0) + yv;
  }
  return { x: { kind, values: xValues, labels: kind === 'category' ? labels : undefined, title: columns[pick.x] }, series, droppedSeries: dropped };
}

/** Columns a chart can measure (numbers). */
export function numericColumns(types: string[]): number[] {
  return types.map((t, i) => (NUMERIC.test(t) ? i : -1)).filter((i) => i >= 0);
}

/**
 * A query result as a chart with its controls: line, bar or area; the x column, the measured
 * column, and optionally a column whose values split the result into series. Used by the SQL
 * workspace and notebook results (the same component, so they draw alike).
 */
export function ResultChart({ columns, columnTypes, rows, height = 280 }: { columns: string[]; columnTypes: string[]; rows: unknown[][]; height?: number }) {
  const measures = numericColumns(columnTypes);
  const firstX = columnTypes.findIndex((t) => TEMPORAL.test(t));
  const defaultX = firstX >= 0 ? firstX : columns.findIndex((_c, i) => !measures.includes(i));
  const [kind, setKind] = useState<SeriesChartKind>(firstX >= 0 ? 'line' : 'bar');
  const [xCol, setX] = useState(defaultX >= 0 ? defaultX : 0);
  const [yCol, setY] = useState(measures.find((i) => i !== xCol) ?? measures[0] ?? -1);
  const [byCol, setBy] = useState<number | null>(null);
  const data = useMemo(() => (yCol < 0 ? null : chartDataFromRows(columns, columnTypes, rows, { x: xCol, y: yCol, by: byCol })), [columns, columnTypes, rows, xCol, yCol, byCol]);
  if (measures.length === 0) return <div className="dp-empty">No numeric column to chart: add one (for example count(*)) to the query.</div>;
  const select = (label: string, value: number | null, set: (v: number | null) => void, options: number[], none?: string) => (
    <label className="dp-row">
      <span className="dp-muted">{label}</span>
      <select aria-label={label} value={value === null ? '' : String(value)} onChange={(e) => set(e.target.value === '' ? null : Number(e.target.value))}>
        {none ? <option value="">{none}</option> : null}
        {options.map((i) => (
          <option key={i} value={i}>
            {columns[i]}
          </option>
        ))}
      </select>
    </label>
  );
  const all = columns.map((_c, i) => i);
  return (
    <div className="dp-result-chart">
      <div className="dp-row">
        <div className="dp-segmented" role="radiogroup" aria-label="Chart type">
          {(['line', 'bar', 'area'] as const).map((k) => (
            <button key={k} type="button" role="radio" aria-checked={kind === k} className={kind === k ? 'dp-btn dp-btn-small dp-btn-primary' : 'dp-btn dp-btn-small'} onClick={() => setKind(k)}>
              {k[0].toUpperCase() + k.slice(1)}
            </button>
          ))}
        </div>
        {select('X axis', xCol, (v) => setX(v ?? 0), all)}
        {select('Y axis', yCol, (v) => setY(v ?? 0), measures)}
        {select('Series by', byCol, setBy, all.filter((i) => i !== xCol && i !== yCol), '(none)')}
      </div>
      {data && data.series.length ? (
        <SeriesChart kind={kind} x={data.x} series={data.series} height={height} yTitle={columns[yCol]} />
      ) : (
        <div className="dp-empty">No values to draw for these columns.</div>
      )}
      {data?.droppedSeries ? <div className="dp-muted">Only the first 12 series are drawn.</div> : null}
    </div>
  );
}
