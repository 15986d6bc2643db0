/**
 * The lineage plugin's public contract: its service (column lineage, impact, exposures) and the
 * types it answers with.
 */
import { createServiceRef } from './refs.js';

/** An `exposures:` entry of project.yml (owned by the lineage plugin). */
export interface ExposureConfig {
  name: string;
  description?: string;
  owner?: string;
  type?: string;
  url?: string;
  depends_on: string[];
}

export interface ColumnSource {
  source_table: string;
  source_column: string;
}

export interface ModelLineage {
  model: string;
  columns: Record<string, ColumnSource[]>;
  depends_on: string[];
  /** `not_analysed`: a model written natively for a target (`@config dialect=clickhouse`); its columns are not traced. */
  method?: 'parser' | 'regex' | 'not_analysed';
  /** With `not_analysed`: false when even the relations it reads are not known (see ModelInfo.referencesKnown). */
  reads_known?: boolean;
  /**
   * Output column → how its value relates to its sources: `pass` keeps a source value (a
   * reference, rename or cast), `count` is a plain count(col), `computed` is anything else.
   * The masking plugin propagates policies by it.
   */
  kinds?: Record<string, 'pass' | 'computed' | 'count'>;
}

/** What a change to a model (or one of its columns) reaches downstream (`dp impact`). */
export interface ImpactResult {
  model: string;
  column?: string;
  /** Every model downstream, transitively, nearest first. */
  downstream_models: string[];
  affected_columns: Array<{ model: string; column: string }>;
  /** The model and each downstream model → the models that depend on it directly. */
  impact_chain: Record<string, string[]>;
}

export interface LineageService {
  lineage(model: string): Promise<ModelLineage>;
  /** Lineage of every model (cached per model by content hash and upstream columns). */
  all(): Promise<ModelLineage[]>;
  /** The project's `exposures:` (the lineage plugin owns that key), `depends_on` defaulted to []. */
  exposures(): ExposureConfig[];
  /** Impact of a model (or a seed or source models read); with `column`, of that column only. Throws 404 `model_not_found` / `column_not_found`. */
  impact(model: string, column?: string): Promise<ImpactResult>;
}

export const LINEAGE_SERVICE = createServiceRef<LineageService>('lineage');
