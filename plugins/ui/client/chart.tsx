/**
 * @dp/ui/chart: small charts with uPlot. BarChart for distributions (a profile's per-column
 * histogram or top values), LineChart for history over time (row counts, run durations).
 */
import { useEffect, useRef } from 'react';
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
