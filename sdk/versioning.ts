/** The versioning plugin's public contract: the hook point a restore fires. */
import { createHookRef } from './refs.js';

/**
 * Tables whose rows a restore replaced (a data version put back). Plugins that keep state about a
 * table's rows (a connector's sync watermark, a model's build hash) bring it in line and say so
 * in `notes`, which the restore's answer carries. The versioning plugin fires it and knows none of them.
 */
export interface TablesRestoredContext {
  /** What the rows came from, for people (`version v3-20260101-120000`). */
  readonly source: string;
  /** `schema.table` of every table restored. */
  readonly tables: readonly string[];
  /** One line per table a tap changed state for: which plugin, what it did. */
  notes: Array<{ table: string; plugin: string; message: string }>;
}

/** Fired by the versioning plugin after a restore replaced the rows of tables. */
export const TABLES_RESTORED = createHookRef<[TablesRestoredContext]>('versioning.tablesRestored');
