import type { FastifyRequest } from 'fastify';
import type { Caller } from '../../sdk/auth.js';
import { badRequest, DpError } from '../../sdk/errors.js';
import type { RouteDefinition, WebhookGuard } from '../../sdk/plugin.js';
import { requireOnFirstUse } from '../../sdk/require-on-first-use.js';
import type { AuthHost } from './host.js';
import { LoginRateLimiter } from './rate-limit.js';
import { authRoutes, TOKEN_COOKIE } from './routes.js';
import fs from 'node:fs';
import path from 'node:path';
import type { DatabasePort } from '../../sdk/db.js';
import { DuckDatabase, runMigrations } from '../database.js';
import { AUTH_MIGRATIONS, importLegacyUsers, UserStore, usersDatabaseFile } from './users.js';
import { verifyWebhookSecret, WEBHOOK_SECRET_HEADER } from './webhooks.js';

/** Authentication as the HTTP server sees it. */
export interface AuthProvider {
  /** Who sent this request; throws 401 when auth is on and the token is missing or bad. */
  resolveCaller(req: FastifyRequest): Promise<Caller>;
  /** Kernel routes: /api/auth/*, /api/users*, /api/secrets*. */
  routes(): RouteDefinition[];
  /** Users and tokens in the project's user store (also used by `dp users`). */
  users: UserStore;
  /** Closes the user store (shutdown). */
  close(): void;
  /** The webhook shared-secret check handed to plugins as ctx.webhooks. */
  webhooks: WebhookGuard;
}

const OPEN_CALLER: Caller = Object.freeze({ username: null, role: 'admin', authenticated: false });

/** Owner of the auth tables in _service.migrations; App.boot registers the same name. */
export const AUTH_MIGRATION_OWNER = 'kernel.auth';
export const DEFAULT_TOKEN_TTL_DAYS = 30;
const DAY_MS = 24 * 60 * 60 * 1000;

/** project.yml `auth.token_ttl_days` (default 30); anything but a positive number is refused at boot. */
export function tokenTtlDays(raw: Record<string, unknown>): number {
  const auth = raw.auth as Record<string, unknown> | undefined;
  if (auth === undefined || auth === null) return DEFAULT_TOKEN_TTL_DAYS;
  if (typeof auth !== 'object' || Array.isArray(auth)) {
    throw badRequest('invalid_project_yml', "project.yml: 'auth' must be a mapping (e.g. auth: {token_ttl_days: 30})", { file: 'project.yml', field: 'auth' });
  }
  const ttl = auth.token_ttl_days;
  if (ttl === undefined) return DEFAULT_TOKEN_TTL_DAYS;
  if (typeof ttl !== 'number' || !Number.isFinite(ttl) || ttl <= 0) {
    throw badRequest('invalid_project_yml', "project.yml: 'auth.token_ttl_days' must be a positive number of days", { file: 'project.yml', field: 'auth.token_ttl_days' });
  }
  return ttl;
}

function unauthenticated(code: string, message: string): DpError {
  return new DpError(401, code, message, {}, { 'WWW-Authenticate': 'Bearer realm="dp"' });
}

/** @fastify/cookie's parser, required on the first request with a Cookie header (a CLI command never loads it). */
const cookiePackage = requireOnFirstUse<typeof import('@fastify/cookie')>(import.meta.url, '@fastify/cookie');

/** Reads one cookie from a Cookie header with @fastify/cookie's parser (quoting, encoding, duplicates). */
function cookieValue(header: string | string[] | undefined, name: string): string | null {
  const text = Array.isArray(header) ? header.join('; ') : header;
  if (!text) return null;
  return cookiePackage().fastifyCookie.parse(text)[name] || null;
}

type Presented = { kind: 'none' } | { kind: 'malformed' } | { kind: 'token'; token: string };

/** The token a request carries: `Authorization: Bearer <token>`, else the `dp_token` cookie. */
function presented(headers: Record<string, string | string[] | undefined>): Presented {
  const authorization = headers.authorization;
  if (authorization !== undefined) {
    const m = /^Bearer[ ]+(\S+)[ ]*$/i.exec(Array.isArray(authorization) ? authorization[0] : authorization);
    return m ? { kind: 'token', token: m[1] } : { kind: 'malformed' };
  }
  const cookie = cookieValue(headers.cookie, TOKEN_COOKIE);
  return cookie ? { kind: 'token', token: cookie } : { kind: 'none' };
}

/**
 * How a request carries its credential: `explicit` (an Authorization header, which a page of
 * another origin cannot attach), `cookie` (the login cookie a browser sends on its own, so
 * cross-origin rules apply: kernel/http-guards.ts), or `none`.
 */
export function credentialKind(headers: Record<string, string | string[] | undefined>): 'explicit' | 'cookie' | 'none' {
  if (headers.authorization !== undefined) return 'explicit';
  return cookieValue(headers.cookie, TOKEN_COOKIE) ? 'cookie' : 'none';
}

/**
 * The project's user store: its own small DuckDB file and instance, opened on first use. On its
 * first open it imports the users an earlier version kept in the environment database `legacy`
 * returns. The engine sandbox applies to it as to the main database.
 */
export function openUserStore(projectRoot: string, legacy: () => DatabasePort | null, tokenLifetimeMs: () => number): { users: UserStore; db: DuckDatabase } {
  const file = usersDatabaseFile(projectRoot);
  const db = new DuckDatabase(file, { sandbox: { allowedDirectories: [path.dirname(file)], memoryLimit: '128MB' } });
  db.beforeOpen = () => fs.mkdirSync(path.dirname(file), { recursive: true });
  db.onOpen = async (opened) => {
    await runMigrations(opened, [{ owner: AUTH_MIGRATION_OWNER, steps: AUTH_MIGRATIONS }]);
    await importLegacyUsers(opened, legacy());
  };
  return { users: new UserStore(db, tokenLifetimeMs), db };
}

export function createAuth(app: AuthHost): AuthProvider {
  const tokenLifetimeMs = () => tokenTtlDays(app.project.config.raw) * DAY_MS;
  tokenLifetimeMs();
  const store = openUserStore(app.project.root, () => app.db, tokenLifetimeMs);
  const users = store.users;
  const limiter = new LoginRateLimiter();
  // Wrong webhook secrets are limited like logins: per webhook and client address.
  const webhookLimiter = new LoginRateLimiter();
  const webhooks: WebhookGuard = {
    header: WEBHOOK_SECRET_HEADER,
    // .env first (the project's documented source), then the process environment for deployments
    // that keep secrets off disk.
    verify: (name, headerValue, client = '') =>
      verifyWebhookSecret(name, headerValue, (key) => app.project.envVars[key] ?? process.env[key], { limiter: webhookLimiter, client }),
  };

  return {
    users,
    close: () => store.db.close(),
    webhooks,
    async resolveCaller(req) {
      if (!app.authEnabled) return OPEN_CALLER;
      const p = presented(req.headers);
      if (p.kind === 'none') throw unauthenticated('auth_required', 'Log in first: send Authorization: Bearer <token>');
      if (p.kind === 'malformed') throw unauthenticated('invalid_token', "The Authorization header must be 'Bearer <token>'");
      const found = await users.resolveToken(p.token);
      if (found.status === 'expired') throw unauthenticated('token_expired', 'The token has expired; log in again');
      if (found.status === 'invalid') throw unauthenticated('invalid_token', 'The token is not valid (unknown, revoked or malformed); log in again');
      return { username: found.user.username, role: found.user.role, display_name: found.user.display_name, authenticated: true };
    },
    routes() {
      return authRoutes({
        app,
        users,
        limiter,
        tokenLifetimeMs,
        presentedToken: (headers) => {
          const p = presented(headers);
          return p.kind === 'token' ? p.token : null;
        },
      });
    },
  };
}
