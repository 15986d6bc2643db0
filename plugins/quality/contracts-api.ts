/** The quality plugin's contracts: routes and CLI. */
import type { PluginContext } from '../../sdk/index.js';
import { StoredOutcomeMasker } from './assertions.js';
import { contractHistory, hasBlockingFailure, loadContracts, runContracts } from './contracts.js';
import { contractRunSchema } from './route-schemas.js';
import { printContractRun } from './cli-output.js';
import { visibleTo } from './relations.js';

/** The contracts routes. */
export function registerContractRoutes(ctx: PluginContext): void {
  ctx.route({
    method: 'GET',
    url: '/api/contracts',
    permission: 'read',
    summary: 'Contracts discovered in contracts/*.yml, and the files or entries that are invalid',
    tags: ['quality'],
    handler: (req) => {
      const loaded = loadContracts(ctx);
      return { ...loaded, contracts: visibleTo(req.caller, loaded.contracts, (c) => c.model) };
    },
  });

  ctx.route<unknown, { contract?: string }>({
    method: 'POST',
    url: '/api/contracts/run',
    permission: 'execute',
    summary: 'Runs every contract (or those of one contract name or model) and records the results',
    tags: ['quality'],
    schema: {
      querystring: { type: 'object', additionalProperties: false, properties: { contract: { type: 'string', minLength: 1, description: 'Contract name or model' } } },
      response: { 200: contractRunSchema },
    },
    handler: async (req) => runContracts(ctx, req.query.contract ?? null),
  });

  ctx.route<unknown, { limit: number; contract?: string }>({
    method: 'GET',
    url: '/api/contracts/history',
    permission: 'read',
    summary: 'Past contract results, newest first',
    tags: ['quality'],
    schema: {
      querystring: {
        type: 'object',
        additionalProperties: false,
        properties: { limit: { type: 'integer', minimum: 1, maximum: 10000, default: 100 }, contract: { type: 'string', minLength: 1, description: 'Contract name or model' } },
      },
    },
    handler: async (req) => {
      const history = visibleTo(req.caller, await contractHistory(ctx, { filter: req.query.contract ?? null, limit: req.query.limit ?? 100 }), (h) => h.model);
      const masker = new StoredOutcomeMasker(ctx, req.caller);
      for (const h of history) if (Array.isArray(h.detail)) await masker.mask(h.model, h.detail as Array<{ expression: string; detail: Record<string, unknown> }>);
      return { history };
    },
  });
}

/** The `dp contracts` command. */
export function registerContractCommand(ctx: PluginContext): void {
  ctx.command('contracts', async (args, io) => {
    const filter = (args.name as string | undefined) ?? null;
    if (args.history) {
      const history = await contractHistory(ctx, { filter, limit: Number(args.limit ?? 50) });
      if (io.wantsJson) io.json(history);
      else io.table(history.map((h) => ({ checked_at: h.checked_at, contract: h.contract_name, model: h.model, severity: h.severity, result: h.passed ? 'pass' : 'FAIL', error: h.error ?? '' })));
      return 0;
    }
    io.progress('Running contracts…');
    const run = await runContracts(ctx, filter);
    if (io.wantsJson) io.json(run);
    else printContractRun(io, run);
    return hasBlockingFailure(run) || run.errors.length > 0 ? 1 : 0;
  });
}
