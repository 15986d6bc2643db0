/** The quality plugin's table profiles: routes and CLI. */
import { clientGone, LOCAL_ADMIN, notFound, type PluginContext } from '../../sdk/index.js';
import { computeStats, profileForCaller, profileHistory } from './profiles.js';
import { modelParams } from './route-schemas.js';
import { knownModels, requireRelation } from './known-models.js';
import { printProfile } from './cli-output.js';
import { assertVisible, relationExists, resolveModel, splitRelation, visibleTo } from './relations.js';

/** The table profiles routes. */
export function registerProfileRoutes(ctx: PluginContext): void {
  ctx.route({
    method: 'GET',
    url: '/api/profiles',
    permission: 'read',
    summary: 'Column profiles of every model (models never built are listed with status not_built)',
    tags: ['quality'],
    handler: async (req, reply) => {
      const profiles: Array<Record<string, unknown>> = [];
      const gone = clientGone(reply);
      for (const model of visibleTo(req.caller, await knownModels(ctx), (m) => m)) {
        if (gone.aborted) break;
        const { schema, table } = splitRelation(model);
        if (!schema || !(await relationExists(ctx, schema, table))) {
          profiles.push({ model, schema, table, status: 'not_built' });
          continue;
        }
        profiles.push({ model, status: 'ok', ...(await profileForCaller(ctx, schema, table, req.caller, gone)) });
      }
      return { profiles };
    },
  });

  ctx.route<unknown, unknown, { model_name: string }>({
    method: 'GET',
    url: '/api/profiles/:model_name',
    permission: 'read',
    summary: 'Column profile of one model, with its recorded row-count history',
    tags: ['quality'],
    schema: { params: modelParams },
    handler: async (req, reply) => {
      const rel = await resolveModel(ctx, req.params.model_name);
      assertVisible(req.caller, rel.schema, rel.table, 'model_not_found');
      await requireRelation(ctx, rel);
      const profile = await profileForCaller(ctx, rel.schema, rel.table, req.caller, clientGone(reply));
      const history = (await profileHistory(ctx, rel.full, 30)).map((h) => ({ run_id: h.run_id, row_count: h.row_count, profiled_at: h.profiled_at }));
      return { model: rel.full, ...profile, history };
    },
  });

  ctx.route<unknown, unknown, { schema: string; table: string }>({
    method: 'GET',
    url: '/api/tables/:schema/:table/profile',
    permission: 'read',
    summary: 'Column statistics of any table or view (sample values masked per policies)',
    tags: ['quality'],
    schema: {
      params: { type: 'object', required: ['schema', 'table'], properties: { schema: { type: 'string', minLength: 1 }, table: { type: 'string', minLength: 1 } } },
    },
    handler: async (req, reply) => {
      const { schema, table } = req.params;
      assertVisible(req.caller, schema, table);
      if (!(await relationExists(ctx, schema, table))) throw notFound('table_not_found', `No table or view ${schema}.${table}`, { schema, table });
      return profileForCaller(ctx, schema, table, req.caller, clientGone(reply));
    },
  });
}

/** The `dp profile` command. */
export function registerProfileCommand(ctx: PluginContext): void {
  ctx.command('profile', async (args, io) => {
    if (args.model) {
      const rel = await resolveModel(ctx, String(args.model));
      await requireRelation(ctx, rel);
      io.progress(`Profiling ${rel.full}…`);
      const profile = await profileForCaller(ctx, rel.schema, rel.table, io.caller ?? LOCAL_ADMIN);
      if (io.wantsJson) io.json(profile);
      else printProfile(io, rel.full, profile);
      return 0;
    }
    const rows: Array<Record<string, unknown>> = [];
    for (const model of await knownModels(ctx)) {
      const { schema, table } = splitRelation(model);
      if (!schema || !(await relationExists(ctx, schema, table))) {
        rows.push({ model, status: 'not_built' });
        continue;
      }
      io.progress(`Profiling ${model}…`);
      const p = await computeStats(ctx, schema, table);
      const nullCells = p.columns.reduce((a, c) => a + c.null_count, 0);
      rows.push({ model, status: 'ok', rows: p.row_count, columns: p.column_count, null_cells: nullCells });
    }
    if (io.wantsJson) io.json(rows);
    else io.table(rows, ['model', 'status', 'rows', 'columns', 'null_cells']);
    return 0;
  });
}
