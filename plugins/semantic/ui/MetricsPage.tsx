/**
 * Metrics explorer: pick a metric, its dimensions, a grain and a date range; see the compiled
 * SQL (the server compiles it, bounds as $start/$end), the result table and a chart. Load errors
 * of metrics/*.yml are listed so a broken definition is never silently missing.
 */
import { useEffect, useMemo, useState } from 'react';
import { api, Badge, Empty, ErrorBox, Field, Loading, PageHeader, ResultsGrid, useApi, usePersistentState, type PageProps } from '@dp/ui';
import { BarChart, chartDataFromRows, LineChart, SeriesChart } from '@dp/ui/chart';
import type { MetricDefinition, MetricList, MetricQueryResult } from '../api-types';
import './metrics.css';

const GRAINS = ['hour', 'day', 'week', 'month', 'quarter', 'year'];

export default function MetricsPage({ page }: PageProps) {
  const loaded = useApi((signal) => api.get<MetricList>('/api/semantic/metrics', { signal }), []);
  const [name, setName] = usePersistentState<string>('metrics.metric', '');
  const metrics = loaded.data?.metrics ?? [];
  const metric = metrics.find((m) => m.name === name) ?? metrics[0];

  useEffect(() => {
    if (metric && metric.name !== name) setName(metric.name);
  }, [metric, name, setName]);

  return (
    <div className="dp-col dp-metrics-page">
      <PageHeader title={page.title} subtitle="Metrics from metrics/*.yml: one definition, the same numbers everywhere" />
      <ErrorBox error={loaded.error} onRetry={loaded.reload} />
      {loaded.data?.errors.length ? (
        <div className="dp-card" data-testid="metric-load-errors">
          <strong>Definitions that did not load</strong>
          <ul>
            {loaded.data.errors.map((e, i) => (
              <li key={i}>
                <code>
                  {e.file}
                  {e.line ? `:${e.line}` : ''}
                </code>{' '}
                {e.metric ? <b>{e.metric}</b> : null}: {e.reason}
              </li>
            ))}
          </ul>
        </div>
      ) : null}
      {loaded.loading && !loaded.data ? <Loading /> : null}
      {loaded.data && metrics.length === 0 ? <Empty>No metrics yet: add a file under metrics/ with a top-level metrics: list.</Empty> : null}
      {metric ? (
        <div className="dp-split" style={{ alignItems: 'flex-start', gap: 16 }}>
          <div className="dp-sidebar" style={{ minWidth: 220 }}>
            <Field label="Metric">
              <select aria-label="Metric" value={metric.name} onChange={(e) => setName(e.target.value)}>
                {metrics.map((m) => (
                  <option key={m.name} value={m.name}>
                    {m.name}
                  </option>
                ))}
              </select>
            </Field>
            <MetricFacts metric={metric} />
          </div>
          <div className="dp-grow dp-col">
            <Explorer key={metric.name} metric={metric} />
          </div>
        </div>
      ) : null}
    </div>
  );
}

function MetricFacts({ metric }: { metric: MetricDefinition }) {
  return (
    <div className="dp-col dp-muted dp-metric-facts" style={{ fontSize: 13, gap: 4 }}>
      {metric.description ? <div>{metric.description}</div> : null}
      <div>
        model <code>{metric.model}</code>
      </div>
      <div>
        measure <code>{metric.measure}</code>
      </div>
      {metric.filters.length ? (
        <div>
          filters{' '}
          {metric.filters.map((f) => (
            <code key={f} style={{ marginRight: 4 }}>
              {f}
            </code>
          ))}
        </div>
      ) : null}
      <div>
        defined in <code>{metric.file}</code>
      </div>
    </div>
  );
}

function Explorer({ metric }: { metric: MetricDefinition }) {
  const [dimensions, setDimensions] = useState<string[]>([]);
  const [grain, setGrain] = useState<string>(metric.time_dimension ? 'month' : '');
  const [start, setStart] = useState('');
  const [end, setEnd] = useState('');
  const [result, setResult] = useState<MetricQueryResult | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [running, setRunning] = useState(false);

  const request = { metric: metric.name, dimensions, grain: grain || null, start: start || null, end: end || null };
  const compiled = useApi((signal) => api.post<{ sql: string; params: Record<string, string> }>('/api/semantic/compile', request, { signal }), [metric.name, dimensions.join(','), grain, start, end]);

  const run = async () => {
    setRunning(true);
    setError(null);
    try {
      setResult(await api.post<MetricQueryResult>('/api/semantic/query', { ...request, limit: 5000 }));
    } catch (e) {
      setResult(null);
      setError(e);
    } finally {
      setRunning(false);
    }
  };

  const toggle = (d: string) => setDimensions((old) => (old.includes(d) ? old.filter((x) => x !== d) : [...old, d]));

  return (
    <>
      <div className="dp-toolbar" style={{ flexWrap: 'wrap', gap: 12, alignItems: 'flex-end' }}>
        {metric.dimensions.length ? (
          <fieldset className="dp-fieldset">
            <legend>Dimensions</legend>
            {metric.dimensions.map((d) => (
              <label key={d} style={{ marginRight: 10 }}>
                <input type="checkbox" checked={dimensions.includes(d)} onChange={() => toggle(d)} /> {d}
              </label>
            ))}
          </fieldset>
        ) : (
          <span className="dp-muted">No dimensions declared</span>
        )}
        {metric.time_dimension ? (
          <>
            <Field label="Grain">
              <select aria-label="Grain" value={grain} onChange={(e) => setGrain(e.target.value)}>
                <option value="">(none)</option>
                {GRAINS.map((g) => (
                  <option key={g} value={g}>
                    {g}
                  </option>
                ))}
              </select>
            </Field>
            <Field label="From (inclusive)">
              <input type="date" aria-label="Start" value={start} onChange={(e) => setStart(e.target.value)} />
            </Field>
            <Field label="To (exclusive)">
              <input type="date" aria-label="End" value={end} onChange={(e) => setEnd(e.target.value)} />
            </Field>
          </>
        ) : (
          <Badge tone="info" title="Grains and ranges need a time_dimension">
            no time dimension
          </Badge>
        )}
        <button type="button" className="dp-btn dp-btn-primary" onClick={() => void run()} title={running ? 'The metric query is running' : 'Run the metric query'} disabled={running}>
          {running ? 'Running…' : 'Run'}
        </button>
      </div>

      <div className="dp-card">
        <div className="dp-muted" style={{ fontSize: 12 }}>
          Compiled SQL{Object.keys(compiled.data?.params ?? {}).length ? ` (${Object.entries(compiled.data!.params).map(([k, v]) => `$${k} = '${v}'`).join(', ')})` : ''}
        </div>
        <ErrorBox error={compiled.error} />
        <pre className="dp-metric-sql" data-testid="metric-sql">
          {compiled.data?.sql ?? ''}
        </pre>
      </div>

      <ErrorBox error={error} onRetry={() => void run()} />
      {result ? <MetricResult result={result} grain={grain} /> : null}
    </>
  );
}

/** The chart: a line over time for one series, a line per value of one dimension over time (with a legend), bars per row otherwise. */
function MetricChart({ result, grain }: { result: MetricQueryResult; grain: string }) {
  const valueIndex = result.columns.length - 1;
  const numeric = (v: unknown) => (typeof v === 'number' ? v : Number(v));
  const series = useMemo(
    () => (grain && result.columns[0] === grain && result.columns.length === 3 ? chartDataFromRows(result.columns, result.column_types, result.rows, { x: 0, y: 2, by: 1 }) : null),
    [result, grain],
  );
  const data = useMemo(() => {
    if (grain && result.columns[0] === grain && result.columns.length === 2) {
      return { kind: 'line' as const, times: result.rows.map((r) => Date.parse(String(r[0]).replace(' ', 'T') + (String(r[0]).length <= 10 ? 'T00:00:00Z' : 'Z')) / 1000), values: result.rows.map((r) => numeric(r[valueIndex])) };
    }
    // A bucket at midnight reads as its date.
    const label = (v: unknown) => String(v).replace(/ 00:00:00$/, '');
    return { kind: 'bar' as const, labels: result.rows.map((r) => r.slice(0, valueIndex).map(label).join(' · ') || result.metric), values: result.rows.map((r) => numeric(r[valueIndex])) };
  }, [result, grain, valueIndex]);
  if (result.rows.length === 0) return null;
  if (series) return <SeriesChart kind="line" x={series.x} series={series.series} yTitle={result.metric} ariaLabel={`${result.metric} by ${result.columns[1]} over time`} />;
  if (data.kind === 'line') return <LineChart times={data.times} values={data.values} label={result.metric} />;
  return <BarChart labels={data.labels.slice(0, 60)} values={data.values.slice(0, 60)} height={180} ariaLabel={`${result.metric} by ${result.columns.slice(0, valueIndex).join(', ') || 'total'}`} />;
}

function MetricResult({ result, grain }: { result: MetricQueryResult; grain: string }) {
  return (
    <div className="dp-col" data-testid="metric-result">
      <div className="dp-card">
        <MetricChart result={result} grain={grain} />
      </div>
      <div className="dp-muted" style={{ fontSize: 12 }}>
        {result.rows.length} row{result.rows.length === 1 ? '' : 's'}
        {result.truncated ? ' (more exist: narrow the range or the dimensions)' : ''}
      </div>
      <ResultsGrid columns={result.columns} columnTypes={result.column_types} rows={result.rows} height={Math.min(420, 40 + result.rows.length * 28)} />
    </div>
  );
}
