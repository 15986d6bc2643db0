/**
 * The Fastify server: hooks, error handling, the API docs, and the registration of every route
 * kind, each kind in its own module (json-routes, sse-routes, socket-routes, static-routes; the
 * checks they share in request-checks; the graceful stop in graceful-stop). docs/architecture.md.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import cookie from '@fastify/cookie';
import multipart from '@fastify/multipart';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import websocket from '@fastify/websocket';
import type { Caller } from '../../sdk/auth.js';
import { DpError, errorMessage, isDpError, noSpaceLeft } from '../../sdk/errors.js';
import type { App } from '../app.js';
import { clientErrorHandler, frameworkErrorHandler, fromFastifyError, MAX_PARAM_LENGTH, routeValidatorCompiler, withoutAbsolutePaths } from '../http-errors.js';
import { cliRoutes } from '../remote-server.js';
import { kernelRoutes } from '../routes.js';
import { httpSettings, StreamLimiter, type HttpSettings } from '../http-guards.js';
import { errorReply } from './error-reply.js';
import { gracefulStopOf } from './graceful-stop.js';
import { jsonRegistrar } from './json-routes.js';
import { malformedMultipart, markMultipartErrors, multipartErrors } from './multipart.js';
import { logRequest, requestChecks, SAFE_METHODS, type ServerParts } from './request-checks.js';
import { allowInlineStyles, securityHeaders } from './security-headers.js';
import { webSocketRegistrar } from './socket-routes.js';
import { sseRegistrar } from './sse-routes.js';
import { staticRegistrar } from './static-routes.js';

export { closeGracefully } from './graceful-stop.js';

declare module 'fastify' {
  interface FastifyRequest {
    caller: Caller;
  }
}

export interface ServerOptions {
  /**
   * `true` (default): close() cuts every open connection at once. `'idle'`: close() lets
   * in-flight requests finish (`dp serve`'s graceful shutdown cuts them at its deadline).
   */
  forceCloseConnections?: boolean | 'idle';
  /** Interval of the `: keepalive` comment on SSE streams (default 15 s; tests shorten it). */
  sseHeartbeatMs?: number;
  /** The local token of `.dp/server.json` once `dp serve` has written it (kernel/remote-server.ts); none: the CLI routes refuse. */
  cliLocalToken?: () => string | null;
  /** Overrides project.yml `server:` (allowed origins, streams per user, header and request timeouts; tests shorten the timeouts). */
  http?: Partial<HttpSettings>;
}

export async function createServer(app: App, options: ServerOptions = {}): Promise<FastifyInstance> {
  const settings = (): HttpSettings => httpSettings(app.project.config.raw, options.http);
  const server = fastifyFor(app, options, settings());
  const parts: ServerParts = {
    server,
    app,
    checks: requestChecks(app, settings),
    streams: new StreamLimiter(() => settings().maxStreamsPerUser),
    // No absolute path in a message: engine and file-system errors may quote one.
    projectFolders: [app.project.root, fs.realpathSync(app.project.root)],
  };
  const stop = gracefulStopOf(server);
  addRequestHooks(parts, stop.track);
  await server.register(cookie);
  await server.register(websocket, { options: { maxPayload: 16 * 1024 * 1024 } });
  await registerApiDocs(server, app);
  server.setErrorHandler((err, req, reply) => {
    const dp = isDpError(err) ? err : multipartErrors.has(err as object) ? malformedMultipart(err) : (fromFastifyError(err) ?? noSpaceLeft(err));
    if (dp) return errorReply(reply, withoutAbsolutePaths(dp, parts.projectFolders));
    app.log.error('unhandled error', { method: req.method, url: req.url.split('?')[0], error: errorMessage(err) });
    return errorReply(reply, new DpError(500, 'internal_error', 'An unexpected error occurred; the server log has details'));
  });
  await registerRoutes(parts, options, stop.openStreams);
  return server;
}

type SerializerBuilder = (externalSchemas: unknown, options: unknown) => (route: { schema: unknown }) => (data: unknown) => string;

/**
 * Fastify's own response serializer compiler (fast-json-stringify, the package Fastify loads by
 * default), with each route's response schema compiled on its first reply of that status, not
 * at start-up: every route declares its error answers, and compiling a few hundred serializers
 * was about a tenth of a server's start (issue 29). What a reply contains is unchanged.
 */
function lazySerializers(): SerializerBuilder {
  const fromFastify = createRequire(createRequire(import.meta.url).resolve('fastify'));
  const eager = (fromFastify('@fastify/fast-json-stringify-compiler') as { SerializerSelector: () => SerializerBuilder }).SerializerSelector();
  return (externalSchemas, options) => {
    const build = eager(externalSchemas, options);
    return (route) => {
      let serialize: ((data: unknown) => string) | undefined;
      return (data) => (serialize ??= build(route))(data);
    };
  };
}

/** The Fastify instance with dp's timeouts, logger and error shapes for what fails before a route. */
function fastifyFor(app: App, options: ServerOptions, timeouts: HttpSettings): FastifyInstance {
  const requestTimeoutMs = Math.max(1, timeouts.requestTimeoutMs);
  const headersTimeoutMs = Math.min(Math.max(1, timeouts.headersTimeoutMs), requestTimeoutMs);
  const server = Fastify({
    loggerInstance: app.log.root.child({ scope: 'http' }) as unknown as FastifyBaseLogger,
    // One line per request (below, on response) instead of fastify's two, with the token query parameter blanked.
    logController: new LogController({ disableRequestLogging: true }),
    forceCloseConnections: options.forceCloseConnections ?? true,
    // The kernel answers requests during shutdown and maintenance itself (503 in the dp error shape).
    return503OnClosing: false,
    // A client sending its headers or body slowly is cut with 408 (clientErrorHandler) instead of
    // holding a connection; Node checks at an interval, so a short one keeps the cut near the limit.
    requestTimeout: requestTimeoutMs,
    http: {
      headersTimeout: headersTimeoutMs,
      requestTimeout: requestTimeoutMs,
      connectionsCheckingInterval: Math.min(1000, Math.max(20, Math.floor(headersTimeoutMs / 4))),
    },
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    // Every refusal in dp's error shape, from the router (bad %-encoding, long parameters) and
    // from Node's HTTP parser (oversized headers) alike.
    frameworkErrors: frameworkErrorHandler(errorReply),
    clientErrorHandler,
    schemaController: { compilersFactory: { buildSerializer: lazySerializers() as never } },
  });
  // Bodies are validated without type coercion; querystrings and parameters with it (http-errors.ts).
  server.setValidatorCompiler(routeValidatorCompiler());
  server.decorateRequest('caller', null as unknown as Caller);
  return server;
}

/** The hooks every request passes: refusal during maintenance and shutdown, security headers, origin, the request log. */
function addRequestHooks({ server, app, checks }: ServerParts, track: ReturnType<typeof gracefulStopOf>['track']): void {
  const headersFor = securityHeaders();
  // One synchronous hook before anything else: maintenance and shutdown refuse new work (503
  // with Retry-After), and every response gets helmet's headers (HSTS off: dp serves plain
  // HTTP on a local port, where browsers ignore it).
  server.addHook('onRequest', (req, reply, done) => {
    track(req, reply);
    const refusal = app.unavailable;
    if (refusal) {
      // A client keeping its connection alive would come back to a server about to stop listening.
      if (refusal.code === 'shutting_down') reply.header('connection', 'close');
      return done(refusal);
    }
    reply.headers(headersFor(req.headers.host));
    // A foreign origin is refused before any work; the proof a cookie write needs is checked
    // once the cookie is known to authenticate (checkCaller), so a stale cookie still gets 401.
    if (!SAFE_METHODS.has(req.method)) {
      const refused = checks.originRefusal(req, 'write', false);
      if (refused) return done(refused);
    }
    done();
  });
  // Only JSON (and multipart on upload routes) is parsed: a text/plain body, which an HTML form
  // of any other page can send without a preflight, is refused with 415 on every route.
  server.removeContentTypeParser('text/plain');
  // Hijacked replies (event streams, upgraded sockets) skip onResponse: they log themselves.
  server.addHook('onResponse', (req, reply, done) => {
    logRequest(req, reply.statusCode, reply.elapsedTime);
    done();
  });
}

/** OpenAPI of every route, and its UI at /docs (behind a login when auth is on). */
async function registerApiDocs(server: FastifyInstance, app: App): Promise<void> {
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
    // No call to validator.swagger.io: the CSP allows nothing external.
    uiConfig: { validatorUrl: null },
    uiHooks: {
      onRequest: async (req, reply) => {
        allowInlineStyles(reply);
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
}

/** The kernel's, auth's, the CLI's and the plugins' routes, each by its kind. */
async function registerRoutes(parts: ServerParts, options: ServerOptions, openStreams: ReturnType<typeof gracefulStopOf>['openStreams']): Promise<void> {
  const { server, app } = parts;
  const registerStatic = staticRegistrar(parts);
  const register = jsonRegistrar(parts);
  const registerWebSocket = webSocketRegistrar(parts);
  const registerSse = sseRegistrar(parts, options.sseHeartbeatMs ?? 15_000, openStreams);
  for (const r of [...kernelRoutes(app), ...app.auth.routes(), ...cliRoutes(app, options.cliLocalToken ?? (() => null))]) register(r, 'kernel');
  for (const r of app.routes) if (!r.uploads) register(r, r.plugin);
  // multipart/form-data is parsed lazily, and only for the routes that take an upload: they read
  // it themselves (req.raw.parts(), with their own size limits). Its hooks run on those routes
  // alone (three per request); any other route refuses that content type (415).
  const uploadRoutes = app.routes.filter((r) => r.uploads);
  if (uploadRoutes.length) {
    await server.register(async (scope) => {
      await scope.register(multipart, { limits: { files: 1, fields: 20, fieldSize: 64 * 1024 } });
      scope.addHook('preHandler', async (req) => markMultipartErrors(req));
      for (const r of uploadRoutes) register(r, r.plugin, scope);
    });
  }
  for (const r of app.nonJsonRoutes) {
    if (!r.permission) throw new DpError(500, 'route_without_permission', `Route ${r.method} ${r.url} declares no permission`);
    if (r.kind === 'websocket') registerWebSocket(r, r.plugin);
    else if (r.kind === 'sse') registerSse(r, r.plugin);
    else await registerStatic(r);
  }
}
