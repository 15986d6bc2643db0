/** Shape checks for project.yml; plugin-specific keys are allowed and left to their plugins. */
export const projectSchema = {
  type: 'object',
  properties: {
    name: { type: 'string' },
    database: { type: 'object', properties: { path: { type: 'string', minLength: 1 } } },
    connections: { type: 'object', additionalProperties: { type: 'object' } },
    streams: {
      type: 'object',
      additionalProperties: {
        type: 'object',
        required: ['steps'],
        properties: {
          description: { type: 'string' },
          schedule: { type: ['string', 'null'] },
          retries: { type: 'integer', minimum: 0 },
          retry_delay: { type: 'number', minimum: 0 },
          webhook_url: { type: ['string', 'null'] },
          steps: {
            type: 'array',
            items: {
              type: 'object',
              minProperties: 1,
              maxProperties: 1,
              propertyNames: { enum: ['ingest', 'seed', 'transform', 'export'] },
              additionalProperties: { type: 'array', items: { type: 'string' } },
            },
          },
        },
      },
    },
    lint: { type: 'object', properties: { dialect: { type: 'string' }, rules: { anyOf: [{ type: 'array', items: { type: 'string' } }, { const: 'all' }] } } },
    sources: {
      type: 'array',
      items: {
        type: 'object',
        required: ['name'],
        properties: {
          name: { type: 'string' },
          schema: { type: 'string' },
          freshness_hours: { type: 'number' },
          tables: { type: 'array', items: { type: 'object', required: ['name'], properties: { name: { type: 'string' }, loaded_at_column: { type: 'string' } } } },
        },
      },
    },
    exposures: {
      type: 'array',
      items: { type: 'object', required: ['name'], properties: { name: { type: 'string' }, depends_on: { type: 'array', items: { type: 'string' } } } },
    },
    environments: {
      type: 'object',
      additionalProperties: {
        type: ['object', 'null'],
        properties: { database: { type: 'object', properties: { path: { type: 'string', minLength: 1 } }, additionalProperties: false } },
        additionalProperties: false,
      },
    },
    alerts: {
      type: 'object',
      properties: {
        channels: { type: 'array', items: { enum: ['chat', 'webhook', 'log'] } },
        chat_webhook_url: { type: 'string' },
        webhook_url: { type: 'string' },
        on_success: { type: 'boolean' },
        on_failure: { type: 'boolean' },
      },
    },
    connectors: { type: 'object', additionalProperties: { type: 'object' } },
    quality: {
      type: 'object',
      properties: {
        anomaly_detection: {
          type: 'object',
          properties: {
            enabled: { type: 'boolean' },
            lookback: { type: 'integer', minimum: 1 },
            threshold: { type: 'number', exclusiveMinimum: 0 },
            notify: { type: 'array', items: { type: 'string' } },
          },
        },
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
  },
} as const;
