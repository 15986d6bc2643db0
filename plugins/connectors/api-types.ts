/**
 * The shapes the connectors plugin's HTTP API answers with: the one definition the backend returns
 * and the Connectors page reads (both `import type` it; types only, so the page's bundle takes
 * nothing from the server side).
 */

/** One tracked table's CDC state (`_service.cdc_state`; GET /api/cdc and /api/cdc/{connector}). */
export interface CdcStateRow {
  connector_name: string;
  table_name: string;
  cdc_mode: string;
  watermark_value: string | null;
  file_mtime: number | null;
  last_sync_at: string | null;
  rows_synced: number;
  /** Set when the watermark is withheld: the cursor column is masked for the caller. */
  watermark_masked?: boolean;
}
