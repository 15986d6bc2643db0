/** The models the quality routes and commands speak of, and the check that one is built. */
import { notFound, type PluginContext } from '../../sdk/index.js';
import { modelsService, relationExists, type Relation } from './relations.js';


/** Models the profile listing covers: the models service's plus every model this plugin saw built. */
export async function knownModels(ctx: PluginContext): Promise<string[]> {
  const names = new Set((await ctx.db.all<{ model: string }>('SELECT model FROM _service.model_freshness')).map((r) => r.model));
  const models = modelsService(ctx);
  if (models) for (const m of await models.list()) names.add(m.full_name);
  return [...names].sort();
}

/** `exists` asks where the check reads (reader.ts: the environment's target) instead of the DuckDB file. */
export async function requireRelation(ctx: PluginContext, rel: Relation, exists = (schema: string, table: string) => relationExists(ctx, schema, table)): Promise<void> {
  if (!(await exists(rel.schema, rel.table))) {
    throw notFound('model_not_built', `Model ${rel.full} does not exist in the warehouse yet; run a transform first`, { model: rel.full });
  }
}
