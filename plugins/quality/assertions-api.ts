/** The quality plugin's inline assertion results: routes and CLI. */
import type { PluginContext } from '../../sdk/index.js';
import { evaluateAssertions, lastExpressions, listAssertionResults, StoredOutcomeMasker, summarizeOutcome } from './assertions.js';
import { limitQuery, modelParams } from './route-schemas.js';
import { requireRelation } from './known-models.js';
import { checkReader } from './reader.js';
import { assertVisible, resolveModel, visibleTo } from './relations.js';

/** The inline assertion results routes. */
export function registerAssertionRoutes(ctx: PluginContext): void {
  ctx.route<unknown, { limit: number }>({
    method: 'GET',
    url: '/api/assertions',
    permission: 'read',
    summary: 'Recent inline assertion results, newest first',
    tags: ['quality'],
    schema: { querystring: limitQuery(100) },
    handler: async (req) => {
      const results = visibleTo(req.caller, await listAssertionResults(ctx, { limit: req.query.limit ?? 100 }), (r) => r.model);
      const masker = new StoredOutcomeMasker(ctx, req.caller);
      for (const r of results) await masker.mask(r.model, [r]);
      return { results };
    },
  });

  ctx.route<unknown, { limit: number }, { model_name: string }>({
    method: 'GET',
    url: '/api/assertions/:model_name',
    permission: 'read',
    summary: 'Inline assertion results of one model, newest first',
    tags: ['quality'],
    schema: { params: modelParams, querystring: limitQuery(100) },
    handler: async (req) => {
      const rel = await resolveModel(ctx, req.params.model_name);
      assertVisible(req.caller, rel.schema, rel.table, 'model_not_found');
      const results = await listAssertionResults(ctx, { model: rel.full, limit: req.query.limit ?? 100 });
      await new StoredOutcomeMasker(ctx, req.caller).mask(rel.full, results);
      return { model: rel.full, results };
    },
  });

  ctx.route<unknown, unknown, { model_name: string }>({
    method: 'GET',
    url: '/api/quality/assertion-debug/:model_name',
    permission: 'read',
    summary: "Re-runs a model's inline assertions now, with full diagnostics and the SQL that lists offending rows",
    tags: ['quality'],
    schema: { params: modelParams },
    handler: async (req) => {
      const rel = await resolveModel(ctx, req.params.model_name);
      assertVisible(req.caller, rel.schema, rel.table, 'model_not_found');
      const reader = checkReader(ctx, `assertions on ${rel.full}`);
      await requireRelation(ctx, rel, (schema, table) => reader.exists(schema, table));
      const expressions = rel.assertions ?? (await lastExpressions(ctx, rel.full));
      const outcomes = await evaluateAssertions(ctx, rel.full, expressions, { audience: req.caller, full: true });
      const failed = outcomes.filter((o) => !o.passed).length;
      return { model: rel.full, total: outcomes.length, passed: outcomes.length - failed, failed, assertions: outcomes };
    },
  });
}

/** The `dp assertions` command. */
export function registerAssertionCommand(ctx: PluginContext): void {
  ctx.command('assertions', async (args, io) => {
    const model = args.model ? (await resolveModel(ctx, String(args.model))).full : undefined;
    const results = await listAssertionResults(ctx, { model, limit: Number(args.limit ?? 100) });
    if (io.wantsJson) io.json(results);
    else io.table(results.map((r) => ({ checked_at: r.checked_at, model: r.model, assertion: r.expression, result: r.passed ? 'pass' : 'FAIL', detail: summarizeOutcome(r) })));
    return 0;
  });
}
