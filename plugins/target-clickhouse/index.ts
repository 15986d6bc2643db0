/**
 * The target-clickhouse plugin: a ClickHouse server or cluster as an environment's target
 * (`environments.<name>.target.type: clickhouse`). It provides the warehouse-target service the
 * models plugin hands `dp transform` and `dp seed` to when the active environment names a
 * target; the client package and the transpiler are imported only when a target is first used.
 */
import { badRequest, definePlugin, duckdbFileTarget, QUERY_TARGET_SERVICE, WAREHOUSE_TARGET_SERVICE, type WarehouseTarget } from '../../sdk/index.js';
import { ClickHouseTarget } from './client.js';
import { activeTargetConfig } from './config.js';
import { MIGRATIONS, transformOnTarget, verifyModelOnTarget } from './build.js';
import { readOnTarget } from './reads.js';
import { seedOnTarget } from './seeds.js';
import { greatestOnTarget, loadRowsOnTarget } from './loads.js';
import { queryTargetService } from './query-service.js';
import { readTargetStates } from './state.js';

export default definePlugin({
  setup(ctx) {
    ctx.migrate(MIGRATIONS);
    let opened: { key: string; target: Promise<ClickHouseTarget> } | null = null;
    const clickhouse = (): Promise<ClickHouseTarget> => {
      const config = activeTargetConfig(ctx);
      if (!config) throw badRequest('invalid_target', 'The active environment names no ClickHouse target');
      const key = JSON.stringify(config);
      if (opened?.key !== key) {
        const previous = opened?.target;
        opened = { key, target: ClickHouseTarget.open(config) };
        void previous?.then((t) => t.close()).catch(() => {});
      }
      return opened.target;
    };
    ctx.services.provide(WAREHOUSE_TARGET_SERVICE, {
      config: () => activeTargetConfig(ctx),
      target: async (): Promise<WarehouseTarget> => (activeTargetConfig(ctx) ? clickhouse() : duckdbFileTarget(ctx.db)),
      transform: async (models, options) => transformOnTarget(ctx, await clickhouse(), models, options),
      loadSeeds: async (seeds, options) => seedOnTarget(ctx, await clickhouse(), seeds, options),
      loadRows: async (load) => loadRowsOnTarget(await clickhouse(), load),
      greatestValue: async (schema, table, column) => greatestOnTarget(await clickhouse(), schema, table, column),
      readDuckdbSql: async (sql, what) => (activeTargetConfig(ctx) ? readOnTarget(ctx, await clickhouse(), sql, what) : ctx.db.query(sql)),
      verifyModel: async (model) => verifyModelOnTarget(ctx, await clickhouse(), model),
      builtStates: async () => readTargetStates(ctx, await clickhouse()),
      assertLocalOnly(feature) {
        const config = activeTargetConfig(ctx);
        if (config) throw badRequest('not_on_target', `${feature} works on the local DuckDB file only; the environment '${ctx.project.env}' builds into ClickHouse`, { feature, environment: ctx.project.env });
      },
    });
    const queries = queryTargetService(ctx, clickhouse);
    ctx.services.provide(QUERY_TARGET_SERVICE, queries.service);
    ctx.onStop(async () => {
      await queries.close();
      const t = opened?.target;
      opened = null;
      await t?.then((c) => c.close()).catch(() => {});
    });
  },
});
