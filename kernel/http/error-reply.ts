/** The error body every refusal gets (`{"error": {code, message, details}}`) and its schema. */
import type { FastifyReply } from 'fastify';
import { DpError } from '../../sdk/errors.js';

export const ERROR_SCHEMA = {
  type: 'object',
  properties: {
    error: {
      type: 'object',
      properties: { code: { type: 'string' }, message: { type: 'string' }, details: { type: 'object', additionalProperties: true } },
      required: ['code', 'message'],
    },
  },
};

export function errorReply(reply: FastifyReply, err: DpError): FastifyReply {
  for (const [k, v] of Object.entries(err.headers)) reply.header(k, v);
  return reply.status(err.status).type('application/json').send(err.toBody());
}
