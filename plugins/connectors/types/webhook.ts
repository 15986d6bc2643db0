/**
 * `webhook`: data pushed to `POST /api/webhook/{name}` lands in `landing.<name>_inbox`. Setup
 * creates the inbox and writes the optional secret to .env as `SERVICE_WEBHOOK_SECRET_<NAME>`,
 * the variable the kernel's webhook guard reads. There is nothing to pull, so the type has no
 * tables to sync.
 */
import { connectorScript, type ConnectorType } from '../../../sdk/index.js';

export const webhookType: ConnectorType = {
  type: 'webhook',
  label: 'Webhook inbox',
  description: 'Receives JSON posted to /api/webhook/<name> into landing.<name>_inbox',
  params: {
    type: 'object',
    properties: {
      secret: { type: 'string', minLength: 8, 'x-secret': true, 'x-env': 'SERVICE_WEBHOOK_SECRET_{NAME}', description: 'Shared secret callers send in X-Service-Webhook-Secret' },
    },
    additionalProperties: false,
  },
  cdcModes: ['full_refresh'],
  async testConnection() {
    return { ok: true, message: 'webhook inbox: data is pushed to POST /api/webhook/<name>' };
  },
  async discover() {
    return [];
  },
  generateScript: (connection, tables, targetSchema) => connectorScript(connection, tables, targetSchema),
  // eslint-disable-next-line require-yield
  async *read() {
    throw new Error('a webhook inbox is pushed to, not read: POST /api/webhook/<name>');
  },
};
