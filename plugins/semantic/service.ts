/** The `semantic` service: metrics read from the project on each call, compiled and run for a caller. */
import { MODELS_SERVICE, type DatabasePort, type PluginContext, type QueryRunner, type SemanticService } from '../../sdk/index.js';
import { compileMetric, findMetric } from './compile.js';
import { loadMetrics, publicMetric } from './metrics.js';
import { metricsValidator } from './validator.js';

export function createSemanticService(ctx: Pick<PluginContext, 'project' | 'db' | 'queries' | 'services'>): SemanticService {
  const validator = metricsValidator(ctx.project, ctx.db, () => ctx.services.get(MODELS_SERVICE));
  const db: DatabasePort = ctx.db;
  const queries: QueryRunner = ctx.queries;
  const compile: SemanticService['compile'] = async (request) => {
    const loaded = await loadMetrics(ctx.project, db);
    return compileMetric(db, findMetric(request.metric, loaded), request);
  };
  return {
    async metrics() {
      const { metrics, errors } = await loadMetrics(ctx.project, db);
      return { metrics: metrics.map(publicMetric), errors };
    },
    compile,
    validate: () => validator.validate(),
    async query(request, caller, signal) {
      const compiled = await compile(request);
      const result = await queries.run({
        sql: compiled.sql,
        params: Object.keys(compiled.params).length ? compiled.params : undefined,
        limit: request.limit,
        caller,
        purpose: 'semantic',
        signal,
      });
      return { ...compiled, columns: result.columns, column_types: result.column_types, rows: result.rows, truncated: result.truncated };
    },
  };
}
