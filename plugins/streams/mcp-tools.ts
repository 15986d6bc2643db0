/** The streams plugin's MCP tool (`agents.mcp`): the recent stream and script runs of `_service.run_history`. */
import { AGENT_LIST_MAX_ITEMS, type AgentTool, type AgentToolKit, type PluginContext } from '../../sdk/index.js';

export function streamTools(ctx: PluginContext, kit: AgentToolKit): AgentTool[] {
  const { z } = kit;
  return [
    {
      name: 'run_history',
      description:
        'Recent stream and script runs, newest first: run id, kind (stream or script), name, trigger, status, start, duration, error. Use it to see whether the pipelines ran and what failed.',
      input: {
        limit: z.number().int().min(1).max(AGENT_LIST_MAX_ITEMS).optional().describe('Runs to return (default 20)'),
        name: z.string().min(1).optional().describe('Only runs of this stream or script'),
      },
      permission: 'read',
      run: async (args) => {
        // The table exists once the database migrated; an empty list answers a project that never ran.
        if (!(await ctx.db.catalog.exists('_service', 'run_history'))) return { runs: [], note: 'no run history: no stream or script has run' };
        const params: unknown[] = [args.limit ?? 20];
        const where = args.name ? `WHERE name = $${params.push(args.name)}` : '';
        const runs = await ctx.db.all(
          `SELECT run_id, kind, name, trigger, status, strftime(started_at, '%Y-%m-%dT%H:%M:%SZ') AS started_at, duration_ms, error
             FROM _service.run_history ${where} ORDER BY started_at DESC, run_id DESC LIMIT $1`,
          params,
        );
        return { runs };
      },
    },
  ];
}
