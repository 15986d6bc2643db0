/**
 * The shapes the versioning plugin's HTTP API answers with: the one definition the backend
 * returns and the Versioning page reads (both `import type` it; types only, so the page's
 * bundle takes nothing from the server side).
 */

export interface ColumnInfo {
  name: string;
  type: string;
}

/** The version record of SPEC.md, plus the bytes on disk (GET /api/versions). */
export interface VersionRecord {
  version_id: string;
  created_at: string;
  description: string | null;
  trigger: string;
  table_count: number;
  total_rows: number;
  size_bytes: number;
}

/** A version with each table's row count and columns (GET /api/versions/:version_id). */
export interface VersionDetail extends VersionRecord {
  tables: Array<{ table: string; row_count: number; columns: ColumnInfo[]; key: string[]; bytes: number }>;
}

/** One version holding a table (GET /api/versions/timeline/:table_name). */
export interface TimelineEntry {
  version_id: string;
  created_at: string;
  row_count: number;
  columns: ColumnInfo[];
}

/** One table's change between two states (a row of GET /api/versions/:from_version/diff). */
export interface TableChange {
  table: string;
  change: 'added' | 'removed' | 'modified';
  /** Rows of an added table. */
  rows?: number;
  rows_before?: number;
  rows_after?: number;
  row_diff?: number;
  rows_added?: number;
  rows_removed?: number;
  /** Rows whose key is on both sides with other values (null when compared by whole row). */
  rows_changed?: number | null;
  compared_by?: 'key' | 'row';
  key?: string[];
  columns_added?: string[];
  columns_removed?: string[];
  columns_type_changed?: string[];
}

export interface DiffResult {
  from_version: string;
  to_version: string;
  tables_compared: number;
  changes: TableChange[];
}

export interface RestoreTableResult {
  table: string;
  status: 'success' | 'error' | 'skipped';
  rows?: number;
  error?: string;
  reason?: string;
}

/** POST /api/versions/:version_id/restore. */
export interface RestoreResult {
  version_id: string;
  restore_version: string;
  status: 'success' | 'error';
  tables: RestoreTableResult[];
  /** What other plugins did about state they keep on the restored tables (a connector's sync state reset, a model marked for rebuild). */
  notes: Array<{ table: string; plugin: string; message: string }>;
}

export interface SnapshotSummary {
  name: string;
  created_at: string;
  project_hash: string;
  file_count: number;
  table_count: number;
}

/** GET /api/snapshots/:name/diff. */
export interface SnapshotDiff {
  snapshot: string;
  created_at: string;
  changed: boolean;
  project_hash_before: string;
  project_hash_now: string;
  files: { added: string[]; modified: string[]; removed: string[] };
  tables: Array<{ table: string; status: 'added' | 'modified' | 'removed'; rows_before: number | null; rows_after: number | null; schema_changed: boolean }>;
}

export interface BackupEntry {
  /** Project-relative: `_backups/<file>`. */
  path: string;
  size_bytes: number;
  sha256: string;
  timestamp: string;
  note: string | null;
  /** `manual`, or `pre-restore` for the file a restore replaced. */
  kind: 'manual' | 'pre-restore';
}

/** POST /api/backup/verify. */
export interface VerifyResult {
  path: string;
  valid: boolean;
  checksum_ok: boolean;
  opens: boolean;
  expected_sha256: string;
  actual_sha256: string | null;
  tables: number | null;
  error: string | null;
}

/** POST /api/backup/restore. */
export interface BackupRestoreResult {
  restored: string;
  sha256: string;
  replaced_backup: BackupEntry;
}
