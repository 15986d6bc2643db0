/**
 * What a caller may read of the connectors' state (docs/security.md "Data outside the query
 * path"): a high watermark is the greatest value of the cursor column, so it is withheld
 * (`watermark_value: null`, `watermark_masked: true`) from a caller for whom that column is
 * masked, like profiles withhold min/max and freshness `max_loaded_at`; error texts pass through
 * the sdk's one redaction.
 */
import { errorTextsFor, MASKING_SERVICE, type Caller, type FireableHook, type PluginContext, type VALUES_HIDDEN_FROM } from '../../sdk/index.js';
import type { CdcStateRow } from './api-types.js';
import type { ConnectorSettings } from './settings.js';
import { targetTableName } from './sync.js';

export interface CallerView {
  /** True when the cursor column of `connector`'s `table` is masked for the caller (or cannot be told: then withheld while any policy binds them). */
  watermarkHidden(connector: string, table: string): Promise<boolean>;
  /** State rows with the watermarks the caller may not read withheld. */
  cdcRows(rows: CdcStateRow[]): Promise<CdcStateRow[]>;
  /** Sync results of `connector` with hidden watermarks withheld and error texts redacted. */
  syncResults<R extends { table: string; watermark_before: string | null; watermark_after: string | null }>(connector: string, results: R[]): Promise<R[]>;
  /** `value` with its error texts redacted for the caller. */
  fields<T>(value: T): T;
}

export async function callerView(ctx: PluginContext, settings: ConnectorSettings, valuesHidden: FireableHook<typeof VALUES_HIDDEN_FROM>, caller: Caller): Promise<CallerView> {
  const errorTexts = await errorTextsFor(valuesHidden, caller);
  const masking = ctx.services.find(MASKING_SERVICE);
  const maskedNames = new Set(masking ? await masking.maskedColumnNames(caller) : []);
  const watermarkHidden = async (connectorName: string, tableName: string): Promise<boolean> => {
    if (!masking || maskedNames.size === 0) return false;
    const connector = settings.connectors().get(connectorName);
    const table = connector?.tables.find((t) => t.name === tableName);
    // A state row whose table or cursor project.yml no longer names: its column cannot be told, so it is withheld.
    if (!connector || !table?.cdc_column) return true;
    const column = table.cdc_column.toLowerCase();
    if (maskedNames.has(column)) return true;
    const masked = await masking.maskedColumns(caller, connector.target_schema, targetTableName(table.name));
    return masked.some((c) => c.toLowerCase() === column);
  };
  return {
    watermarkHidden,
    cdcRows: async (rows) =>
      Promise.all(
        rows.map(async (r) => (r.watermark_value !== null && (await watermarkHidden(r.connector_name, r.table_name)) ? { ...r, watermark_value: null, watermark_masked: true as const } : r)),
      ),
    syncResults: async (connector, results) =>
      Promise.all(
        results.map(async (r) => {
          const shown = errorTexts.fields(r);
          if ((r.watermark_before === null && r.watermark_after === null) || !(await watermarkHidden(connector, r.table))) return shown;
          return { ...shown, watermark_before: null, watermark_after: null, watermark_masked: true };
        }),
      ),
    fields: (v) => errorTexts.fields(v),
  };
}
