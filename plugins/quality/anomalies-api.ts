/** The quality plugin's anomalies: routes. */
import type { PluginContext } from '../../sdk/index.js';
import { listAnomalies } from './anomalies.js';
import { limitQuery, modelParams } from './route-schemas.js';
import { assertVisible, resolveModel, visibleTo } from './relations.js';

/** The anomalies routes. */
export function registerAnomalyRoutes(ctx: PluginContext): void {
  ctx.route<unknown, { limit: number }>({
    method: 'GET',
    url: '/api/anomalies',
    permission: 'read',
    summary: 'Recent anomalies (Z-score of row count, null percentage or distinct count above the threshold)',
    tags: ['quality'],
    schema: { querystring: limitQuery(100) },
    handler: async (req) => ({ anomalies: visibleTo(req.caller, await listAnomalies(ctx, { limit: req.query.limit ?? 100 }), (a) => a.model) }),
  });

  ctx.route<unknown, { limit: number }, { model_name: string }>({
    method: 'GET',
    url: '/api/anomalies/:model_name',
    permission: 'read',
    summary: 'Anomalies of one model',
    tags: ['quality'],
    schema: { params: modelParams, querystring: limitQuery(100) },
    handler: async (req) => {
      const rel = await resolveModel(ctx, req.params.model_name);
      assertVisible(req.caller, rel.schema, rel.table, 'model_not_found');
      return { model: rel.full, anomalies: await listAnomalies(ctx, { model: rel.full, limit: req.query.limit ?? 100 }) };
    },
  });
}
