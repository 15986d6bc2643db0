/**
 * WebSocket routes: the caller checked before the upgrade (or, with `tokenInFirstMessage`, from
 * the first message), each socket counted against its user's stream limit until it closes.
 */
import type { FastifyRequest } from 'fastify';
import { DpError, errorMessage, isDpError } from '../../sdk/errors.js';
import type { RouteSocket, WebSocketRouteDefinition } from '../../sdk/routes.js';
import { withoutAbsolutePaths } from '../http-errors.js';
import { streamOwner } from '../http-guards.js';
import { describeRoute, logRequest, routeRequest, type ServerParts } from './request-checks.js';
import { FIRST_MESSAGE_TIMEOUT_MS, TOKEN_QUERY_PARAMS } from './tokens.js';

/**
 * WebSocket and SSE: a browser cannot set an Authorization header on them, so the token may
 * also come as `?access_token=` or `?token=` (only on these routes; the cookie works everywhere).
 */
export const tokenFromQuery = (req: FastifyRequest): void => {
  const query = req.query as Record<string, unknown> | undefined;
  const token = TOKEN_QUERY_PARAMS.map((name) => query?.[name]).find((t) => typeof t === 'string' && t);
  if (req.headers.authorization === undefined && typeof token === 'string' && token) req.headers.authorization = `Bearer ${token}`;
};

/** Registers WebSocket routes on `parts.server`. */
export function webSocketRegistrar({ server, app, checks, streams, projectFolders }: ServerParts): (route: WebSocketRouteDefinition, tag: string) => void {
  const { checkCaller, originRefusal } = checks;
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

  /** Counts an upgraded socket against its user's limit until its connection closes (it owns the TCP connection to the end). */
  const holdSocket = (req: FastifyRequest) => {
    if (String(req.headers.upgrade ?? '').toLowerCase() !== 'websocket') return;
    const release = streams.acquire(streamOwner(req));
    const socket = req.raw.socket;
    if (socket.destroyed) release();
    else socket.once('close', release);
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

  return (route, tag) => {
    server.route({
      method: 'GET',
      url: route.url,
      websocket: true,
      schema: { ...describeRoute(route.summary, route.permission, 'WebSocket (upgrade).'), tags: [tag] },
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
}
