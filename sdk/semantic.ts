/**
 * The semantic layer's contract (the semantic plugin provides it): metric definitions from
 * `metrics/*.yml`, their load errors, and compiling or running a metric query. The catalog plugin
 * reads it for the project documentation; a UI page or an MCP tool can use it the same way.
 */
import type { Caller } from './auth.js';
import { createServiceRef } from './refs.js';
import type { QueryStopSignal } from './routes.js';
import type { ProjectProblem } from './models.js';

/** Time buckets a metric query may ask for (SPEC "Limits": allowed grains). */
export const METRIC_GRAINS = Object.freeze(['hour', 'day', 'week', 'month', 'quarter', 'year'] as const);
export type MetricGrain = (typeof METRIC_GRAINS)[number];

/** One valid metric, as written in its file (keys of SPEC "Metric (semantic layer)"). */
export interface MetricDefinition {
  name: string;
  /** `schema.table` the metric reads. */
  model: string;
  /** SQL aggregate expression. */
  measure: string;
  description: string;
  /** Columns callers may group by. */
  dimensions: string[];
  /** Column used for time buckets and the start/end bounds, or null. */
  time_dimension: string | null;
  /** Row predicates ANDed into every query. */
  filters: string[];
  /** Project-relative file that defines it. */
  file: string;
}

/** A definition that was not loaded: the file, the metric's name when it has one, and why. */
export interface MetricLoadError {
  file: string;
  metric: string | null;
  /** Position in the file's `metrics:` list, when the problem is one entry. */
  index?: number;
  /** Line in the file (of the entry, or of a YAML syntax error), when known. */
  line?: number;
  reason: string;
}

export interface MetricQueryRequest {
  metric: string;
  dimensions?: string[];
  grain?: MetricGrain | null;
  /** Inclusive lower bound on the time dimension (ISO date or timestamp). */
  start?: string | null;
  /** Exclusive upper bound on the time dimension (ISO date or timestamp). */
  end?: string | null;
  limit?: number;
}

/** A compiled metric query: the SQL and the values bound to its `$start` / `$end` parameters. */
export interface CompiledMetricQuery {
  metric: string;
  sql: string;
  params: Record<string, string>;
}

export interface SemanticService {
  /** Every valid metric and, separately, what is wrong with the others (files are re-read on each call). */
  metrics(): Promise<{ metrics: MetricDefinition[]; errors: MetricLoadError[] }>;
  /** The SQL of a metric query; refuses unknown metrics, undeclared dimensions and grains outside METRIC_GRAINS. */
  compile(request: MetricQueryRequest): Promise<CompiledMetricQuery>;
  /** Compiles and runs through the guarded query runner (masking, read-only validation, role deadline). */
  query(request: MetricQueryRequest, caller: Caller, signal?: QueryStopSignal): Promise<CompiledMetricQuery & { columns: string[]; column_types: string[]; rows: unknown[][]; truncated: boolean }>;
  /**
   * The metrics part of `dp validate` (the same as the plugin's PROJECT_VALIDATORS contribution):
   * definitions that do not load, and metrics reading a relation the project does not define.
   */
  validate(): Promise<ProjectProblem[]>;
}

export const SEMANTIC_SERVICE = createServiceRef<SemanticService>('semantic');
