/** HTTP routes of the semantic layer (SPEC "Semantic layer"). */
import { clientGone, METRIC_GRAINS, withEnvReferences, type JsonSchema, type MetricQueryRequest, type PluginContext, type SemanticService } from '../../sdk/index.js';

/** A copy with every string shown as project files write it: no `.env` value in a response (docs/security.md). */
function asWritten<T>(value: T, env: Readonly<Record<string, string>>): T {
  if (typeof value === 'string') return withEnvReferences(value, env) as T;
  if (Array.isArray(value)) return value.map((v) => asWritten(v, env)) as T;
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, asWritten(v, env)])) as T;
  return value;
}

const metricSchema: JsonSchema = {
  type: 'object',
  properties: {
    name: { type: 'string' },
    model: { type: 'string' },
    measure: { type: 'string' },
    description: { type: 'string' },
    dimensions: { type: 'array', items: { type: 'string' } },
    time_dimension: { type: ['string', 'null'] },
    filters: { type: 'array', items: { type: 'string' } },
    file: { type: 'string' },
  },
};

const loadErrorSchema: JsonSchema = {
  type: 'object',
  properties: { file: { type: 'string' }, metric: { type: ['string', 'null'] }, index: { type: 'integer' }, line: { type: 'integer' }, reason: { type: 'string' } },
};

/** The request of compile and query (SPEC: `{metric, dimensions, grain, start, end, limit}`). */
const requestSchema: JsonSchema = {
  type: 'object',
  required: ['metric'],
  additionalProperties: false,
  properties: {
    metric: { type: 'string', minLength: 1 },
    dimensions: { type: 'array', items: { type: 'string', minLength: 1 }, maxItems: 64, default: [] },
    grain: { type: ['string', 'null'], description: `One of ${METRIC_GRAINS.join(', ')}` },
    start: { type: ['string', 'null'], description: 'Inclusive lower bound on the time dimension (ISO date or timestamp), bound as $start' },
    end: { type: ['string', 'null'], description: 'Exclusive upper bound on the time dimension (ISO date or timestamp), bound as $end' },
    limit: { type: 'integer', minimum: 1, description: 'Rows to return (the query default when absent)' },
  },
};

const compiledSchema: JsonSchema = {
  type: 'object',
  properties: { metric: { type: 'string' }, sql: { type: 'string' }, params: { type: 'object', additionalProperties: { type: 'string' } } },
};

export function registerRoutes(ctx: PluginContext, service: SemanticService): void {
  ctx.route({
    method: 'GET',
    url: '/api/semantic/metrics',
    permission: 'read',
    summary: 'Metric definitions from metrics/*.yml, and the definitions that did not load (file, metric, reason)',
    tags: ['semantic'],
    schema: { response: { 200: { type: 'object', properties: { metrics: { type: 'array', items: metricSchema }, errors: { type: 'array', items: loadErrorSchema } } } } },
    handler: async () => asWritten(await service.metrics(), ctx.env),
  });

  ctx.route<MetricQueryRequest>({
    method: 'POST',
    url: '/api/semantic/compile',
    permission: 'read',
    summary: 'The SQL of a metric query, without running it',
    tags: ['semantic'],
    schema: { body: requestSchema, response: { 200: compiledSchema } },
    handler: async (req) => {
      const compiled = await service.compile(req.body);
      return { ...compiled, sql: withEnvReferences(compiled.sql, ctx.env) };
    },
  });

  ctx.route<MetricQueryRequest>({
    method: 'POST',
    url: '/api/semantic/query',
    permission: 'read',
    summary: 'Runs a metric query through the guarded runner (masking, read-only validation, role timeout): sql, columns, rows',
    tags: ['semantic'],
    schema: {
      body: requestSchema,
      response: {
        200: {
          type: 'object',
          properties: {
            ...(compiledSchema.properties as object),
            columns: { type: 'array', items: { type: 'string' } },
            column_types: { type: 'array', items: { type: 'string' } },
            rows: { type: 'array', items: { type: 'array' } },
            truncated: { type: 'boolean' },
          },
        },
      },
    },
    handler: async (req, reply) => {
      // The client going away stops its query (as POST /api/query does).
      const result = await service.query(req.body, req.caller, clientGone(reply));
      return { ...result, sql: withEnvReferences(result.sql, ctx.env) };
    },
  });
}
