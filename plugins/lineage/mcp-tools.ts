/** The lineage plugin's MCP tools (`agents.mcp`): column-level lineage of a model and the impact of a change. */
import { cappedList, LINEAGE_SERVICE, relationHiddenFrom, visibleRelations, type AgentTool, type AgentToolKit, type PluginContext } from '../../sdk/index.js';

export function lineageTools(ctx: PluginContext, kit: AgentToolKit): AgentTool[] {
  const { z, caller } = kit;
  const lineage = ctx.services.get(LINEAGE_SERVICE);
  const visible = (relations: string[]) => visibleRelations(relations, caller);
  return [
    {
      name: 'model_lineage',
      description:
        "Column-level lineage of one model: for each output column, the upstream columns (source_table, source_column) its value is computed from; an empty list means computed from constants. Also the model's upstream relations.",
      input: { name: z.string().min(1).describe('Model as schema.name or bare name') },
      permission: 'read',
      run: async (args) => {
        const l = await lineage.lineage(String(args.name));
        const columns = Object.fromEntries(Object.entries(l.columns).map(([c, sources]) => [c, sources.filter((s) => !relationHiddenFrom(s.source_table, caller))]));
        return { model: l.model, depends_on: visible(l.depends_on), columns };
      },
    },
    {
      name: 'impact',
      description:
        'What a change to a model (or a seed or source that models read), or to one of its columns, reaches downstream: every downstream model (nearest first) and the downstream columns derived from it. Use before changing or dropping a column.',
      input: {
        name: z.string().min(1).describe('Model, seed or source relation as schema.name or bare name'),
        column: z.string().min(1).optional().describe('Only the impact of this column'),
      },
      permission: 'read',
      run: async (args) => {
        const r = await lineage.impact(String(args.name), args.column);
        const { items, note } = cappedList(r.affected_columns);
        return { model: r.model, ...(r.column ? { column: r.column } : {}), downstream_models: r.downstream_models, affected_columns: items, ...(note ? { note } : {}) };
      },
    },
  ];
}
