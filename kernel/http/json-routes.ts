/** JSON routes (kernel, auth, CLI and plugin routes): OpenAPI schema, permission check, `{ok: true}` for an empty answer. */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { minimumRole } from '../../sdk/auth.js';
import { DpError } from '../../sdk/errors.js';
import type { RouteDefinition } from '../../sdk/plugin.js';
import { ERROR_SCHEMA } from './error-reply.js';
import { routeRequest, type ServerParts } from './request-checks.js';

/** Registers a JSON route on `scope` (the server, or the multipart scope of upload routes). */
export function jsonRegistrar({ server, checks }: ServerParts): (route: RouteDefinition, tag: string, scope?: FastifyInstance) => void {
  return (route, tag, scope = server) => {
    if (!route.permission) throw new DpError(500, 'route_without_permission', `Route ${route.method} ${route.url} declares no permission`);
    const permission = route.permission;
    const response: Record<number, unknown> = { 400: ERROR_SCHEMA, 404: ERROR_SCHEMA, ...(route.schema?.response ?? {}) };
    scope.route({
      method: route.method,
      url: route.url,
      bodyLimit: route.bodyLimit,
      schema: {
        summary: route.summary,
        description: route.description ?? (permission === 'public' ? 'No token needed.' : `Needs the '${permission}' permission (role ${minimumRole(permission)} or higher).`),
        tags: route.tags ?? [tag],
        // Only the parts a route defines: fastify warns about each one it is handed as undefined.
        ...(route.schema?.body ? { body: route.schema.body } : {}),
        ...(route.schema?.querystring ? { querystring: route.schema.querystring } : {}),
        ...(route.schema?.params ? { params: route.schema.params } : {}),
        response,
        ...(permission === 'public' ? { security: [] } : {}),
      },
      preValidation: (req) => checks.checkCaller(req, permission, `${route.method} ${route.url}`),
      handler: async (req: FastifyRequest, reply: FastifyReply) => {
        const out = await route.handler(routeRequest(req), reply);
        if (out === reply || reply.sent) return reply;
        return out === undefined ? { ok: true } : out;
      },
    });
  };
}
