/**
 * Anomaly detection (docs/decisions.md "Anomaly detection"): after a transform, each built model's profile
 * (row count, null percentages, distinct counts) is compared with its last `lookback` profiles;
 * a Z-score above `threshold` is an anomaly. Skipped on a first run, with fewer than 3 historical
 * profiles, and per metric when the history has zero standard deviation.
 */
import { randomUUID } from 'node:crypto';
import type { PluginContext } from '../../sdk/index.js';
import { isoUtc } from './relations.js';

export const MIN_HISTORY = 3;

export type AnomalyMetric = 'row_count' | 'null_pct' | 'distinct_count';

export interface Anomaly {
  id: string;
  run_id: string | null;
  model: string;
  metric: AnomalyMetric;
  column: string | null;
  value: number;
  mean: number;
  stddev: number;
  z_score: number;
  threshold: number;
  history_count: number;
  detected_at: string;
}

export type SkipReason = 'first_run' | 'insufficient_history' | 'zero_stddev' | 'no_profile';

export interface AnomalyReport {
  model: string;
  run_id: string;
  status: 'checked' | 'skipped';
  /** Why the whole model was skipped. */
  skipped_reason?: SkipReason;
  history_count: number;
  anomalies: Anomaly[];
  /** Metrics left out of an otherwise checked model. */
  skipped_metrics: Array<{ metric: AnomalyMetric; column: string | null; reason: SkipReason }>;
}

export interface AnomalySettings {
  lookback: number;
  threshold: number;
}

/** One metric of a model's current profile with the statistics of its history. */
interface SeriesRow {
  model: string;
  history_count: number;
  metric: AnomalyMetric;
  column_name: string | null;
  value: number;
  n: number;
  mean: number | null;
  stddev: number | null;
}

const METRICS_SHAPE = `'[{"name":"VARCHAR","null_pct":"DOUBLE","distinct_count":"DOUBLE"}]'`;

/**
 * Per model of the run: its current profile (the latest recorded in the run), the last `lookback`
 * profiles before it, and per metric (row_count; null_pct and distinct_count of each current
 * column) the current value with count, mean and sample standard deviation of its history. A
 * column missing from older profiles has a shorter history. Rows come in model, column, metric order.
 */
const SERIES_SQL = `
WITH cur AS (
  SELECT model, seq, row_count, from_json(columns, ${METRICS_SHAPE}) AS cols
    FROM _service.model_profiles
   WHERE run_id = $1 AND model IN (SELECT unnest(from_json($2, '["VARCHAR"]')))
  QUALIFY row_number() OVER (PARTITION BY model ORDER BY seq DESC) = 1
),
hist AS (
  SELECT p.model, p.row_count, from_json(p.columns, ${METRICS_SHAPE}) AS cols
    FROM _service.model_profiles p JOIN cur ON p.model = cur.model AND p.seq < cur.seq
  QUALIFY row_number() OVER (PARTITION BY p.model ORDER BY p.seq DESC) <= $3
),
metrics(k, metric) AS (VALUES (1, 'null_pct'), (2, 'distinct_count')),
cur_series AS (
  SELECT model, 0 AS pos, 0 AS k, 'row_count' AS metric, NULL::VARCHAR AS column_name, row_count::DOUBLE AS value FROM cur
  UNION ALL
  SELECT u.model, u.pos, m.k, m.metric, u.c.name, CASE m.k WHEN 1 THEN u.c.null_pct ELSE u.c.distinct_count END
    FROM (SELECT model, unnest(cols) AS c, generate_subscripts(cols, 1) AS pos FROM cur) u CROSS JOIN metrics m
),
hist_series AS (
  SELECT model, 'row_count' AS metric, NULL::VARCHAR AS column_name, row_count::DOUBLE AS value FROM hist
  UNION ALL
  SELECT u.model, m.metric, u.c.name, CASE m.k WHEN 1 THEN u.c.null_pct ELSE u.c.distinct_count END
    FROM (SELECT model, unnest(cols) AS c FROM hist) u CROSS JOIN metrics m
)
SELECT c.model, (SELECT count(*) FROM hist WHERE hist.model = c.model) AS history_count, c.metric, c.column_name, c.value,
       count(h.value) AS n, avg(h.value) AS mean, stddev_samp(h.value) AS stddev
  FROM cur_series c
  LEFT JOIN hist_series h ON h.model = c.model AND h.metric = c.metric AND h.column_name IS NOT DISTINCT FROM c.column_name
 GROUP BY c.model, c.pos, c.k, c.metric, c.column_name, c.value
 ORDER BY c.model, c.pos, c.k`;

const round = (n: number, f: number) => Math.round(n * f) / f;

/** Judges one model's series (docs/decisions.md "Anomaly detection") into its report. */
function judge(model: string, runId: string, series: SeriesRow[], settings: AnomalySettings, detectedAt: string): AnomalyReport {
  const report: AnomalyReport = { model, run_id: runId, status: 'skipped', history_count: 0, anomalies: [], skipped_metrics: [] };
  if (series.length === 0) return { ...report, skipped_reason: 'no_profile' };
  report.history_count = series[0].history_count;
  if (report.history_count === 0) return { ...report, skipped_reason: 'first_run' };
  if (report.history_count < MIN_HISTORY) return { ...report, skipped_reason: 'insufficient_history' };
  report.status = 'checked';
  for (const s of series) {
    if (s.n < MIN_HISTORY) {
      report.skipped_metrics.push({ metric: s.metric, column: s.column_name, reason: 'insufficient_history' });
      continue;
    }
    const mean = s.mean as number;
    const stddev = s.stddev as number;
    if (stddev < 1e-12) {
      report.skipped_metrics.push({ metric: s.metric, column: s.column_name, reason: 'zero_stddev' });
      continue;
    }
    const z = (s.value - mean) / stddev;
    if (Math.abs(z) <= settings.threshold) continue;
    report.anomalies.push({
      id: randomUUID(),
      run_id: runId,
      model,
      metric: s.metric,
      column: s.column_name,
      value: s.value,
      mean: round(mean, 1e6),
      stddev: round(stddev, 1e6),
      z_score: round(z, 1000),
      threshold: settings.threshold,
      history_count: s.n,
      detected_at: detectedAt,
    });
  }
  return report;
}

/**
 * Compares the profile each of `models` recorded in run `runId` with its history (one query for
 * all of them), stores what stands out (one insert) and returns one report per model, in order.
 */
export async function detectAnomalies(ctx: PluginContext, runId: string, models: readonly string[], settings: AnomalySettings): Promise<AnomalyReport[]> {
  if (models.length === 0) return [];
  const rows = await ctx.db.all(SERIES_SQL, [runId, JSON.stringify(models), Math.max(1, Math.floor(settings.lookback))]);
  const byModel = new Map<string, SeriesRow[]>();
  for (const r of rows) {
    const row: SeriesRow = {
      model: String(r.model),
      history_count: Number(r.history_count),
      metric: r.metric as AnomalyMetric,
      column_name: (r.column_name as string | null) ?? null,
      value: Number(r.value),
      n: Number(r.n),
      mean: r.mean === null ? null : Number(r.mean),
      stddev: r.stddev === null ? null : Number(r.stddev),
    };
    const list = byModel.get(row.model) ?? [];
    list.push(row);
    byModel.set(row.model, list);
  }
  const detectedAt = new Date();
  const reports = models.map((m) => judge(m, runId, byModel.get(m) ?? [], settings, detectedAt.toISOString()));
  const found = reports.flatMap((r) => r.anomalies);
  if (found.length) {
    const at = detectedAt.toISOString().replace('T', ' ').replace('Z', '');
    const params: unknown[] = [];
    const tuples = found.map((a) => {
      params.push(a.id, a.run_id, a.model, a.metric, a.column, a.value, a.mean, a.stddev, a.z_score, a.threshold, a.history_count, at);
      const p = Array.from({ length: 12 }, (_, i) => `$${params.length - 11 + i}`);
      return `(${p.slice(0, 11).join(', ')}, ${p[11]}::TIMESTAMP)`;
    });
    await ctx.db.run(
      `INSERT INTO _service.anomalies (id, run_id, model, metric, column_name, value, mean, stddev, z_score, threshold, history_count, detected_at) VALUES ${tuples.join(', ')}`,
      params,
    );
  }
  return reports;
}

export async function listAnomalies(ctx: PluginContext, options: { model?: string; limit: number }): Promise<Anomaly[]> {
  const rows = await ctx.db.all(
    `SELECT id, run_id, model, metric, column_name, value, mean, stddev, z_score, threshold, history_count, CAST(detected_at AS VARCHAR) AS detected_at
       FROM _service.anomalies ${options.model ? 'WHERE model = $1' : ''}
      ORDER BY detected_at DESC, model, metric LIMIT ${Math.max(1, Math.floor(options.limit))}`,
    options.model ? [options.model] : [],
  );
  return rows.map((r) => ({
    id: String(r.id),
    run_id: (r.run_id as string | null) ?? null,
    model: String(r.model),
    metric: r.metric as AnomalyMetric,
    column: (r.column_name as string | null) ?? null,
    value: Number(r.value),
    mean: Number(r.mean),
    stddev: Number(r.stddev),
    z_score: Number(r.z_score),
    threshold: Number(r.threshold),
    history_count: Number(r.history_count),
    detected_at: isoUtc(r.detected_at) as string,
  }));
}
