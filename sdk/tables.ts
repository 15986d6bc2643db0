/** The tables plugin's public contract: its service, the warehouse's tables and views. */
import type { Caller } from './auth.js';
import type { QueryStopSignal } from './routes.js';
import { createServiceRef } from './refs.js';

/** The warehouse's tables and views, as the tables plugin lists them. */
export interface TablesService {
  /**
   * With `rowCounts`, each table carries `rows` (exact) and each view `rows: null` (counting would
   * run it). With `reader` as well, the counts run as that caller's read: in a query slot of its
   * role, under its deadline (408), stopped when `signal` fires (a viewer starts them through
   * /api/overview, /api/sources and the docs routes).
   */
  list(schema?: string, options?: { rowCounts?: boolean; reader?: { caller: Caller; signal?: QueryStopSignal } }): Promise<Array<{ schema: string; name: string; type: 'table' | 'view'; rows?: number | null }>>;
  describe(schema: string, table: string): Promise<{ schema: string; name: string; type: string; columns: Array<{ name: string; type: string; nullable: boolean }> }>;
}

export const TABLES_SERVICE = createServiceRef<TablesService>('tables');
