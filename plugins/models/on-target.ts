/**
 * The models plugin on an environment whose target is not the DuckDB file: the catalog and the
 * build states come from the target (its catalog port, and what dp recorded of its builds in the
 * local file) instead of the file, so `dp check`, the status and the DAG describe where the
 * models are.
 */
import { WAREHOUSE_TARGET_SERVICE, type DagNode, type PluginContext, type WarehouseTargetService } from '../../sdk/index.js';
import { readCatalog, readStates, type Relation, type StateRow } from './state.js';

/** The target plugin when the active environment builds somewhere other than the DuckDB file. */
export function activeTarget(ctx: PluginContext): WarehouseTargetService | null {
  const service = ctx.services.find(WAREHOUSE_TARGET_SERVICE);
  return service?.config() ? service : null;
}

/** Every relation where models are built, by lower-case `schema.name`, with its row estimate. */
async function relationsWhereBuilt(ctx: PluginContext): Promise<Map<string, { kind: 'table' | 'view'; rows: number | null }>> {
  const target = activeTarget(ctx);
  const relations = target ? await (await target.target()).relations() : await ctx.db.catalog.relations({ includeInternal: true });
  return new Map(relations.map((r) => [`${r.schema}.${r.name}`.toLowerCase(), { kind: r.kind, rows: r.estimatedRows ?? null }]));
}

/** The catalog and build states where models are built (readCatalog and readStates for the DuckDB file). */
export async function catalogAndStates(ctx: PluginContext): Promise<[Map<string, Relation>, Map<string, StateRow>]> {
  const target = activeTarget(ctx);
  if (!target) return Promise.all([readCatalog(ctx), ctx.db.withConnection((c) => readStates(c))]);
  const [relations, states] = await Promise.all([relationsWhereBuilt(ctx), target.builtStates()]);
  const catalog = new Map([...relations].map(([k, r]) => [k, { kind: r.kind, signature: String(r.rows ?? '') }]));
  return [catalog, new Map([...states].map(([k, s]) => [k, { name: k, ...s, rows: relations.get(k)?.rows ?? null }]))];
}

/** DAG nodes with what the target holds for each model: built or not, and its table's rows (the engine's estimate, never counted). */
export async function withBuildState(ctx: PluginContext, nodes: DagNode[]): Promise<DagNode[]> {
  const relations = await relationsWhereBuilt(ctx);
  return nodes.map((n) => {
    const r = relations.get(n.id.toLowerCase());
    return { ...n, built: r !== undefined, rows: r?.kind === 'table' ? r.rows : null };
  });
}
