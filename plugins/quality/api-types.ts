/**
 * The shapes the quality plugin's HTTP API answers with: the one definition the backend returns
 * and the pages read (both `import type` it; types only, so a page's bundle takes nothing from the
 * server side). The explorer page (tables plugin) shows GET /api/tables/:schema/:table/profile.
 */
import type { ContractDefinition } from '../../sdk/quality.js';

export interface ColumnProfile {
  name: string;
  type: string;
  null_count: number;
  /** Percentage of rows that are NULL (0–100). */
  null_pct: number;
  distinct_count: number;
  min: unknown;
  max: unknown;
  /** Numeric columns only. */
  avg: number | null;
  sample_values?: unknown[];
  /** True when the caller sees this column masked: min/max are withheld, samples are masked. */
  masked?: boolean;
}

export interface TableProfile {
  schema: string;
  table: string;
  row_count: number;
  column_count: number;
  columns: ColumnProfile[];
  profiled_at: string;
  notes?: string[];
}

/** A contract from contracts/*.yml (GET /api/contracts): the sdk's definition, which the quality service also answers with. */
export type Contract = ContractDefinition;

/** A stored result of an inline assertion (GET /api/assertions). */
export interface StoredAssertionResult {
  id: string;
  run_id: string | null;
  model: string;
  expression: string;
  form: string | null;
  passed: boolean;
  detail: Record<string, unknown>;
  checked_at: string;
}
