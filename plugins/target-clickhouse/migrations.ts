/**
 * The plugin's tables in the local DuckDB file: its run history (`dp transform` on a target,
 * build.ts) and each target's built states (state.ts). Apart from the code that writes them, so
 * that setup registers them without importing that code (index.ts).
 */
import { STATE_MIGRATION } from './state.js';

export const MIGRATIONS = [
  {
    id: 'target-clickhouse-001',
    sql: `CREATE TABLE IF NOT EXISTS _service.target_runs (
      run_id VARCHAR PRIMARY KEY, target VARCHAR NOT NULL, status VARCHAR NOT NULL,
      started_at TIMESTAMP NOT NULL, duration_ms BIGINT, results JSON)`,
  },
  STATE_MIGRATION,
];
