/**
 * Build records on an environment whose models are built on a warehouse target (ClickHouse): the
 * metrics profile of each built model is computed where the model is, by the target's own port
 * (`WarehouseTarget.profile`: one aggregate pass in the target's SQL, never a value), and stored
 * with the build records in the local control-plane file, where anomaly detection and the
 * freshness report read them as on the DuckDB file.
 */
import { randomUUID } from 'node:crypto';
import { errorMessage, WAREHOUSE_TARGET_SERVICE, type PluginContext, type WarehouseTargetService } from '../../sdk/index.js';
import { recordBuildsSql, type QueuedBuild } from './freshness.js';
import type { StoredColumnMetrics } from './profiles.js';
import { utcNow } from './relations.js';

/** The target service when the active environment builds somewhere other than the DuckDB file. */
export function activeTarget(ctx: PluginContext): WarehouseTargetService | null {
  const service = ctx.services.find(WAREHOUSE_TARGET_SERVICE);
  return service?.config() ? service : null;
}

/** Records a batch of builds: the build records, and each profile computed on the target (one that fails is logged, the others kept). */
export async function recordOnTarget(ctx: PluginContext, service: WarehouseTargetService, batch: readonly QueuedBuild[]): Promise<void> {
  const profiledAt = utcNow();
  const profiles: unknown[][] = [];
  const toProfile = batch.filter((b) => b.profile);
  const target = toProfile.length ? await service.target() : null;
  for (const b of toProfile) {
    try {
      const columns = await target!.columns({ schema: b.schema, table: b.table });
      if (columns.length === 0) {
        ctx.log.warn('a built model is gone before its profile was recorded', { model: b.model });
        continue;
      }
      const metrics = await target!.profile({ schema: b.schema, name: b.table }, columns.map((c) => c.name));
      const stored: StoredColumnMetrics[] = columns.map((c, i) => {
        const nulls = metrics.rows - (metrics.columns[i]?.non_null ?? 0);
        return {
          name: c.name,
          type: c.type,
          null_count: nulls,
          null_pct: metrics.rows ? Math.round((nulls * 100 * 10_000) / metrics.rows) / 10_000 : 0,
          distinct_count: metrics.columns[i]?.distinct ?? 0,
        };
      });
      profiles.push([randomUUID(), b.runId, b.model, metrics.rows, JSON.stringify(stored), profiledAt]);
    } catch (e) {
      ctx.log.error('recording a model profile failed', { model: b.model, error: errorMessage(e) });
    }
  }
  await ctx.db.withConnection((conn) => conn.transaction(async (c) => {
    await c.run(recordBuildsSql(batch));
    for (const p of profiles) {
      await c.run('INSERT INTO _service.model_profiles (id, run_id, model, row_count, columns, profiled_at) VALUES ($1, $2, $3, $4, $5::JSON, $6::TIMESTAMP)', p);
    }
  }));
}
