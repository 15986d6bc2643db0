/**
 * What every route kind checks before its handler: the caller and its permission (401/403), the
 * origin of a write or stream (http-guards.ts), and the RouteRequest a handler gets.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { hasPermission, minimumRole, type Caller, type RoutePermission } from '../../sdk/auth.js';
import { forbidden, type DpError } from '../../sdk/errors.js';
import type { RouteRequest } from '../../sdk/plugin.js';
import type { App } from '../app.js';
import { credentialKind } from '../auth/index.js';
import { crossOriginRefusal, type HttpSettings, type OriginCheck, type StreamLimiter } from '../http-guards.js';
import { loggedUrl } from './tokens.js';

/** Methods that never change state; every other one is checked as a write (kernel/http-guards.ts). */
export const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export interface RequestChecks {
  /** A request riding on the login cookie (or on no token, without --auth) from a page that is not dp's. */
  originRefusal(req: FastifyRequest, check: OriginCheck, needProof?: boolean): DpError | null;
  /** Resolves the caller and checks the permission; throws 401/403 as DpErrors. */
  checkCaller(req: FastifyRequest, permission: RoutePermission, what: string): Promise<void>;
}

/** What the registrars of each route kind share with createServer. */
export interface ServerParts {
  readonly server: FastifyInstance;
  readonly app: App;
  readonly checks: RequestChecks;
  /** Event streams and sockets per user (project.yml `server.max_streams_per_user`). */
  readonly streams: StreamLimiter;
  /** The project folder as given and resolved: no error message may quote it. */
  readonly projectFolders: string[];
}

export function requestChecks(app: App, settings: () => HttpSettings): RequestChecks {
  function originRefusal(req: FastifyRequest, check: OriginCheck, needProof = true): DpError | null {
    const kind = credentialKind(req.headers);
    if (app.authEnabled && kind === 'explicit') return null;
    return crossOriginRefusal(req, settings(), check, needProof && app.authEnabled && kind === 'cookie');
  }

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

  return { originRefusal, checkCaller };
}

export const routeRequest = (req: FastifyRequest): RouteRequest => ({
  body: req.body,
  query: req.query,
  params: req.params,
  caller: req.caller,
  headers: req.headers,
  ip: req.ip,
  raw: req,
});

/** The OpenAPI summary and description of a route: who may call it, and what kind of route it is. */
export const describeRoute = (summary: string | undefined, permission: RoutePermission, extra: string) => ({
  summary,
  description: `${permission === 'public' ? 'No token needed.' : `Needs the '${permission}' permission (role ${minimumRole(permission)} or higher).`} ${extra}`,
});

/** One request-log line, the token query parameter blanked (hijacked replies, event streams and sockets, log themselves through it). */
export const logRequest = (req: FastifyRequest, status: number, ms: number): void =>
  req.log.info({ method: req.method, url: loggedUrl(req.url), status, ms: Math.round(ms * 10) / 10 }, 'request');
