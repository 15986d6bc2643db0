/**
 * The target-clickhouse plugin: a ClickHouse server or cluster as an environment's target
 * (`environments.<name>.target.type: clickhouse`). It provides the warehouse-target service the
 * models plugin hands `dp transform` and `dp seed` to when the active environment names a
 * target; its code (on-target.ts: the client, the transpiler, builds and queries) is imported
 * only when a target is first used.
 */
import { badRequest, definePlugin, duckdbFileTarget, QUERY_TARGET_SERVICE, WAREHOUSE_TARGET_SERVICE, type WarehouseTarget } from '../../sdk/index.js';
import { activeTargetConfig } from './config.js';
import { MIGRATIONS } from './migrations.js';
import type { ClickHouseTarget, queryTargetService } from './on-target.js';

const onTarget = () => import('./on-target.js');

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
        opened = { key, target: onTarget().then(({ ClickHouseTarget }) => ClickHouseTarget.open(config)) };
        void previous?.then((t) => t.close()).catch(() => {});
      }
      return opened.target;
    };
    ctx.services.provide(WAREHOUSE_TARGET_SERVICE, {
      config: () => activeTargetConfig(ctx),
      target: async (): Promise<WarehouseTarget> => (activeTargetConfig(ctx) ? clickhouse() : duckdbFileTarget(ctx.db)),
      transform: async (models, options) => (await onTarget()).transformOnTarget(ctx, await clickhouse(), models, options),
      loadSeeds: async (seeds, options) => (await onTarget()).seedOnTarget(ctx, await clickhouse(), seeds, options),
      loadRows: async (load) => (await onTarget()).loadRowsOnTarget(await clickhouse(), load),
      greatestValue: async (schema, table, column) => (await onTarget()).greatestOnTarget(await clickhouse(), schema, table, column),
      readDuckdbSql: async (sql, what) => (activeTargetConfig(ctx) ? (await onTarget()).readOnTarget(ctx, await clickhouse(), sql, what) : ctx.db.query(sql)),
      verifyModel: async (model) => (await onTarget()).verifyModelOnTarget(ctx, await clickhouse(), model),
      builtStates: async () => (await onTarget()).readTargetStates(ctx, await clickhouse()),
      assertLocalOnly(feature) {
        const config = activeTargetConfig(ctx);
        if (config) throw badRequest('not_on_target', `${feature} works on the local DuckDB file only; the environment '${ctx.project.env}' builds into ClickHouse`, { feature, environment: ctx.project.env });
      },
    });
    // User queries and the SQL page's browser on the target: nothing to load while no target is named.
    let queries: Promise<ReturnType<typeof queryTargetService>> | null = null;
    const queryService = () => (queries ??= onTarget().then((code) => code.queryTargetService(ctx, clickhouse)));
    ctx.services.provide(QUERY_TARGET_SERVICE, {
      active: async () => (activeTargetConfig(ctx) ? (await queryService()).service.active() : null),
      browse: async () => (activeTargetConfig(ctx) ? (await queryService()).service.browse() : null),
    });
    ctx.onStop(async () => {
      await (await queries?.catch(() => null))?.close();
      const t = opened?.target;
      opened = null;
      await t?.then((c) => c.close()).catch(() => {});
    });
  },
});
