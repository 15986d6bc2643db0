/** The quality plugin's service tables (`_service.*`), by migration id. */


export const MIGRATIONS = [
  {
    id: 'quality-001',
    sql: `CREATE TABLE IF NOT EXISTS _service.assertion_results (
     id VARCHAR PRIMARY KEY, run_id VARCHAR, model VARCHAR, expression VARCHAR, form VARCHAR,
     passed BOOLEAN, detail JSON, checked_at TIMESTAMP)`,
  },
  {
    id: 'quality-002',
    sql: `CREATE TABLE IF NOT EXISTS _service.contract_results (
     id VARCHAR PRIMARY KEY, contract_name VARCHAR, model VARCHAR, passed BOOLEAN, severity VARCHAR,
     detail JSON, checked_at TIMESTAMP, duration_ms DOUBLE, error VARCHAR)`,
  },
  {
    id: 'quality-003',
    sql: `CREATE SEQUENCE IF NOT EXISTS _service.model_profiles_seq;
   CREATE TABLE IF NOT EXISTS _service.model_profiles (
     seq BIGINT DEFAULT nextval('_service.model_profiles_seq'), id VARCHAR, run_id VARCHAR, model VARCHAR,
     row_count BIGINT, columns JSON, profiled_at TIMESTAMP)`,
  },
  {
    id: 'quality-004',
    sql: `CREATE TABLE IF NOT EXISTS _service.anomalies (
     id VARCHAR PRIMARY KEY, run_id VARCHAR, model VARCHAR, metric VARCHAR, column_name VARCHAR, value DOUBLE,
     mean DOUBLE, stddev DOUBLE, z_score DOUBLE, threshold DOUBLE, history_count INTEGER, detected_at TIMESTAMP)`,
  },
  {
    id: 'quality-005',
    sql: `CREATE TABLE IF NOT EXISTS _service.alert_history (
     id VARCHAR PRIMARY KEY, alert_type VARCHAR, channel VARCHAR, status VARCHAR, target VARCHAR, title VARCHAR,
     message VARCHAR, payload JSON, attempts INTEGER, http_status INTEGER, error VARCHAR,
     created_at TIMESTAMP, finished_at TIMESTAMP)`,
  },
  {
    id: 'quality-006',
    sql: `CREATE TABLE IF NOT EXISTS _service.model_freshness (
     model VARCHAR PRIMARY KEY, last_built_at TIMESTAMP, last_status VARCHAR, run_id VARCHAR)`,
  },
  {
    // The content fingerprint of each profiled relation, by profile id (profiles.ts): an unchanged
    // rebuild copies its profile. A table of its own, not a column: DuckDB 1.5 cannot replay an
    // ALTER TABLE … ADD COLUMN of model_profiles (its nextval default) from the WAL after a kill,
    // and the file would no longer open.
    id: 'quality-007',
    sql: `CREATE TABLE IF NOT EXISTS _service.model_profile_fingerprints (id VARCHAR, fingerprint VARCHAR)`,
  },
];
