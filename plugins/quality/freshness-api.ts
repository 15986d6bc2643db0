/** The quality plugin's model and source freshness: routes and CLI. */
import { badRequest, clientGone, LOCAL_ADMIN, type PluginContext } from '../../sdk/index.js';
import type { AlertDispatcher } from './alerts.js';
import { isStaleSource, modelFreshness, sourceFreshness } from './freshness.js';
import { visibleTo } from './relations.js';

/** The model and source freshness routes. */
export function registerFreshnessRoutes(ctx: PluginContext): void {
  ctx.route<unknown, { max_hours: number }>({
    method: 'GET',
    url: '/api/freshness',
    permission: 'read',
    summary: 'Hours since each model was last built; older than max_hours is stale',
    tags: ['quality'],
    schema: {
      querystring: { type: 'object', additionalProperties: false, properties: { max_hours: { type: 'number', exclusiveMinimum: 0, default: 24 } } },
    },
    handler: async (req) => {
      const report = await modelFreshness(ctx, req.query.max_hours ?? 24);
      const models = visibleTo(req.caller, report.models, (m) => m.model);
      return { ...report, models, stale_count: models.filter((m) => m.status !== 'fresh').length };
    },
  });

  ctx.route({
    method: 'GET',
    url: '/api/sources/freshness',
    permission: 'read',
    summary: "Each declared source table's newest loaded_at_column value against its source's freshness_hours",
    tags: ['quality'],
    handler: async (req, reply) => sourceFreshness(ctx, req.caller, clientGone(reply)),
  });
}

/** The `dp freshness` command. */
export function registerFreshnessCommand(ctx: PluginContext, alerts: AlertDispatcher): void {
  ctx.command('freshness', async (args, io) => {
    const hours = Number(args.hours ?? 24);
    if (!(hours > 0)) throw badRequest('invalid_hours', '--hours must be a positive number', { field: 'hours' });
    let staleCount: number;
    let staleNames: string[];
    if (args.sources) {
      const report = await sourceFreshness(ctx, io.caller ?? LOCAL_ADMIN);
      staleCount = report.stale_count;
      staleNames = report.sources.filter(isStaleSource).map((s) => `${s.schema}.${s.table}`);
      if (io.wantsJson) io.json(report);
      else io.table(report.sources.map((s) => ({ source: s.source, table: `${s.schema}.${s.table}`, loaded_at_column: s.loaded_at_column, max_loaded_at: s.max_loaded_at, hours: s.hours_since_load, sla_hours: s.freshness_hours, status: s.status })));
    } else {
      const report = await modelFreshness(ctx, hours);
      staleCount = report.stale_count;
      staleNames = report.models.filter((m) => m.status !== 'fresh').map((m) => m.model);
      if (io.wantsJson) io.json(report);
      else io.table(report.models.map((m) => ({ model: m.model, last_built_at: m.last_built_at, hours: m.hours_since_build, status: m.status })));
    }
    if (args.alert && staleCount > 0) {
      const records = await alerts.notify({
        type: 'stale_data',
        title: `${staleCount} stale ${args.sources ? 'source table' : 'model'}${staleCount === 1 ? '' : 's'}`,
        message: staleNames.join('\n'),
        details: { kind: args.sources ? 'sources' : 'models', max_hours: args.sources ? null : hours, stale: staleNames },
      });
      for (const r of records) io.err(`alert via ${r.channel}: ${r.status}${r.error ? ` (${r.error})` : ''}`);
    }
    return staleCount > 0 ? 1 : 0;
  });
}
