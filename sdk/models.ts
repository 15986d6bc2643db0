/** Shared types of the models plugin's area (materializations, model unit tests). */

/**
 * How a model is materialized: `table` and `view` rebuild it; `incremental` adds the new rows
 * to the existing table; `scd2` keeps the history of changing rows (valid_from, valid_to,
 * is_current). `incremental` and `scd2` models are tables for every other purpose.
 */
export type Materialization = 'table' | 'view' | 'incremental' | 'scd2';

/** One model unit test's outcome (`dp test`, `POST /api/unit-tests/run`). */
export interface UnitTestResult {
  name: string;
  model: string;
  /** Project-relative path of the YAML file, with the test's line. */
  file: string;
  line: number | null;
  status: 'pass' | 'fail' | 'error';
  duration_ms: number;
  /** Expected rows the model did not produce (as column → value objects). */
  missing: Array<Record<string, unknown>>;
  /** Rows the model produced that were not expected. */
  unexpected: Array<Record<string, unknown>>;
  /** Why the test could not run (bad YAML, missing mock, SQL error). */
  error?: string;
}
