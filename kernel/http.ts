import fs from 'node:fs';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { hasPermission, minimumRole, type Caller } from '../sdk/auth.js';
import { DpError, errorMessage, forbidden, isDpError } from '../sdk/errors.js';
import type { RouteDefinition } from '../sdk/plugin.js';
import type { App } from './app.js';
import { clientErrorHandler, frameworkErrorHandler, fromFastifyError, MAX_PARAM_LENGTH, routeValidatorCompiler, withoutAbsolutePaths } from './http-errors.js';
import { kernelRoutes } from './routes.js';

declare module 'fastify' {
  interface FastifyRequest {
    caller: Caller;
  }
}

const ERROR_SCHEMA = {
  type: 'object',
  properties: {
    error: {
      type: 'object',
      properties: { code: { type: 'string' }, message: { type: 'string' }, details: { type: 'object', additionalProperties: true } },
      required: ['code', 'message'],
    },
  },
};

function errorReply(reply: FastifyReply, err: DpError): FastifyReply {
  for (const [k, v] of Object.entries(err.headers)) reply.header(k, v);
  return reply.status(err.status).type('application/json').send(err.toBody());
}

export interface ServerOptions {
  /**
   * `true` (default): close() cuts every open connection at once. `'idle'`: close() lets
   * in-flight requests finish (`dp serve`'s graceful shutdown cuts them at its deadline).
   */
  forceCloseConnections?: boolean | 'idle';
}

export async function createServer(app: App, options: ServerOptions = {}): Promise<FastifyInstance> {
  const server = Fastify({
    logger: false,
    forceCloseConnections: options.forceCloseConnections ?? true,
    // The kernel answers requests during shutdown and maintenance itself (503 in the dp error shape).
    return503OnClosing: false,
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    // Every refusal in dp's error shape, from the router (bad %-encoding, long parameters) and
    // from Node's HTTP parser (oversized headers) alike.
    frameworkErrors: frameworkErrorHandler(errorReply),
    clientErrorHandler,
  });
  // Bodies are validated without type coercion; querystrings and parameters with it (http-errors.ts).
  server.setValidatorCompiler(routeValidatorCompiler());

  server.decorateRequest('caller', null as unknown as Caller);
  // Maintenance and shutdown refuse new work before anything else runs (503 with Retry-After).
  server.addHook('onRequest', async () => {
    const refusal = app.unavailable;
    if (refusal) throw refusal;
  });

  await server.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: { title: 'dp API', description: 'dp: a local data-pipeline workbench on one DuckDB file', version: '0.1.0' },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
  });
  await server.register(swaggerUi, {
    routePrefix: '/docs',
    uiHooks: {
      onRequest: async (req, reply) => {
        // /docs needs a login when auth is on, like every other page.
        try {
          req.caller = await app.auth.resolveCaller(req);
        } catch (e) {
          if (isDpError(e)) return errorReply(reply, e);
          throw e;
        }
      },
    },
  });

  // No absolute path in a message: engine and file-system errors may quote one.
  const projectFolders = [app.project.root, fs.realpathSync(app.project.root)];
  server.setErrorHandler((err, req, reply) => {
    const dp = isDpError(err) ? err : fromFastifyError(err);
    if (dp) return errorReply(reply, withoutAbsolutePaths(dp, projectFolders));
    app.log.error('unhandled error', { method: req.method, url: req.url.split('?')[0], error: errorMessage(err) });
    return errorReply(reply, new DpError(500, 'internal_error', 'An unexpected error occurred; the server log has details'));
  });
  server.setNotFoundHandler((req, reply) =>
    errorReply(reply, new DpError(404, 'not_found', `No endpoint ${req.method} ${req.url.split('?')[0]}`, { method: req.method, path: req.url.split('?')[0] })),
  );

  const register = (route: RouteDefinition, tag: string) => {
    if (!route.permission) throw new DpError(500, 'route_without_permission', `Route ${route.method} ${route.url} declares no permission`);
    const permission = route.permission;
    const response: Record<number, unknown> = { 400: ERROR_SCHEMA, 404: ERROR_SCHEMA, ...(route.schema?.response ?? {}) };
    server.route({
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
      preValidation: async (req) => {
        if (permission === 'public') {
          req.caller = await app.auth.resolveCaller(req).catch(() => ({ username: null, role: 'viewer', authenticated: false }) as Caller);
          return;
        }
        const caller = await app.auth.resolveCaller(req);
        if (!hasPermission(caller, permission)) {
          throw forbidden('insufficient_role', `${route.method} ${route.url} needs the '${permission}' permission; role '${caller.role}' does not have it`, {
            required_permission: permission,
            required_role: minimumRole(permission),
            role: caller.role,
          });
        }
        req.caller = caller;
      },
      handler: async (req: FastifyRequest, reply: FastifyReply) => {
        const out = await route.handler(
          {
            body: req.body,
            query: req.query,
            params: req.params,
            caller: req.caller,
            headers: req.headers,
            ip: req.ip,
            raw: req,
          },
          reply,
        );
        if (out === reply || reply.sent) return reply;
        return out === undefined ? { ok: true } : out;
      },
    });
  };

  for (const r of [...kernelRoutes(app), ...app.auth.routes()]) register(r, 'kernel');
  for (const r of app.routes) register(r, r.plugin);
  return server;
}
