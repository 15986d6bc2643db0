/** The quality plugin's alert history and test alerts: routes. */
import { badRequest, type PluginContext } from '../../sdk/index.js';
import { alertHistory, CHANNELS, type AlertDispatcher, type Channel } from './alerts.js';
import { limitQuery } from './route-schemas.js';

/** The alert history and test alerts routes. */
export function registerAlertRoutes(ctx: PluginContext, alerts: AlertDispatcher): void {
  ctx.route<unknown, { limit: number }>({
    method: 'GET',
    url: '/api/alerts',
    permission: 'read',
    summary: 'Alert history, newest first',
    tags: ['quality'],
    schema: { querystring: limitQuery(100) },
    handler: async (req) => ({ alerts: await alertHistory(ctx, req.query.limit ?? 100) }),
  });

  ctx.route<{ channel: Channel; chat_webhook_url?: string; webhook_url?: string; message?: string }>({
    method: 'POST',
    url: '/api/alerts/test',
    permission: 'write',
    summary: 'Sends a test alert to one channel now (URLs in the body override project.yml) and returns the delivery record',
    tags: ['quality'],
    schema: {
      body: {
        type: 'object',
        required: ['channel'],
        additionalProperties: false,
        properties: {
          channel: { enum: [...CHANNELS] },
          chat_webhook_url: { type: 'string', minLength: 1 },
          webhook_url: { type: 'string', minLength: 1 },
          message: { type: 'string', maxLength: 2000 },
        },
      },
    },
    handler: async (req) => {
      for (const field of ['chat_webhook_url', 'webhook_url'] as const) {
        const url = req.body[field];
        if (url !== undefined && !/^https?:\/\/[^\s]+$/i.test(url)) throw badRequest('invalid_url', `'${field}' must be an http or https URL`, { field });
      }
      return alerts.send(
        { type: 'test', title: 'Test alert', message: req.body.message ?? 'dp can reach this channel.', details: { requested_by: req.caller.username } },
        req.body.channel,
        { chat_webhook_url: req.body.chat_webhook_url, webhook_url: req.body.webhook_url },
      );
    },
  });
}
