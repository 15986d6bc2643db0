/**
 * The `query-target` service: the active environment's ClickHouse target for user queries
 * (query.ts), and its catalog for the SQL page. User queries go through a client of their own
 * whose default database is `main` (once the server has one), so an unqualified name means on
 * the server what it meant to validation and masking: `orders` is `main.orders`, as on DuckDB.
 */
import type { PluginContext, QueryTargetService, TargetConfig } from '../../sdk/index.js';
import { ClickHouseTarget } from './client.js';
import { activeTargetConfig } from './config.js';
import { browseTarget, ClickHouseQueryTarget, DEFAULT_SCHEMA } from './query.js';

export function queryTargetService(ctx: PluginContext, clickhouse: () => Promise<ClickHouseTarget>): { service: QueryTargetService; close(): Promise<void> } {
  /** The active config's query target and, once opened, its client on `main`. */
  let opened: { key: string; target: ClickHouseQueryTarget; onMain: Promise<ClickHouseTarget> | null } | null = null;
  const closeClient = async (o: typeof opened) => {
    await o?.onMain?.then((t) => t.close()).catch(() => {});
  };

  /** The client on `main`; while the server has no `main` database, the shared one (no unqualified name resolves then anyway: asked again next time). */
  const queries = async (entry: NonNullable<typeof opened>, config: TargetConfig): Promise<ClickHouseTarget> => {
    if (entry.onMain) return entry.onMain;
    const admin = await clickhouse();
    const hasMain = await admin.query(`SELECT count() FROM system.databases WHERE name = ${admin.literal(DEFAULT_SCHEMA)}`);
    if (Number(hasMain.rows[0]?.[0] ?? 0) === 0) return admin;
    entry.onMain ??= ClickHouseTarget.open(config, DEFAULT_SCHEMA);
    return entry.onMain;
  };

  const active = async (): Promise<ClickHouseQueryTarget | null> => {
    const config = activeTargetConfig(ctx);
    if (!config) return null;
    const key = JSON.stringify(config);
    if (opened?.key !== key) {
      const previous = opened;
      const admin = await clickhouse();
      const entry: NonNullable<typeof opened> = { key, onMain: null, target: null as unknown as ClickHouseQueryTarget };
      entry.target = new ClickHouseQueryTarget(admin, () => queries(entry, config), ctx.db, config);
      opened = entry;
      void closeClient(previous);
    }
    return opened.target;
  };

  return {
    service: {
      active,
      browse: async () => (activeTargetConfig(ctx) ? browseTarget(await clickhouse()) : null),
    },
    close: async () => {
      const o = opened;
      opened = null;
      await closeClient(o);
    },
  };
}
