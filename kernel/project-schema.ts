/**
 * The kernel's part of project.yml. Every other top-level key belongs to the plugin whose
 * manifest lists it under `contributes.configuration` and is validated against that plugin's
 * schema at boot (kernel/app.ts); a key nobody declares is refused there.
 */
export const KERNEL_KEYS = ['name', 'database', 'environments', 'plugins', 'query', 'auth', 'server'] as const;

/**
 * Keys the specification names (docs/decisions.md "Project configuration") whose plugin does not exist yet: the kernel validates and holds them
 * until that plugin lands and declares the key (then it moves out of this list and out of the
 * schema below). Documented in docs/configuration.md.
 */
export const RESERVED_KEYS = ['connections'] as const;

/** Shape checks of the kernel's and the reserved keys; plugins' keys are checked against their own schemas. */
export const projectSchema = {
  type: 'object',
  properties: {
    name: { type: 'string' },
    database: { type: 'object', properties: { path: { type: 'string', minLength: 1 } } },
    connections: { type: 'object', additionalProperties: { type: 'object' } },
    environments: {
      type: 'object',
      additionalProperties: {
        type: ['object', 'null'],
        properties: {
          database: { type: 'object', properties: { path: { type: 'string', minLength: 1 } }, additionalProperties: false },
          // Where models, seeds and queries run (docs/targets.md); the target-clickhouse plugin reads it.
          target: {
            type: 'object',
            required: ['type'],
            properties: {
              type: { enum: ['duckdb', 'clickhouse'] },
              url: { type: 'string', minLength: 1 },
              cluster: { type: 'string', minLength: 1 },
              database: { type: 'string', minLength: 1 },
              user: { type: 'string' },
              password: { type: 'string' },
            },
            additionalProperties: false,
          },
        },
        additionalProperties: false,
      },
    },
    plugins: {
      type: 'object',
      properties: { disable: { type: 'array', items: { type: 'string' } }, paths: { type: 'array', items: { type: 'string' } } },
      additionalProperties: false,
    },
    query: {
      type: 'object',
      properties: {
        timeout_seconds: {
          type: 'object',
          properties: { admin: { type: 'number', exclusiveMinimum: 0 }, editor: { type: 'number', exclusiveMinimum: 0 }, viewer: { type: 'number', exclusiveMinimum: 0 } },
          additionalProperties: false,
        },
        default_limit: { type: 'integer', minimum: 1 },
        max_limit: { type: 'integer', minimum: 1 },
        max_concurrent: {
          type: 'object',
          properties: { admin: { type: 'integer', minimum: 1 }, editor: { type: 'integer', minimum: 1 }, viewer: { type: 'integer', minimum: 1 } },
          additionalProperties: false,
        },
        max_queued: { type: 'integer', minimum: 0 },
      },
      additionalProperties: false,
    },
    server: {
      type: 'object',
      properties: {
        // Origins (scheme://host[:port]) besides the server's own whose pages may use the login cookie: a reverse proxy's public origin.
        allowed_origins: { type: 'array', items: { type: 'string', pattern: '^https?://[^/?#\\s]+$' } },
        max_streams_per_user: { type: 'integer', minimum: 1 },
        headers_timeout_seconds: { type: 'number', exclusiveMinimum: 0 },
        request_timeout_seconds: { type: 'number', exclusiveMinimum: 0 },
      },
      additionalProperties: false,
    },
  },
} as const;
