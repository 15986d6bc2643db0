/**
 * CDC state (`_service.cdc_state`, the columns of docs/decisions.md "CDC") and the sync history
 * that `GET /api/connectors/health` reads (`_service.connector_syncs`). A table's state row is
 * written on the same connection and inside the same transaction as its rows, so a sync that
 * fails midway leaves both as they were.
 */
import type { DatabasePort, DbConnection } from '../../sdk/index.js';
import type { CdcStateRow } from './api-types.js';

export const MIGRATIONS = [
  {
    id: 'connectors-001',
    sql: `CREATE TABLE IF NOT EXISTS _service.cdc_state (
      connector_name VARCHAR NOT NULL,
      table_name VARCHAR NOT NULL,
      cdc_mode VARCHAR NOT NULL,
      watermark_value VARCHAR,
      file_mtime DOUBLE,
      last_sync_at TIMESTAMP,
      rows_synced BIGINT NOT NULL DEFAULT 0,
      PRIMARY KEY (connector_name, table_name)
    );
    CREATE TABLE IF NOT EXISTS _service.connector_syncs (
      connector_name VARCHAR NOT NULL,
      started_at TIMESTAMP NOT NULL,
      duration_ms BIGINT NOT NULL,
      status VARCHAR NOT NULL,
      tables_synced INTEGER NOT NULL,
      rows_synced BIGINT NOT NULL,
      error VARCHAR,
      trigger VARCHAR
    );
    CREATE TABLE IF NOT EXISTS _service.imports (
      schema_name VARCHAR NOT NULL,
      table_name VARCHAR NOT NULL,
      file_name VARCHAR NOT NULL,
      format VARCHAR NOT NULL,
      rows_imported BIGINT NOT NULL,
      imported_at TIMESTAMP NOT NULL,
      imported_by VARCHAR
    );`,
  },
];

export type { CdcStateRow } from './api-types.js';

const SELECT_STATE = `SELECT connector_name, table_name, cdc_mode, watermark_value, file_mtime,
  strftime(last_sync_at, '%Y-%m-%d %H:%M:%S') AS last_sync_at, rows_synced::DOUBLE AS rows_synced FROM _service.cdc_state`;

export class CdcStateStore {
  constructor(private readonly db: () => DatabasePort) {}

  async all(connector?: string): Promise<CdcStateRow[]> {
    return connector
      ? this.db().all<CdcStateRow>(`${SELECT_STATE} WHERE connector_name = $1 ORDER BY table_name`, [connector])
      : this.db().all<CdcStateRow>(`${SELECT_STATE} ORDER BY connector_name, table_name`);
  }

  async get(c: DbConnection, connector: string, table: string): Promise<CdcStateRow | undefined> {
    const rows = await c.all<CdcStateRow>(`${SELECT_STATE} WHERE connector_name = $1 AND table_name = $2`, [connector, table]);
    return rows[0];
  }

  /** Upserts a table's state on `c` (inside the sync's transaction). */
  async put(c: DbConnection, row: { connector: string; table: string; mode: string; watermark: string | null; mtime: number | null; rows: number }): Promise<void> {
    await c.run(
      `INSERT INTO _service.cdc_state VALUES ($1, $2, $3, $4, $5, now()::TIMESTAMP, $6)
       ON CONFLICT (connector_name, table_name) DO UPDATE SET cdc_mode = excluded.cdc_mode, watermark_value = excluded.watermark_value,
         file_mtime = excluded.file_mtime, last_sync_at = excluded.last_sync_at, rows_synced = excluded.rows_synced`,
      [row.connector, row.table, row.mode, row.watermark, row.mtime, row.rows],
    );
  }

  /** Forgets watermarks and mtimes (one table or all of a connector): the next sync is a full re-sync. */
  async reset(connector: string, table?: string): Promise<number> {
    const before = await this.all(connector);
    const hit = table ? before.filter((r) => r.table_name === table) : before;
    if (table) await this.db().run('DELETE FROM _service.cdc_state WHERE connector_name = $1 AND table_name = $2', [connector, table]);
    else await this.db().run('DELETE FROM _service.cdc_state WHERE connector_name = $1', [connector]);
    return hit.length;
  }

  async recordSync(run: { connector: string; startedAt: Date; durationMs: number; status: string; tables: number; rows: number; error: string | null; trigger: string }): Promise<void> {
    await this.db().run('INSERT INTO _service.connector_syncs VALUES ($1, $2::TIMESTAMP, $3, $4, $5, $6, $7, $8)', [
      run.connector,
      run.startedAt.toISOString().replace('T', ' ').replace('Z', ''),
      run.durationMs,
      run.status,
      run.tables,
      run.rows,
      run.error,
      run.trigger,
    ]);
  }

  /** The last sync of each connector. */
  async lastSyncs(): Promise<Map<string, { status: string; last_sync_at: string; duration_ms: number; rows_synced: number; error: string | null }>> {
    const rows = await this.db().all<{ connector_name: string; status: string; last_sync_at: string; duration_ms: number; rows_synced: number; error: string | null }>(
      `SELECT connector_name, status, strftime(started_at, '%Y-%m-%d %H:%M:%S') AS last_sync_at, duration_ms::DOUBLE AS duration_ms, rows_synced::DOUBLE AS rows_synced, error
       FROM _service.connector_syncs QUALIFY row_number() OVER (PARTITION BY connector_name ORDER BY started_at DESC) = 1`,
    );
    return new Map(rows.map((r) => [r.connector_name, { status: r.status, last_sync_at: r.last_sync_at, duration_ms: r.duration_ms, rows_synced: r.rows_synced, error: r.error }]));
  }

  async forget(connector: string): Promise<void> {
    await this.db().run('DELETE FROM _service.cdc_state WHERE connector_name = $1', [connector]);
  }
}
