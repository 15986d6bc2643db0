/** HTTP routes of the models plugin (declared in plugin.json with the same permissions); the work behind them is imported when a route runs (see commands.ts). */
import { withBuildState } from './on-target.js';
import {
  clientGone,
  errorMessage,
  errorTextsFor,
  notFound,
  qualified,
  QUERY_PURPOSES,
  requirePermission,
  VALUES_HIDDEN_FROM,
  type Caller,
  type JsonSchema,
  type PluginContext,
} from '../../sdk/index.js';
import { findModel, keyOf, downstreamOf } from './dag.js';
import { MAX_NAME_LENGTH } from './files.js';
import type { ModelsEngine } from './service.js';
import { lastModelRun, readCatalog, runDetail } from './state.js';
import { statementBody } from './sqltext.js';

const NAME = { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]*$', maxLength: MAX_NAME_LENGTH };
const TARGETS = { type: ['array', 'null'], items: { type: 'string', minLength: 1 }, description: 'Model selectors: name, schema.name, +name, name+; null or empty for all' };
const EMPTY_BODY: JsonSchema = { type: ['object', 'null'], additionalProperties: false, properties: {} };

const modelItem: JsonSchema = {
  type: 'object',
  properties: {
    name: { type: 'string' },
    schema: { type: 'string' },
    full_name: { type: 'string' },
    materialized: { type: 'string', enum: ['table', 'view', 'incremental', 'scd2'] },
    kind: { type: 'string', enum: ['table', 'view'] },
    depends_on: { type: 'array', items: { type: 'string' } },
    path: { type: 'string' },
    content_hash: { type: 'string' },
  },
};

const SAMPLE_ROWS = 20;

export function registerRoutes(ctx: PluginContext, engine: ModelsEngine): void {
  // Build errors quote the values they failed on: every answer that carries them passes through
  // the sdk's one redaction for the caller (docs/security.md "Error texts").
  const valuesHidden = ctx.hook(VALUES_HIDDEN_FROM);
  const shownTo = async <T>(req: { caller: Caller }, value: T | Promise<T>): Promise<T> => (await errorTextsFor(valuesHidden, req.caller)).fields(await value);

  ctx.route({
    method: 'GET',
    url: '/api/models',
    permission: 'read',
    summary: 'List models with their dependencies',
    schema: { response: { 200: { type: 'array', items: modelItem } } },
    handler: async () =>
      (await engine.list()).map(({ name, schema, full_name, materialized, kind, depends_on, path, content_hash }) => ({ name, schema, full_name, materialized, kind, depends_on, path, content_hash })),
  });

  ctx.route({
    method: 'GET',
    url: '/api/dag',
    permission: 'read',
    summary: "The models-only DAG: nodes (with whether the environment's target holds each model, and its rows) and edges",
    handler: async () => {
      const dag = await engine.dag();
      return { ...dag, nodes: await withBuildState(ctx, dag.nodes) };
    },
  });

  ctx.route<{ targets?: string[] | null; force?: boolean; full_refresh?: boolean }>({
    method: 'POST',
    url: '/api/transform',
    permission: 'execute',
    summary: 'Build models in dependency order',
    schema: {
      body: {
        type: ['object', 'null'],
        additionalProperties: false,
        properties: {
          targets: TARGETS,
          force: { type: 'boolean', default: false },
          full_refresh: { type: 'boolean', default: false, description: 'Rebuild incremental and scd2 models from scratch' },
        },
      },
    },
    handler: async (req) =>
      shownTo(req, engine.transform({ targets: req.body?.targets ?? null, force: req.body?.force ?? false, fullRefresh: req.body?.full_refresh ?? false, trigger: 'api' })),
  });

  ctx.route({
    method: 'GET',
    url: '/api/validate',
    permission: 'read',
    summary: 'Every problem of the project (models, unit tests, contracts, metrics, streams) with file and line, without building anything',
    handler: async () => (await import('./edit-loop.js')).validateProject(engine, await engine.extensions.validatorsLoaded()),
  });

  ctx.route({
    method: 'GET',
    url: '/api/models/status',
    permission: 'read',
    summary: 'Models and seeds changed since their last build, and models stale downstream',
    handler: async (req) => shownTo(req, (await import('./edit-loop.js')).projectStatus(ctx, engine)),
  });

  ctx.route({
    method: 'GET',
    url: '/api/unit-tests',
    permission: 'read',
    summary: 'Model unit tests (tests/unit/*.yml) and the files that could not be read',
    handler: async () => {
      const { tests, errors } = (await import('./unit-tests.js')).discoverUnitTests(ctx);
      return {
        tests: tests.map((t) => ({ name: t.name, model: t.model, description: t.description ?? null, file: t.file, line: t.line, inputs: t.given.map((g) => g.input) })),
        errors,
      };
    },
  });

  ctx.route<{ model?: string; names?: string[] } | null>({
    method: 'POST',
    url: '/api/unit-tests/run',
    permission: 'execute',
    summary: 'Run model unit tests on throwaway in-memory databases (all, one model, or by name)',
    schema: {
      body: {
        type: ['object', 'null'],
        additionalProperties: false,
        properties: { model: { type: 'string', minLength: 1 }, names: { type: 'array', items: { type: 'string', minLength: 1 } } },
      },
    },
    handler: async (req) => (await import('./unit-tests.js')).runUnitTests(ctx, engine, { model: req.body?.model ?? null, names: req.body?.names ?? null }),
  });

  ctx.route<unknown, { limit?: number }>({
    method: 'GET',
    url: '/api/transform/runs',
    permission: 'read',
    summary: 'Recent transform runs, newest first',
    schema: { querystring: { type: 'object', additionalProperties: false, properties: { limit: { type: 'integer', minimum: 1, maximum: 1000, default: 20 } } } },
    handler: (req) => shownTo(req, engine.runs(req.query.limit ?? 20)),
  });

  ctx.route<unknown, unknown, { run_id: string }>({
    method: 'GET',
    url: '/api/transform/runs/:run_id',
    permission: 'read',
    summary: "One transform run with each model's step: status, time and error",
    schema: { params: { type: 'object', required: ['run_id'], properties: { run_id: { type: 'string', minLength: 1, maxLength: 200 } } } },
    handler: async (req) => {
      const run = await runDetail(ctx, req.params.run_id);
      if (!run) throw notFound('transform_run_not_found', `No transform run '${req.params.run_id}'`, { run_id: req.params.run_id });
      return shownTo(req, run);
    },
  });

  const modelParams: JsonSchema = { type: 'object', required: ['model_name'], properties: { model_name: { type: 'string', minLength: 1 } } };
  const modelNamed = async (name: string) => {
    const m = findModel(await engine.graph(), name);
    if (!m) throw notFound('model_not_found', `No model named '${name}'`, { model: name });
    return m;
  };

  ctx.route<unknown, unknown, { model_name: string }>({
    method: 'GET',
    url: '/api/models/:model_name/overview',
    permission: 'read',
    summary: "A model's build state (needs_rebuild after a version restore), its last build and run, and its table's rows",
    schema: { params: modelParams },
    handler: async (req) => {
      const m = await modelNamed(req.params.model_name);
      const [status, runs, catalog] = await Promise.all([(await import('./edit-loop.js')).projectStatus(ctx, engine), lastModelRun(ctx, m.info.full_name), readCatalog(ctx)]);
      const build = status.models.find((s) => s.model === m.info.full_name);
      // The rows of a built table, counted as the caller's read (a view's count would run its query).
      let rows: number | null = null;
      const relation = catalog.get(keyOf(m.info.full_name))?.kind ?? null;
      if (relation === 'table') {
        const counted = await ctx.queries.run({
          sql: `SELECT count(*) AS n FROM ${qualified(m.info.schema, m.info.name)}`,
          caller: req.caller,
          purpose: QUERY_PURPOSES.sample,
          table: { schema: m.info.schema, table: m.info.name },
        });
        rows = Number(counted.rows[0]?.[0] ?? 0);
      }
      return shownTo(req, {
        model: m.info.full_name,
        path: m.info.path,
        materialized: m.info.materialized,
        assertions: m.info.assertions,
        build_status: build?.status ?? 'new',
        build_reason: build?.reason ?? null,
        ...runs,
        // What the model's name holds in the database now: a page asks for its columns only when it exists.
        relation,
        rows,
      });
    },
  });

  ctx.route<{ sql?: string; limit?: number }, unknown, { model_name: string }>({
    method: 'POST',
    url: '/api/models/:model_name/preview',
    permission: 'read',
    summary: "Runs a model's SELECT (the saved file, or the editor's unsaved text) with a limit, as the caller's read-only query: rows, columns and the SQL that ran",
    schema: {
      params: modelParams,
      body: {
        type: ['object', 'null'],
        additionalProperties: false,
        properties: {
          sql: { type: 'string', minLength: 1, maxLength: 1_000_000, description: "The model file's text as edited (directives included); default: the saved file" },
          limit: { type: 'integer', minimum: 1, maximum: 1000, default: 100 },
        },
      },
    },
    handler: async (req, reply) => {
      const m = await modelNamed(req.params.model_name);
      // The statement a build embeds in its CREATE ... AS: directives are comments, the last `;` goes.
      const compiled = statementBody(req.body?.sql ?? m.info.sql);
      const started = performance.now();
      const result = await ctx.queries.run({ sql: compiled, limit: req.body?.limit ?? 100, caller: req.caller, purpose: QUERY_PURPOSES.query, signal: clientGone(reply) });
      return { model: m.info.full_name, compiled_sql: compiled, ...result, duration_ms: Math.round(performance.now() - started) };
    },
  });

  ctx.route<{ name: string; schema_name: string; materialized: 'table' | 'view'; sql: string }>({
    method: 'POST',
    url: '/api/models/create',
    permission: 'write',
    summary: 'Create a model file transform/<schema_name>/<name>.sql with its @config directive',
    schema: {
      body: {
        type: 'object',
        required: ['name', 'schema_name', 'sql'],
        additionalProperties: false,
        properties: {
          name: NAME,
          schema_name: NAME,
          materialized: { type: 'string', enum: ['table', 'view'], default: 'table' },
          sql: { type: 'string', minLength: 1 },
        },
      },
    },
    handler: async (req, reply) => {
      const written = await (await import('./promote.js')).writeModel(ctx, engine, { name: req.body.name, schema: req.body.schema_name, materialized: req.body.materialized, sql: req.body.sql });
      reply.code(201);
      return { created: true, ...written, materialized: req.body.materialized };
    },
  });

  ctx.route<unknown, unknown, { model_name: string }>({
    method: 'GET',
    url: '/api/models/:model_name/notebook-view',
    permission: 'read',
    summary: "A model's SQL, sample rows (masked per policy), column lineage, upstream and downstream",
    schema: { params: { type: 'object', required: ['model_name'], properties: { model_name: { type: 'string', minLength: 1 } } } },
    handler: async (req) => {
      const graph = await engine.graph();
      const m = findModel(graph, req.params.model_name);
      if (!m) throw notFound('model_not_found', `No model named '${req.params.model_name}'`, { model: req.params.model_name });
      const key = keyOf(m.info.full_name);
      const catalog = await readCatalog(ctx);
      let sample: { columns: string[]; column_types: string[]; rows: unknown[][]; notes?: string[] } | null = null;
      let sampleError: string | null = null;
      if (catalog.has(key)) {
        try {
          const r = await ctx.queries.run({
            sql: `SELECT * FROM ${qualified(m.info.schema, m.info.name)}`,
            limit: SAMPLE_ROWS,
            caller: req.caller,
            purpose: 'sample',
            table: { schema: m.info.schema, table: m.info.name },
          });
          sample = { columns: r.columns, column_types: r.column_types, rows: r.rows, ...(r.notes?.length ? { notes: r.notes } : {}) };
        } catch (e) {
          sampleError = errorMessage(e);
        }
      } else sampleError = `${m.info.full_name} is not built yet`;
      // Sections other plugins contribute through models.view; `lineage` is always answered.
      const sections: Record<string, unknown> = { lineage: null, lineage_error: 'The lineage plugin is disabled' };
      for (const [name, section] of await engine.extensions.sectionsLoaded()) {
        try {
          sections[name] = await section.render(m.info);
          sections[`${name}_error`] = null;
        } catch (e) {
          sections[name] = null;
          sections[`${name}_error`] = errorMessage(e);
        }
      }
      return {
        model: m.info.full_name,
        name: m.info.name,
        schema: m.info.schema,
        materialized: m.info.materialized,
        path: m.info.path,
        sql: m.info.sql,
        assertions: m.info.assertions,
        depends_on: m.info.depends_on,
        upstream: m.upstream,
        downstream: (graph.downstream.get(key) ?? []).map((k) => graph.byKey.get(k)!.info.full_name),
        all_downstream: [...downstreamOf(graph, key)].map((k) => graph.byKey.get(k)!.info.full_name),
        built: catalog.has(key),
        sample,
        sample_error: sampleError,
        ...sections,
      };
    },
  });

  ctx.route({
    method: 'POST',
    url: '/api/check',
    permission: 'execute',
    summary: 'Validate models, run inline assertions and contracts',
    schema: { body: EMPTY_BODY },
    handler: async (req) => shownTo(req, (await import('./check.js')).runCheck(ctx, engine)),
  });

  ctx.route<{ targets?: string[] | null; target_schema?: string | null; full?: boolean }>({
    method: 'POST',
    url: '/api/diff',
    permission: 'execute',
    summary: "Compare each model's SQL output with its materialized table",
    schema: {
      body: {
        type: ['object', 'null'],
        additionalProperties: false,
        properties: {
          targets: TARGETS,
          target_schema: { type: ['string', 'null'], pattern: '^[A-Za-z_][A-Za-z0-9_]*$' },
          full: { type: 'boolean', default: false },
          against: { type: ['string', 'null'], description: 'Only models whose files differ between this git branch and HEAD' },
          against_db: { type: ['string', 'null'], maxLength: 1024, description: 'Compare with another build: a DuckDB file inside the project (project-relative), attached read-only' },
        },
      },
    },
    handler: async (req) => (await import('./diff.js')).runDiff(ctx, engine, { ...(req.body ?? {}) }),
  });

  ctx.route<{ fix?: boolean }>({
    method: 'POST',
    url: '/api/lint',
    permission: 'read',
    summary: 'Lint model SQL; fix=true rewrites files (needs the write permission)',
    schema: { body: { type: ['object', 'null'], additionalProperties: false, properties: { fix: { type: 'boolean', default: false } } } },
    handler: async (req) => {
      const fix = Boolean(req.body?.fix);
      if (fix) requirePermission(req.caller, 'write');
      return (await import('./lint.js')).runLint(ctx, engine, { fix });
    },
  });

  ctx.route({
    method: 'GET',
    url: '/api/seeds',
    permission: 'read',
    summary: 'Seed files with their names, schemas and paths',
    handler: () => engine.seeds(),
  });

  ctx.route<{ force?: boolean; schema_name?: string | null; targets?: string[] | null }>({
    method: 'POST',
    url: '/api/seeds',
    permission: 'execute',
    summary: 'Load seed CSV files into tables',
    schema: {
      body: {
        type: ['object', 'null'],
        additionalProperties: false,
        properties: {
          force: { type: 'boolean', default: false },
          schema_name: { type: ['string', 'null'], pattern: '^[A-Za-z_][A-Za-z0-9_]*$' },
          targets: { type: ['array', 'null'], items: { type: 'string' } },
        },
      },
    },
    handler: async (req) => {
      const results = await engine.loadSeeds({ force: req.body?.force ?? false, schema: req.body?.schema_name ?? undefined, targets: req.body?.targets ?? null });
      return shownTo(req, { results, status: results.some((r) => r.status === 'error') ? 'error' : 'success' });
    },
  });
}
