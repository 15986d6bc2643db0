import {
  AGENT_CONTEXT,
  AGENT_MCP,
  CATALOG_DOCS,
  definePlugin,
  LINEAGE_SERVICE,
  MODEL_VIEW,
  MODELS_SERVICE,
  notFound,
  type JsonSchema,
  type LineageService,
  type ModelLineage,
  type ModelsService,
  type PluginContext,
  type Role,
  type SourceConfig,
} from '../../sdk/index.js';
import { STAR } from './columns.js';
import { EXPOSURES_CONFIG } from './config.js';
import { lineageDiskCache } from './disk-cache.js';
import { LineageEngine } from './engine.js';
import { buildFullDag, hiddenRelation, IMPORT_SCHEMA, readIngestScripts, withoutInternal, withVarReferences } from './full-dag.js';
import { impactOf, type ImpactRecord } from './impact.js';

const sourceSchema: JsonSchema = {
  type: 'object',
  properties: { source_table: { type: 'string' }, source_column: { type: 'string' } },
};

const lineageSchema: JsonSchema = {
  type: 'object',
  properties: {
    model: { type: 'string' },
    columns: { type: 'object', additionalProperties: { type: 'array', items: sourceSchema } },
    depends_on: { type: 'array', items: { type: 'string' } },
    method: {
      type: 'string',
      enum: ['parser', 'regex', 'not_analysed'],
      description: 'parser: DuckDB parse tree; regex: text fallback for SQL the parser rejects; not_analysed: a model written natively for a target (dialect=clickhouse), its columns not traced',
    },
    reads_known: { type: 'boolean', description: 'With not_analysed: false when even the relations it reads are only what @depends_on declares' },
  },
};

const impactSchema: JsonSchema = {
  type: 'object',
  properties: {
    model: { type: 'string' },
    column: { type: 'string' },
    downstream_models: { type: 'array', items: { type: 'string' } },
    affected_columns: { type: 'array', items: { type: 'object', properties: { model: { type: 'string' }, column: { type: 'string' } } } },
    impact_chain: { type: 'object', additionalProperties: { type: 'array', items: { type: 'string' } } },
  },
};

const dagSchema: JsonSchema = {
  type: 'object',
  properties: {
    nodes: {
      type: 'array',
      items: { type: 'object', additionalProperties: true, properties: { id: { type: 'string' }, type: { type: 'string' }, label: { type: 'string' } } },
    },
    edges: { type: 'array', items: { type: 'object', properties: { source: { type: 'string' }, target: { type: 'string' } } } },
  },
};

const modelParams: JsonSchema = {
  type: 'object',
  required: ['model_name'],
  properties: { model_name: { type: 'string', minLength: 1, description: 'Model as schema.name or bare name' } },
};

/**
 * Impact of a model, or of any relation models read (a seed, a source): the root is resolved
 * like a model name first, then among the relations in models' depends_on.
 */
async function impact(ctx: PluginContext, engine: LineageEngine, name: string, column: string | undefined): Promise<ImpactRecord> {
  const all = await engine.all();
  const model = await ctx.services.get(MODELS_SERVICE).get(name);
  let root: string;
  let columns: string[] | null;
  if (model) {
    root = model.full_name;
    columns = Object.keys(all.find((l) => l.model === model.full_name)?.columns ?? {});
  } else {
    const relations = [...new Set(all.flatMap((l) => l.depends_on))];
    const exact = relations.find((r) => r.toLowerCase() === name.toLowerCase());
    const bare = relations.filter((r) => r.toLowerCase().endsWith('.' + name.toLowerCase()));
    const found = exact ?? (bare.length === 1 ? bare[0] : undefined);
    if (!found) throw notFound('model_not_found', `No model named '${name}' (nor a seed or source that models read)`, { model: name });
    root = found;
    const dot = found.lastIndexOf('.');
    const live = await ctx.db.catalog.columns(found.slice(0, dot), found.slice(dot + 1));
    columns = live.length ? live.map((c) => c.name) : null;
  }
  let spelled = column;
  if (column !== undefined && columns && !columns.includes(STAR)) {
    spelled = columns.find((c) => c.toLowerCase() === column.toLowerCase());
    if (spelled === undefined) {
      throw notFound('column_not_found', `'${root}' has no column '${column}'`, { model: root, column, columns });
    }
  }
  return impactOf(root, spelled, all);
}

/** A source declared without `tables:` stands for every table and view of its schema in the database. */
async function withSchemaTables(ctx: PluginContext, sources: SourceConfig[]): Promise<SourceConfig[]> {
  if (!sources.some((s) => s.tables.length === 0)) return sources;
  const found = (await ctx.db.catalog.relations({ includeInternal: true })).map((r) => ({ schema_name: r.schema, name: r.name }));
  return sources.map((s) => (s.tables.length ? s : { ...s, tables: found.filter((f) => f.schema_name === s.schema).map((f) => ({ name: f.name })) }));
}

async function fullDag(ctx: PluginContext, models: ModelsService) {
  const relations = await ctx.db.catalog.relations({ includeInternal: true });
  const importTables = relations.filter((r) => r.schema === IMPORT_SCHEMA).map((r) => ({ table_name: r.name }));
  // Imports into any schema, as the connectors plugin records them (when it is installed), whose tables exist.
  const tables = new Set(relations.filter((r) => r.kind === 'table').map((r) => `${r.schema}\u0000${r.name}`));
  const recorded = (
    await ctx.db
      .all<{ schema_name: string; table_name: string }>('SELECT DISTINCT schema_name, table_name FROM _service.imports WHERE schema_name <> $1 ORDER BY 1, 2', [IMPORT_SCHEMA])
      .catch(() => [] as Array<{ schema_name: string; table_name: string }>)
  )
    .filter((i) => tables.has(`${i.schema_name}\u0000${i.table_name}`))
    .map((i) => ({ name: `${i.schema_name}.${i.table_name}` }));
  return buildFullDag({
    models: await models.list(),
    seeds: await models.seeds(),
    sources: await withSchemaTables(ctx, models.sources()),
    exposures: ctx.config(EXPOSURES_CONFIG),
    ingestScripts: readIngestScripts(ctx.project),
    importTables: [...importTables.map((r) => `${IMPORT_SCHEMA}.${r.table_name}`), ...recorded.map((r) => r.name)],
  });
}

/** A model's lineage without the relations hidden from the role (`_masking` always, `_service` unless admin). */
function withoutInternalSources(l: ModelLineage, role: Role): ModelLineage {
  const columns = Object.fromEntries(Object.entries(l.columns).map(([c, sources]) => [c, sources.filter((x) => !hiddenRelation(x.source_table, role))]));
  return { ...l, columns, depends_on: l.depends_on.filter((d) => !hiddenRelation(d, role)) };
}

function formatSources(sources: ModelLineage['columns'][string]): string {
  return sources.length ? sources.map((s) => `${s.source_table}.${s.source_column}`).join(', ') : '(computed)';
}

export default definePlugin({
  config: [EXPOSURES_CONFIG],
  setup(ctx) {
    // MCP tools (model_lineage, impact), loaded with the first MCP server.
    ctx.extend(AGENT_MCP, { tools: async (kit) => (await import('./mcp-tools.js')).lineageTools(ctx, kit) });
    const models = () => ctx.services.get(MODELS_SERVICE);
    const disk = lineageDiskCache(ctx, ctx.log);
    const engine = new LineageEngine(ctx.db, models, ctx.log, disk);
    ctx.onStop(() => disk.flush());
    const service: LineageService = {
      lineage: (model) => engine.one(model),
      all: () => engine.all(),
      exposures: () => ctx.config(EXPOSURES_CONFIG),
      impact: (model, column) => impact(ctx, engine, model, column),
    };
    ctx.services.provide(LINEAGE_SERVICE, service);
    ctx.extend(MODEL_VIEW, { section: 'lineage', render: (model) => engine.one(model.full_name) });
    const columnLineage = async (model: string) => (await engine.one(model)).columns;
    // The catalog's column lineage in the generated docs, and its exposures (this plugin owns `exposures:`).
    ctx.extend(CATALOG_DOCS, { columnLineage, exposures: service.exposures });
    ctx.extend(AGENT_CONTEXT, { columnLineage });

    ctx.route({
      method: 'GET',
      url: '/api/lineage',
      permission: 'read',
      summary: 'Column lineage of every model',
      tags: ['lineage'],
      schema: { response: { 200: { type: 'array', items: lineageSchema } } },
      handler: async (req) => {
        const all = await engine.all();
        return all.filter((l) => !hiddenRelation(l.model, req.caller.role)).map((l) => withoutInternalSources(l, req.caller.role));
      },
    });

    ctx.route<unknown, unknown, { model_name: string }>({
      method: 'GET',
      url: '/api/lineage/:model_name',
      permission: 'read',
      summary: 'Column lineage of one model: each output column and the upstream columns it derives from',
      tags: ['lineage'],
      schema: { params: modelParams, response: { 200: lineageSchema } },
      handler: async (req) => {
        if (hiddenRelation(req.params.model_name, req.caller.role)) {
          throw notFound('model_not_found', `No model named '${req.params.model_name}'`, { model: req.params.model_name });
        }
        const one = await engine.one(req.params.model_name);
        return withoutInternalSources(one, req.caller.role);
      },
    });

    ctx.route<unknown, { column?: string }, { model_name: string }>({
      method: 'GET',
      url: '/api/impact/:model_name',
      permission: 'read',
      summary: 'Downstream models and columns affected by a change to a model or one of its columns',
      tags: ['lineage'],
      schema: {
        params: modelParams,
        querystring: { type: 'object', additionalProperties: false, properties: { column: { type: 'string', minLength: 1, description: 'Only the impact of this column' } } },
        response: { 200: impactSchema },
      },
      handler: (req) => {
        // dp's internal schema is invisible to non-admins, here as on every route.
        if (hiddenRelation(req.params.model_name, req.caller.role)) {
          throw notFound('model_not_found', `No model named '${req.params.model_name}' (nor a seed or source that models read)`, { model: req.params.model_name });
        }
        return impact(ctx, engine, req.params.model_name, req.query.column);
      },
    });

    ctx.route({
      method: 'GET',
      url: '/api/dag/full',
      permission: 'read',
      summary: 'Full DAG: sources, seeds, ingest scripts, imports, models (table/view) and exposures',
      tags: ['lineage'],
      schema: { response: { 200: dagSchema } },
      handler: async (req) => {
        const dag = withVarReferences(await fullDag(ctx, models()), ctx.config.asWritten(), ctx.env);
        return withoutInternal(dag, req.caller.role);
      },
    });

    ctx.command('lineage', async (args, io) => {
      const lineage = await engine.one(String(args.model));
      if (io.wantsJson) {
        io.json(lineage);
        return 0;
      }
      io.out(`${lineage.model}  (depends on: ${lineage.depends_on.join(', ') || 'nothing'}; method: ${lineage.method})`);
      io.table(
        Object.entries(lineage.columns).map(([column, sources]) => ({ column, sources: formatSources(sources) })),
        ['column', 'sources'],
      );
      return 0;
    });

    ctx.command('impact', async (args, io) => {
      const column = args.column === undefined ? undefined : String(args.column);
      const record = await impact(ctx, engine, String(args.model), column);
      if (io.wantsJson) {
        io.json(record);
        return 0;
      }
      io.out(`Impact of ${record.model}${column ? `.${record.column}` : ''}`);
      if (!record.downstream_models.length) {
        io.out('No downstream models.');
        return 0;
      }
      const lines: string[] = [];
      const walk = (m: string, depth: number, seen: Set<string>) => {
        for (const child of record.impact_chain[m] ?? []) {
          lines.push(`${'  '.repeat(depth)}└─ ${child}`);
          if (!seen.has(child)) walk(child, depth + 1, new Set([...seen, child]));
        }
      };
      lines.push(record.model);
      walk(record.model, 1, new Set([record.model]));
      for (const l of lines) io.out(l);
      io.out('');
      io.out(`Affected columns (${record.affected_columns.length}):`);
      io.table(record.affected_columns, ['model', 'column']);
      return 0;
    });
  },
});
