/** The models plugin's MCP tools (the agents plugin's `agents.mcp` extension point): list, read, check and build models. */
import { cappedList, MODELS_SERVICE, notFound, visibleRelations, type AgentTool, type AgentToolKit, type PluginContext } from '../../sdk/index.js';

export function modelTools(ctx: PluginContext, kit: AgentToolKit): AgentTool[] {
  const { z, caller } = kit;
  const models = ctx.services.get(MODELS_SERVICE);
  const visible = (relations: string[]) => visibleRelations(relations, caller);
  return [
    {
      name: 'list_models',
      description:
        'List the SQL models of the project (transform/<schema>/<name>.sql): full name, materialization, direct upstream relations, file path. ' +
        'Use get_model for the SQL and columns, model_lineage for column-level lineage.',
      input: {},
      permission: 'read',
      run: async () => {
        const list = (await models.list()).map((m) => ({ name: m.full_name, materialized: m.materialized, depends_on: visible(m.depends_on), path: m.path }));
        const { items, note } = cappedList(list);
        return { models: items, ...(note ? { note } : {}) };
      },
    },
    {
      name: 'get_model',
      description:
        'One model in full: its SQL, file path, materialization, upstream relations, inline assertions, config, and (when it is built) its columns with types, masked ones marked.',
      input: { name: z.string().min(1).describe('Model as schema.name or bare name') },
      permission: 'read',
      run: async (args) => {
        const name = String(args.name);
        const m = await models.get(name);
        if (!m) throw notFound('model_not_found', `No model named '${name}'; list_models gives the names`, { model: name });
        const columns = (await ctx.db.catalog.columns(m.schema, m.name)).map((c) => ({ name: c.name, type: c.type }));
        const masked = columns.length ? await kit.maskedColumns(m.schema, m.name) : new Set<string>();
        return {
          name: m.full_name,
          path: m.path,
          materialized: m.materialized,
          depends_on: visible(m.depends_on),
          assertions: m.assertions,
          config: m.config,
          built: columns.length > 0,
          columns: columns.map((c) => ({ ...c, ...(masked.has(c.name.toLowerCase()) ? { masked: true } : {}) })),
          sql: m.sql,
        };
      },
    },
    {
      name: 'check',
      description:
        'Run `dp check`: every model is validated (parses, dependencies resolve, SQL binds), then inline assertions and data contracts run. ' +
        'Returns status pass/fail and only what failed (models with errors, failed assertions, failed contracts), plus totals.',
      input: {},
      permission: 'execute',
      run: async () => {
        const report = await models.check();
        return {
          status: report.status,
          validation: {
            passed: report.validation.passed,
            failed: report.validation.failed,
            errors: report.validation.errors.map((e) => e.message),
            failing_models: report.validation.models.filter((m) => !m.valid).map((m) => ({ model: m.model, errors: m.errors })),
          },
          assertions: {
            evaluated: report.assertions.evaluated,
            total: report.assertions.total,
            failed: report.assertions.failed,
            failures: report.assertions.results.filter((r) => !r.passed).map((r) => ({ model: r.model, expression: r.expression })),
          },
          contracts: report.contracts.evaluated
            ? {
                evaluated: true,
                total: report.contracts.total,
                failed: report.contracts.failed,
                failures: (report.contracts.results ?? []).filter((r) => !r.passed).map((r) => ({ contract: r.contract_name, model: r.model, severity: r.severity, error: r.error })),
              }
            : { evaluated: false },
        };
      },
    },
    {
      name: 'run_transform',
      description:
        'Build models (`dp transform`): all of them, or the named ones; unchanged models are skipped unless force is true. ' +
        'Returns the run status and, per model, built/skipped/error with the error message. This changes the warehouse.',
      input: {
        models: z.array(z.string().min(1)).optional().describe('Models to build (schema.name or bare name); all when absent'),
        force: z.boolean().optional().describe('Rebuild even unchanged models'),
      },
      permission: 'execute',
      run: async (args) => {
        const summary = await models.transform({ targets: args.models?.length ? args.models : null, force: Boolean(args.force), trigger: 'mcp' });
        return {
          run_id: summary.run_id,
          status: summary.status,
          duration_ms: summary.duration_ms,
          results: summary.results.map((r) => ({ model: r.model, status: r.status, ...(r.error ? { error: r.error } : {}) })),
        };
      },
    },
  ];
}
