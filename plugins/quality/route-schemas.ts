/** JSON schemas the quality routes share. */
import type { JsonSchema } from '../../sdk/index.js';


export const limitQuery = (fallback: number): JsonSchema => ({
  type: 'object',
  additionalProperties: false,
  properties: { limit: { type: 'integer', minimum: 1, maximum: 10000, default: fallback, description: `Rows to return (default ${fallback})` } },
});
export const modelParams: JsonSchema = {
  type: 'object',
  required: ['model_name'],
  properties: { model_name: { type: 'string', minLength: 1, description: 'Model as schema.name or bare name' } },
};
export const assertionOutcomeSchema: JsonSchema = {
  type: 'object',
  properties: { expression: { type: 'string' }, passed: { type: 'boolean' }, detail: { type: 'object', additionalProperties: true } },
};
export const contractRunSchema: JsonSchema = {
  type: 'object',
  properties: {
    total: { type: 'integer' },
    passed: { type: 'integer' },
    failed: { type: 'integer' },
    results: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          contract_name: { type: 'string' },
          model: { type: 'string' },
          passed: { type: 'boolean' },
          severity: { type: 'string' },
          duration_ms: { type: 'number' },
          error: { type: ['string', 'null'] },
          assertions: { type: 'array', items: assertionOutcomeSchema },
        },
      },
    },
    errors: { type: 'array', items: { type: 'object', properties: { file: { type: 'string' }, index: { type: 'integer' }, reason: { type: 'string' } } } },
  },
};
