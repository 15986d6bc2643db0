/**
 * What the HTTP layer refuses before a route runs, whatever the route (docs/security.md
 * "Cross-origin requests" and "Connections"): requests a browser sent on behalf of another
 * origin with dp's login cookie (cross-origin sockets, event streams and form posts), more open
 * streams than one user may hold, and the timeouts that cut clients sending too slowly.
 */
import type { FastifyRequest } from 'fastify';
import { DpError } from '../sdk/errors.js';

/**
 * The header dp's own pages send on every state-changing call (plugins/ui/client/api.ts). A page
 * of another origin cannot send a custom header without a CORS preflight, which dp never grants.
 */
export const SAME_ORIGIN_HEADER = 'x-dp-request';

/** project.yml `server:` (kernel/project-schema.ts), with ServerOptions taking precedence. */
export interface HttpSettings {
  /** Origins besides the server's own (the Host the request was sent to) whose pages may use the cookie: `https://dp.example.com`. */
  allowedOrigins: string[];
  /** Event streams and WebSockets one user (or, without --auth, one address) may hold open at once. */
  maxStreamsPerUser: number;
  /** Time a client has to send a request's headers. */
  headersTimeoutMs: number;
  /** Time a client has to send a whole request, body included. */
  requestTimeoutMs: number;
}

export const DEFAULT_HTTP_SETTINGS: HttpSettings = {
  allowedOrigins: [],
  maxStreamsPerUser: 32,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 120_000,
};

/** The settings from project.yml's `server:` mapping (already schema-checked at load), overridden by `overrides`. */
export function httpSettings(raw: Record<string, unknown>, overrides: Partial<HttpSettings> = {}): HttpSettings {
  const s = (raw.server ?? {}) as { allowed_origins?: string[]; max_streams_per_user?: number; headers_timeout_seconds?: number; request_timeout_seconds?: number };
  const seconds = (v: number | undefined, fallback: number) => (typeof v === 'number' ? Math.round(v * 1000) : fallback);
  return {
    allowedOrigins: overrides.allowedOrigins ?? s.allowed_origins ?? DEFAULT_HTTP_SETTINGS.allowedOrigins,
    maxStreamsPerUser: overrides.maxStreamsPerUser ?? s.max_streams_per_user ?? DEFAULT_HTTP_SETTINGS.maxStreamsPerUser,
    headersTimeoutMs: overrides.headersTimeoutMs ?? seconds(s.headers_timeout_seconds, DEFAULT_HTTP_SETTINGS.headersTimeoutMs),
    requestTimeoutMs: overrides.requestTimeoutMs ?? seconds(s.request_timeout_seconds, DEFAULT_HTTP_SETTINGS.requestTimeoutMs),
  };
}

/** `scheme://host[:port]` as browsers send it in Origin (lower case, default ports dropped); null when not an http(s) origin. */
function normalizedOrigin(text: string): string | null {
  try {
    const u = new URL(text);
    return u.protocol === 'http:' || u.protocol === 'https:' ? u.origin : null;
  } catch {
    return null;
  }
}

const first = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v);

export type OriginCheck = 'stream' | 'write';

/**
 * Checks that a request riding on ambient credentials (the `dp_token` cookie, or no token at all
 * on a server without --auth) comes from dp's own pages; requests that carry a token explicitly
 * are never checked (a page of another origin cannot attach one). Returns the refusal or null.
 *
 * - `Origin` present: it must be the origin of the Host the request was sent to (any scheme, so a
 *   TLS-terminating proxy that keeps Host works), or one of `allowedOrigins`. `null` never passes.
 * - No `Origin`: `Sec-Fetch-Site`, when sent, must be `same-origin` or `none`.
 * - A state-changing request authenticated by the cookie must also prove where it comes from:
 *   an allowed `Origin`, `Sec-Fetch-Site: same-origin`, or the `X-DP-Request` header.
 */
export function crossOriginRefusal(req: FastifyRequest, settings: HttpSettings, check: OriginCheck, byCookie: boolean): DpError | null {
  const origin = first(req.headers.origin);
  const site = first(req.headers['sec-fetch-site']);
  let proven = false;
  if (origin !== undefined) {
    const own = normalizedOrigin(origin);
    const host = String(first(req.headers.host) ?? '').toLowerCase();
    const allowed = own !== null && (new URL(own).host === host || settings.allowedOrigins.some((o) => normalizedOrigin(o) === own));
    if (!allowed) return refusal('foreign_origin', `Origin '${origin.slice(0, 200)}' is not this server's`, origin);
    proven = true;
  } else if (site !== undefined) {
    if (site !== 'same-origin' && site !== 'none') return refusal('cross_site', `The browser says the request comes from another site (Sec-Fetch-Site: ${site.slice(0, 40)})`, null);
    proven = site === 'same-origin';
  }
  if (check === 'write' && byCookie && !proven && req.headers[SAME_ORIGIN_HEADER] === undefined) {
    return refusal('unproven', 'A request authenticated by the login cookie must come from a dp page (Origin header, or the X-DP-Request header)', null);
  }
  return null;
}

function refusal(reason: string, what: string, origin: string | null): DpError {
  return new DpError(
    403,
    'cross_origin_refused',
    `${what}: requests using the login cookie are accepted from dp's own pages only. Send the token in the Authorization header (or ?access_token= on a stream), or add the page's origin to server.allowed_origins in project.yml (reverse proxies)`,
    { reason, ...(origin === null ? {} : { origin: origin.slice(0, 200) }) },
  );
}

/**
 * Open event streams and WebSockets per user: `acquire` throws 429 `too_many_streams` past the
 * limit, else returns the release (idempotent) the caller runs when the connection ends.
 */
export class StreamLimiter {
  private readonly open = new Map<string, number>();

  constructor(private readonly max: () => number) {}

  acquire(key: string): () => void {
    const held = this.open.get(key) ?? 0;
    const max = this.max();
    if (held >= max) {
      throw new DpError(
        429,
        'too_many_streams',
        `You already hold ${held} open event streams and sockets, the most one user may (server.max_streams_per_user); close some (other tabs or clients) and retry`,
        { open: held, max },
        { 'Retry-After': '5' },
      );
    }
    this.open.set(key, held + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.open.get(key) ?? 1) - 1;
      if (left > 0) this.open.set(key, left);
      else this.open.delete(key);
    };
  }

  /** Streams `key` holds now (tests, metrics). */
  count(key: string): number {
    return this.open.get(key) ?? 0;
  }
}

/** Whose streams a request counts against: the user, or the client address without --auth. */
export function streamOwner(req: FastifyRequest): string {
  return req.caller?.username ? `user:${req.caller.username}` : `address:${req.ip}`;
}
