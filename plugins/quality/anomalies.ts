/**
 * Anomaly detection (SPEC.md "Anomaly detection"): after a transform, each built model's profile
 * (row count, null percentages, distinct counts) is compared with its last `lookback` profiles;
 * a Z-score above `threshold` is an anomaly. Skipped on a first run, with fewer than 3 historical
 * profiles, and per metric when the history has zero standard deviation.
 */
import { randomUUID } from 'node:crypto';
import type { PluginContext } from '../../sdk/index.js';
import { profileHistory, profileOfRun, type StoredProfile } from './profiles.js';
import { isoUtc, utcNow } from './relations.js';

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

interface Series {
  metric: AnomalyMetric;
  column: string | null;
  value: number;
  history: number[];
}

function seriesOf(current: StoredProfile, history: StoredProfile[]): Series[] {
  const out: Series[] = [{ metric: 'row_count', column: null, value: current.row_count, history: history.map((h) => h.row_count) }];
  for (const col of current.columns) {
    const past = history.map((h) => h.columns.find((c) => c.name === col.name)).filter((c) => c !== undefined);
    out.push({ metric: 'null_pct', column: col.name, value: col.null_pct, history: past.map((c) => c.null_pct) });
    out.push({ metric: 'distinct_count', column: col.name, value: col.distinct_count, history: past.map((c) => c.distinct_count) });
  }
  return out;
}

function meanAndStddev(values: number[]): { mean: number; stddev: number } {
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  // Sample standard deviation: the history is a sample of the model's normal behaviour.
  const variance = values.reduce((a, v) => a + (v - mean) ** 2, 0) / (values.length - 1);
  return { mean, stddev: Math.sqrt(variance) };
}

/** Compares the profile recorded for `model` in run `runId` with its history and stores what stands out. */
export async function detectAnomalies(ctx: PluginContext, model: string, runId: string, settings: AnomalySettings): Promise<AnomalyReport> {
  const report: AnomalyReport = { model, run_id: runId, status: 'skipped', history_count: 0, anomalies: [], skipped_metrics: [] };
  const current = await profileOfRun(ctx, model, runId);
  if (!current) return { ...report, skipped_reason: 'no_profile' };
  const history = await profileHistory(ctx, model, settings.lookback, current.seq);
  report.history_count = history.length;
  if (history.length === 0) return { ...report, skipped_reason: 'first_run' };
  if (history.length < MIN_HISTORY) return { ...report, skipped_reason: 'insufficient_history' };
  report.status = 'checked';
  const at = utcNow();
  for (const s of seriesOf(current, history)) {
    if (s.history.length < MIN_HISTORY) {
      report.skipped_metrics.push({ metric: s.metric, column: s.column, reason: 'insufficient_history' });
      continue;
    }
    const { mean, stddev } = meanAndStddev(s.history);
    if (stddev < 1e-12) {
      report.skipped_metrics.push({ metric: s.metric, column: s.column, reason: 'zero_stddev' });
      continue;
    }
    const z = (s.value - mean) / stddev;
    if (Math.abs(z) <= settings.threshold) continue;
    const anomaly: Anomaly = {
      id: randomUUID(),
      run_id: runId,
      model,
      metric: s.metric,
      column: s.column,
      value: s.value,
      mean: Math.round(mean * 1e6) / 1e6,
      stddev: Math.round(stddev * 1e6) / 1e6,
      z_score: Math.round(z * 1000) / 1000,
      threshold: settings.threshold,
      history_count: s.history.length,
      detected_at: new Date().toISOString(),
    };
    report.anomalies.push(anomaly);
    await ctx.db.run(
      `INSERT INTO _service.anomalies (id, run_id, model, metric, column_name, value, mean, stddev, z_score, threshold, history_count, detected_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12::TIMESTAMP)`,
      [anomaly.id, runId, model, s.metric, s.column, s.value, anomaly.mean, anomaly.stddev, anomaly.z_score, settings.threshold, s.history.length, at],
    );
  }
  return report;
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
