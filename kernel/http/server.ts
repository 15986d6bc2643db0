/** The Fastify server: hooks, error handling, permission checks and every route kind (docs/architecture.md). */
import fs from 'node:fs';
import path from 'node:path';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import cookie from '@fastify/cookie';
import multipart from '@fastify/multipart';
import fastifyStatic from '@fastify/static';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import websocket from '@fastify/websocket';
import { hasPermission, minimumRole, type Caller, type RoutePermission } from '../../sdk/auth.js';
import { DpError, errorMessage, forbidden, isDpError, noSpaceLeft } from '../../sdk/errors.js';
import type { RouteDefinition, RouteRequest } from '../../sdk/plugin.js';
import { formatSseEvent, type RouteSocket, type SseEvent, type SseRouteDefinition, type StaticRouteDefinition, type WebSocketRouteDefinition } from '../../sdk/routes.js';
import type { App } from '../app.js';
import { clientErrorHandler, frameworkErrorHandler, fromFastifyError, MAX_PARAM_LENGTH, routeValidatorCompiler, withoutAbsolutePaths } from '../http-errors.js';
import { cliRoutes } from '../remote-server.js';
import { kernelRoutes } from '../routes.js';
import { credentialKind } from '../auth/index.js';
import { crossOriginRefusal, httpSettings, StreamLimiter, streamOwner, type HttpSettings, type OriginCheck } from '../http-guards.js';
import { ERROR_SCHEMA, errorReply } from './error-reply.js';
import { malformedMultipart, markMultipartErrors, multipartErrors } from './multipart.js';
import { allowInlineScripts, allowInlineStyles, securityHeaders } from './security-headers.js';
import { FIRST_MESSAGE_TIMEOUT_MS, loggedUrl, TOKEN_QUERY_PARAMS } from './tokens.js';

declare module 'fastify' {
  interface FastifyRequest {
    caller: Caller;
  }
}

/** Unsent bytes an SSE client may fall behind by before the server drops it. */
const SSE_MAX_PENDING_BYTES = 4 * 1024 * 1024;

/** Paths the SPA fallback never answers: an API, the API docs, sockets and the MCP endpoint keep their JSON 404. */
const NOT_SPA = /^\/(api|docs|ws|mcp)(\/|$)/;

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

/** Methods that never change state; every other one is checked as a write (kernel/http-guards.ts). */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

const gracefulStops = new WeakMap<FastifyInstance, (graceMs: number) => Promise<void>>();

/**
 * `dp serve`'s graceful stop (README: new requests get `503 shutting_down`): the server keeps
 * listening while in-flight requests finish (at most `graceMs`), so a new request gets the 503
 * of `app.close()` (and `Connection: close`) instead of a refused connection; event streams and
 * sockets end at once; then the server closes. Call it with `app.close()`, which sets the 503.
 */
export function closeGracefully(server: FastifyInstance, graceMs: number): Promise<void> {
  const stop = gracefulStops.get(server);
  return stop ? stop(graceMs) : server.close();
}

export async function createServer(app: App, options: ServerOptions = {}): Promise<FastifyInstance> {
  const heartbeatMs = options.sseHeartbeatMs ?? 15_000;
  const settings = (): HttpSettings => httpSettings(app.project.config.raw, options.http);
  const timeouts = settings();
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
  });
  // Bodies are validated without type coercion; querystrings and parameters with it (http-errors.ts).
  server.setValidatorCompiler(routeValidatorCompiler());

  server.decorateRequest('caller', null as unknown as Caller);
  const headersFor = securityHeaders();
  // Requests (event streams included) whose response has not closed: a graceful stop waits for them.
  let inFlight = 0;
  const whenIdle: Array<() => void> = [];
  // One synchronous hook before anything else: maintenance and shutdown refuse new work (503
  // with Retry-After), and every response gets helmet's headers (HSTS off: dp serves plain
  // HTTP on a local port, where browsers ignore it).
  server.addHook('onRequest', (req, reply, done) => {
    if (req.headers.upgrade === undefined) {
      inFlight++;
      reply.raw.once('close', () => {
        if (--inFlight === 0) for (const idle of whenIdle.splice(0)) idle();
      });
    }
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
      const refused = originRefusal(req, 'write', false);
      if (refused) return done(refused);
    }
    done();
  });
  // Only JSON (and multipart on upload routes) is parsed: a text/plain body, which an HTML form
  // of any other page can send without a preflight, is refused with 415 on every route.
  server.removeContentTypeParser('text/plain');

  /** A request riding on the login cookie (or on no token, without --auth) from a page that is not dp's (http-guards.ts). */
  function originRefusal(req: FastifyRequest, check: OriginCheck, needProof = true): DpError | null {
    const kind = credentialKind(req.headers);
    if (app.authEnabled && kind === 'explicit') return null;
    return crossOriginRefusal(req, settings(), check, needProof && app.authEnabled && kind === 'cookie');
  }
  const streams = new StreamLimiter(() => settings().maxStreamsPerUser);

  const logRequest = (req: FastifyRequest, status: number, ms: number) =>
    req.log.info({ method: req.method, url: loggedUrl(req.url), status, ms: Math.round(ms * 10) / 10 }, 'request');
  // Hijacked replies (event streams, upgraded sockets) skip onResponse: they log themselves below.
  server.addHook('onResponse', (req, reply, done) => {
    logRequest(req, reply.statusCode, reply.elapsedTime);
    done();
  });

  await server.register(cookie);
  await server.register(websocket, { options: { maxPayload: 16 * 1024 * 1024 } });
  // Event streams never finish on their own: a graceful close ends them (clients reconnect with
  // Last-Event-ID); @fastify/websocket closes its sockets the same way.
  const openStreams = new Set<import('node:http').ServerResponse>();
  server.addHook('preClose', async () => {
    for (const res of openStreams) res.end();
  });
  gracefulStops.set(server, async (graceMs) => {
    // Streams and sockets never finish on their own: end them now (clients reconnect later).
    for (const res of openStreams) res.end();
    for (const client of (server as unknown as { websocketServer?: { clients: Set<{ close(code: number, reason: string): void }> } }).websocketServer?.clients ?? []) {
      client.close(1001, 'server shutting down');
    }
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      new Promise<void>((resolve) => (inFlight === 0 ? resolve() : whenIdle.push(resolve))),
      new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs))),
    ]);
    clearTimeout(timer);
    await server.close();
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

  // No absolute path in a message: engine and file-system errors may quote one.
  const projectFolders = [app.project.root, fs.realpathSync(app.project.root)];
  server.setErrorHandler((err, req, reply) => {
    const dp = isDpError(err) ? err : multipartErrors.has(err as object) ? malformedMultipart(err) : (fromFastifyError(err) ?? noSpaceLeft(err));
    if (dp) return errorReply(reply, withoutAbsolutePaths(dp, projectFolders));
    app.log.error('unhandled error', { method: req.method, url: req.url.split('?')[0], error: errorMessage(err) });
    return errorReply(reply, new DpError(500, 'internal_error', 'An unexpected error occurred; the server log has details'));
  });
  const spaRoots: Array<{ prefix: string; root: string; permission: RoutePermission; scriptHashes: string[] }> = [];
  server.setNotFoundHandler(async (req, reply) => {
    const urlPath = req.url.split('?')[0];
    const spa = spaFallbackFor(req, urlPath);
    if (spa) {
      await checkCaller(req, spa.permission, `GET ${spa.prefix}`);
      allowInlineScripts(reply, spa.scriptHashes);
      return reply.type('text/html; charset=utf-8').send(fs.createReadStream(path.join(spa.root, 'index.html')));
    }
    return errorReply(reply, new DpError(404, 'not_found', `No endpoint ${req.method} ${urlPath}`, { method: req.method, path: urlPath }));
  });

  /** The static route whose index.html answers this request, when it is a page load of a client-side route. */
  function spaFallbackFor(req: FastifyRequest, urlPath: string) {
    if ((req.method !== 'GET' && req.method !== 'HEAD') || NOT_SPA.test(urlPath)) return null;
    if (!/text\/html|application\/xhtml\+xml/.test(String(req.headers.accept ?? ''))) return null;
    const matches = spaRoots.filter((s) => s.prefix === '/' || urlPath === s.prefix || urlPath.startsWith(s.prefix + '/'));
    // The longest prefix wins (a UI at / and another at /admin).
    return matches.sort((a, b) => b.prefix.length - a.prefix.length)[0] ?? null;
  }

  /** Resolves the caller and checks the permission; throws 401/403 as DpErrors. */
  async function checkCaller(req: FastifyRequest, permission: RoutePermission, what: string): Promise<void> {
    if (permission === 'public') {
      req.caller = await app.auth.resolveCaller(req).catch(() => ({ username: null, role: 'viewer', authenticated: false }) as Caller);
      return;
    }
    const caller = await app.auth.resolveCaller(req);
    if (!SAFE_METHODS.has(req.method)) {
      const unproven = originRefusal(req, 'write');
      if (unproven) throw unproven;
    }
    if (!hasPermission(caller, permission)) {
      throw forbidden('insufficient_role', `${what} needs the '${permission}' permission; role '${caller.role}' does not have it`, {
        required_permission: permission,
        required_role: minimumRole(permission),
        role: caller.role,
      });
    }
    req.caller = caller;
  }

  const routeRequest = (req: FastifyRequest): RouteRequest => ({
    body: req.body,
    query: req.query,
    params: req.params,
    caller: req.caller,
    headers: req.headers,
    ip: req.ip,
    raw: req,
  });

  const describe = (summary: string | undefined, permission: RoutePermission, extra: string) => ({
    summary,
    description: `${permission === 'public' ? 'No token needed.' : `Needs the '${permission}' permission (role ${minimumRole(permission)} or higher).`} ${extra}`,
  });

  /**
   * WebSocket and SSE: a browser cannot set an Authorization header on them, so the token may
   * also come as `?access_token=` or `?token=` (only on these routes; the cookie works everywhere).
   */
  const tokenFromQuery = (req: FastifyRequest) => {
    const query = req.query as Record<string, unknown> | undefined;
    const token = TOKEN_QUERY_PARAMS.map((name) => query?.[name]).find((t) => typeof t === 'string' && t);
    if (req.headers.authorization === undefined && typeof token === 'string' && token) req.headers.authorization = `Bearer ${token}`;
  };

  /** Sockets whose caller presented no credential and sends the token as its first message (tokenInFirstMessage). */
  const awaitingToken = new WeakSet<FastifyRequest>();

  const internalSocketError = (req: FastifyRequest, e: unknown) => {
    app.log.error('websocket route failed', { url: req.url.split('?')[0], error: errorMessage(e) });
    return new DpError(500, 'internal_error', 'An unexpected error occurred; the server log has details');
  };

  /** Refuses a socket after the upgrade: the error as a text frame, then close code 4000 + status. */
  const refuseSocket = (socket: RouteSocket, err: DpError) => {
    if (socket.readyState === 1) socket.send(JSON.stringify(withoutAbsolutePaths(err, projectFolders).toBody()));
    socket.close(4000 + err.status, err.code);
  };

  /**
   * The first message's token, then the same checks as before an upgrade; the messages that
   * arrive meanwhile are replayed to the route's handler in order once it listens.
   */
  const authenticateFirstMessage = (route: WebSocketRouteDefinition, socket: RouteSocket, req: FastifyRequest) => {
    const held: Array<[Buffer, boolean]> = [];
    let state: 'token' | 'checking' | 'done' = 'token';
    const timer = setTimeout(() => {
      if (state === 'token') refuseSocket(socket, new DpError(401, 'auth_required', 'Log in first: send {"token": "<token>"} as the first message'));
    }, FIRST_MESSAGE_TIMEOUT_MS);
    socket.on('close', () => clearTimeout(timer));
    socket.on('message', (data: Buffer, isBinary: boolean) => {
      if (state === 'checking') held.push([data, isBinary]);
      if (state !== 'token') return;
      state = 'checking';
      clearTimeout(timer);
      let token: unknown = null;
      try {
        token = isBinary ? null : (JSON.parse(data.toString('utf8')) as { token?: unknown })?.token;
      } catch {
        /* not JSON: refused below */
      }
      if (typeof token !== 'string' || !token) {
        refuseSocket(socket, new DpError(401, 'auth_required', 'Log in first: send {"token": "<token>"} as the first message'));
        return;
      }
      req.headers.authorization = `Bearer ${token}`;
      void (async () => {
        try {
          await checkCaller(req, route.permission, `GET ${route.url}`);
          await route.accept?.(routeRequest(req));
          holdSocket(req);
        } catch (e) {
          state = 'done';
          return refuseSocket(socket, isDpError(e) ? e : internalSocketError(req, e));
        }
        state = 'done';
        if (socket.readyState !== 1) return;
        try {
          // The handler attaches its listeners when called, before any await: replay right after.
          const handled = route.handler(socket, routeRequest(req));
          const emitter = socket as unknown as { emit(event: 'message', data: Buffer, isBinary: boolean): boolean };
          for (const [d, b] of held.splice(0)) emitter.emit('message', d, b);
          await handled;
        } catch (e) {
          refuseSocket(socket, isDpError(e) ? e : internalSocketError(req, e));
        }
      })();
    });
  };

  /** Counts an upgraded socket against its user's limit until its connection closes (it owns the TCP connection to the end). */
  const holdSocket = (req: FastifyRequest) => {
    if (String(req.headers.upgrade ?? '').toLowerCase() !== 'websocket') return;
    const release = streams.acquire(streamOwner(req));
    const socket = req.raw.socket;
    if (socket.destroyed) release();
    else socket.once('close', release);
  };

  const registerWebSocket = (route: WebSocketRouteDefinition, tag: string) => {
    server.route({
      method: 'GET',
      url: route.url,
      websocket: true,
      schema: { ...describe(route.summary, route.permission, 'WebSocket (upgrade).'), tags: [tag] },
      preValidation: async (req: FastifyRequest) => {
        tokenFromQuery(req);
        const refused = originRefusal(req, 'stream');
        if (refused) throw refused;
        try {
          await checkCaller(req, route.permission, `GET ${route.url}`);
        } catch (e) {
          // No credential at all on a real upgrade: with tokenInFirstMessage the token comes over the socket.
          const upgrading = String(req.headers.upgrade ?? '').toLowerCase() === 'websocket';
          if (route.tokenInFirstMessage && upgrading && isDpError(e) && e.code === 'auth_required') {
            awaitingToken.add(req);
            return;
          }
          throw e;
        }
        await route.accept?.(routeRequest(req));
        holdSocket(req);
      },
      handler: (socket: RouteSocket, req: FastifyRequest) => {
        const opened = performance.now();
        socket.on('close', () => logRequest(req, 101, performance.now() - opened));
        if (awaitingToken.has(req)) return authenticateFirstMessage(route, socket, req);
        return route.handler(socket, routeRequest(req));
      },
    } as never);
  };

  const registerSse = (route: SseRouteDefinition, tag: string) => {
    server.route({
      method: 'GET',
      url: route.url,
      schema: { ...describe(route.summary, route.permission, 'Server-sent events (text/event-stream); send Last-Event-ID to resume.'), tags: [tag] },
      preValidation: async (req) => {
        tokenFromQuery(req);
        const refused = originRefusal(req, 'stream');
        if (refused) throw refused;
        await checkCaller(req, route.permission, `GET ${route.url}`);
      },
      handler: async (req, reply) => {
        const source = await route.source(routeRequest(req));
        const release = streams.acquire(streamOwner(req));
        const header = req.headers['last-event-id'];
        const lastEventId = (Array.isArray(header) ? header[0] : header) ?? null;
        const res = reply.raw;
        // A client that stops reading is dropped rather than buffered without bound; it
        // reconnects with Last-Event-ID and gets what it missed from the source's buffer.
        const send = (text: string) => {
          if (res.destroyed) return;
          if (res.writableLength > SSE_MAX_PENDING_BYTES) res.destroy();
          else res.write(text);
        };
        // since() and subscribe() in one synchronous step (and before anything is sent, so a
        // throwing source still gets a JSON error): no event falls between replay and live.
        let replay: SseEvent[];
        const live: string[] = [];
        let streaming = false;
        let unsubscribe: () => void;
        try {
          replay = source.since(lastEventId);
          unsubscribe = source.subscribe((e) => (streaming ? send(formatSseEvent(e)) : live.push(formatSseEvent(e))));
        } catch (e) {
          release();
          throw e;
        }
        reply.hijack();
        res.writeHead(200, {
          ...(reply.getHeaders() as Record<string, string>),
          'content-type': 'text/event-stream; charset=utf-8',
          'cache-control': 'no-cache, no-transform',
          connection: 'keep-alive',
          'x-accel-buffering': 'no',
        });
        // Headers out now, not with the first event or heartbeat: the client knows it is subscribed.
        res.flushHeaders();
        for (const e of replay) send(formatSseEvent(e));
        for (const text of live) send(text);
        streaming = true;
        const heartbeat = setInterval(() => send(': keepalive\n\n'), heartbeatMs);
        openStreams.add(res);
        req.raw.on('close', () => {
          release();
          openStreams.delete(res);
          clearInterval(heartbeat);
          unsubscribe();
          logRequest(req, 200, reply.elapsedTime);
        });
      },
    });
  };

  const registerStatic = async (route: StaticRouteDefinition) => {
    const prefix = route.url === '/' ? '/' : route.url.replace(/\/+$/, '');
    const scriptHashes = route.inlineScriptHashes ?? [];
    if (route.spaFallback) spaRoots.push({ prefix, root: route.root, permission: route.permission, scriptHashes });
    await server.register(async (scope) => {
      // A folder at / catches every path the router cannot match, including an API path whose
      // parameter is over the router's limit: answer that as the router would (414), not 404.
      scope.addHook('onRequest', async (req) => {
        const segments = req.url.split('?')[0].split('/');
        if (segments.some((s) => s.length > MAX_PARAM_LENGTH)) {
          throw new DpError(414, 'path_parameter_too_long', `A path parameter is longer than ${MAX_PARAM_LENGTH} characters`, { max_length: MAX_PARAM_LENGTH });
        }
      });
      scope.addHook('preValidation', async (req) => checkCaller(req, route.permission, `GET ${route.url}`));
      if (scriptHashes.length) scope.addHook('onSend', async (_req, reply, payload) => (allowInlineScripts(reply, scriptHashes), payload));
      await scope.register(fastifyStatic, {
        root: route.root,
        prefix,
        // `/assets` answers a redirect to `/assets/` (after the permission check, like every file).
        redirect: true,
        decorateReply: false,
        dotfiles: 'deny',
        schemaHide: true,
      });
    });
  };

  const register = (route: RouteDefinition, tag: string, scope: FastifyInstance = server) => {
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
      preValidation: (req) => checkCaller(req, permission, `${route.method} ${route.url}`),
      handler: async (req: FastifyRequest, reply: FastifyReply) => {
        const out = await route.handler(routeRequest(req), reply);
        if (out === reply || reply.sent) return reply;
        return out === undefined ? { ok: true } : out;
      },
    });
  };

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
  return server;
}
