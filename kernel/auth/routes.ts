import type { FastifyReply } from 'fastify';
import { DpError, notFound } from '../../sdk/errors.js';
import type { RouteDefinition } from '../../sdk/plugin.js';
import type { AuthHost } from './host.js';
import { LoginRateLimiter } from './rate-limit.js';
import { PASSWORD_MAX, PASSWORD_MIN, USERNAME_MAX, validateRole, type UserRecord, type UserStore } from './users.js';

export const TOKEN_COOKIE = 'dp_token';

const ROLE_SCHEMA = { type: 'string', enum: ['viewer', 'editor', 'admin'] };
const USERNAME_SCHEMA = { type: 'string', minLength: 1, maxLength: USERNAME_MAX, pattern: '^[A-Za-z0-9_.-]+$' };
const PASSWORD_SCHEMA = { type: 'string', minLength: PASSWORD_MIN, maxLength: PASSWORD_MAX };
const DISPLAY_NAME_SCHEMA = { type: ['string', 'null'], maxLength: 200 };
const USER_SCHEMA = {
  type: 'object',
  properties: {
    username: { type: 'string' },
    role: ROLE_SCHEMA,
    display_name: { type: ['string', 'null'] },
    created_at: { type: 'string' },
    last_login: { type: ['string', 'null'] },
  },
};
const TOKEN_RESPONSE = {
  type: 'object',
  properties: { token: { type: 'string' }, username: { type: 'string' }, role: ROLE_SCHEMA, expires_at: { type: 'string' } },
};
const SECRET_ROW = { type: 'object', properties: { key: { type: 'string' }, masked_value: { type: 'string' } } };
const SECRET_KEY_SCHEMA = { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]*$', maxLength: 200 };

export interface AuthRouteDeps {
  app: AuthHost;
  users: UserStore;
  limiter: LoginRateLimiter;
  tokenLifetimeMs: () => number;
  /** The token this request carried (header or cookie), for logout. */
  presentedToken: (headers: Record<string, string | string[] | undefined>) => string | null;
}

/** Kernel routes for login, users and secrets (docs/decisions.md "Authentication"). */
export function authRoutes({ app, users, limiter, tokenLifetimeMs, presentedToken }: AuthRouteDeps): RouteDefinition[] {
  // The cookie lets the browser UI and /docs authenticate page loads; HttpOnly keeps it away
  // from scripts and SameSite=Strict keeps other sites from riding on it.
  const cookieOptions = { path: '/', httpOnly: true, sameSite: 'strict' } as const;
  const setTokenCookie = (reply: FastifyReply, token: string) =>
    reply.setCookie(TOKEN_COOKIE, token, { ...cookieOptions, maxAge: Math.floor(tokenLifetimeMs() / 1000) });
  const clearTokenCookie = (reply: FastifyReply) => reply.clearCookie(TOKEN_COOKIE, cookieOptions);
  const publicUser = (u: UserRecord) => ({ username: u.username, role: u.role, display_name: u.display_name, created_at: u.created_at, last_login: u.last_login });
  const usernameParams = { type: 'object', properties: { username: { type: 'string', minLength: 1 } }, required: ['username'] };

  return [
    {
      method: 'GET',
      url: '/api/auth/status',
      permission: 'public',
      summary: 'Whether authentication is on and whether the first user must still be created',
      schema: { response: { 200: { type: 'object', properties: { auth_enabled: { type: 'boolean' }, needs_setup: { type: 'boolean' } } } } },
      handler: async () => ({ auth_enabled: app.authEnabled, needs_setup: app.authEnabled && (await users.count()) === 0 }),
    },
    {
      method: 'POST',
      url: '/api/auth/setup',
      permission: 'public',
      summary: 'Create the first user (an admin); refused with 409 once any user exists',
      schema: {
        body: {
          type: 'object',
          required: ['username', 'password'],
          properties: { username: USERNAME_SCHEMA, password: PASSWORD_SCHEMA, role: { ...ROLE_SCHEMA, default: 'admin' }, display_name: DISPLAY_NAME_SCHEMA },
        },
        response: { 200: TOKEN_RESPONSE, 409: { type: 'object', additionalProperties: true } },
      },
      handler: async (req, reply) => {
        const body = req.body as { username: string; password: string; role?: string; display_name?: string | null };
        if (validateRole(body.role ?? 'admin') !== 'admin') {
          throw new DpError(400, 'invalid_role', "The first user must be an admin (role 'admin'), or nobody could manage users", { field: 'role' });
        }
        const user = await users.create({ ...body, role: 'admin' }, { onlyIfNoUsers: true });
        const issued = await users.issueToken(user.username);
        app.log.info('first admin created', { username: user.username });
        setTokenCookie(reply, issued.token);
        return { token: issued.token, username: user.username, role: user.role, expires_at: issued.expires_at };
      },
    },
    {
      method: 'POST',
      url: '/api/auth/login',
      permission: 'public',
      summary: `Exchange username and password for a bearer token (10 failures of one username from one address per 15 minutes, 50 from one address or for one username, then 429)`,
      schema: {
        body: { type: 'object', required: ['username', 'password'], properties: { username: { type: 'string', maxLength: USERNAME_MAX }, password: { type: 'string', maxLength: PASSWORD_MAX } } },
        response: { 200: TOKEN_RESPONSE },
      },
      handler: async (req, reply) => {
        const { username, password } = req.body as { username: string; password: string };
        const wait = limiter.retryAfterSeconds(req.ip, username);
        if (wait > 0) {
          const by = limiter.blockedBy(req.ip, username) ?? 'address_and_username';
          const what = { address_and_username: 'for this username from this address', address: 'from this address', username: 'for this username' }[by];
          throw new DpError(
            429,
            'too_many_login_attempts',
            `Too many failed logins ${what}; try again in ${wait} s`,
            { retry_after_seconds: wait, limited_by: by },
            { 'Retry-After': String(wait) },
          );
        }
        const user = await users.authenticate(username, password);
        if (!user) {
          limiter.recordFailure(req.ip, username);
          app.log.warn('login failed', { username, ip: req.ip });
          throw new DpError(401, 'invalid_credentials', 'Unknown username or wrong password');
        }
        // Only this username's failures are forgiven: a login as one account never resets the
        // count of guesses at another from the same address.
        limiter.recordSuccess(req.ip, user.username);
        const issued = await users.issueToken(user.username);
        setTokenCookie(reply, issued.token);
        return { token: issued.token, username: user.username, role: user.role, expires_at: issued.expires_at };
      },
    },
    {
      method: 'POST',
      url: '/api/auth/logout',
      permission: 'read',
      summary: 'Revoke the token this request carries and clear the login cookie',
      handler: async (req, reply) => {
        const token = presentedToken(req.headers);
        if (token) await users.revokeToken(token);
        clearTokenCookie(reply);
        return { ok: true };
      },
    },
    {
      method: 'GET',
      url: '/api/auth/me',
      permission: 'read',
      summary: 'The calling user',
      schema: {
        response: {
          200: { type: 'object', properties: { username: { type: ['string', 'null'] }, role: ROLE_SCHEMA, display_name: { type: ['string', 'null'] }, authenticated: { type: 'boolean' } } },
        },
      },
      handler: (req) => ({ username: req.caller.username, role: req.caller.role, display_name: req.caller.display_name ?? null, authenticated: req.caller.authenticated }),
    },
    {
      method: 'GET',
      url: '/api/users',
      permission: 'manage_users',
      summary: 'All users (never passwords, hashes or salts)',
      schema: { response: { 200: { type: 'array', items: USER_SCHEMA } } },
      handler: async () => (await users.list()).map(publicUser),
    },
    {
      method: 'POST',
      url: '/api/users',
      permission: 'manage_users',
      summary: 'Create a user',
      schema: {
        body: {
          type: 'object',
          required: ['username', 'password', 'role'],
          properties: { username: USERNAME_SCHEMA, password: PASSWORD_SCHEMA, role: ROLE_SCHEMA, display_name: DISPLAY_NAME_SCHEMA },
          additionalProperties: false,
        },
        response: { 201: USER_SCHEMA },
      },
      handler: async (req, reply) => {
        const user = await users.create(req.body as Record<string, unknown> as never);
        app.log.info('user created', { username: user.username, role: user.role, by: req.caller.username });
        reply.code(201);
        return publicUser(user);
      },
    },
    {
      method: 'PUT',
      url: '/api/users/:username',
      permission: 'manage_users',
      summary: "Change a user's role, password or display name (a new role or password revokes their tokens)",
      schema: {
        params: usernameParams,
        body: {
          type: 'object',
          minProperties: 1,
          properties: { role: ROLE_SCHEMA, password: PASSWORD_SCHEMA, display_name: DISPLAY_NAME_SCHEMA },
          additionalProperties: false,
        },
        response: { 200: USER_SCHEMA },
      },
      handler: async (req) => {
        const { username } = req.params as { username: string };
        const body = req.body as { role?: string; password?: string; display_name?: string | null };
        const user = await users.update(username, body);
        app.log.info('user updated', { username, changed: Object.keys(body), by: req.caller.username });
        return publicUser(user);
      },
    },
    {
      method: 'DELETE',
      url: '/api/users/:username',
      permission: 'manage_users',
      summary: 'Delete a user and revoke all their tokens',
      schema: { params: usernameParams },
      handler: async (req) => {
        const { username } = req.params as { username: string };
        await users.remove(username);
        app.log.info('user deleted', { username, by: req.caller.username });
        return { deleted: username };
      },
    },
    {
      method: 'GET',
      url: '/api/secrets',
      permission: 'manage_secrets',
      summary: 'Secret keys in .env with masked values (values are never returned)',
      schema: { response: { 200: { type: 'array', items: SECRET_ROW } } },
      handler: () => app.secrets.list(),
    },
    {
      method: 'POST',
      url: '/api/secrets',
      permission: 'manage_secrets',
      summary: 'Set or update a secret in .env (atomic write; other lines and comments kept)',
      schema: {
        body: { type: 'object', required: ['key', 'value'], properties: { key: SECRET_KEY_SCHEMA, value: { type: 'string', maxLength: 65536 } }, additionalProperties: false },
        response: { 200: SECRET_ROW },
      },
      handler: async (req) => {
        const { key, value } = req.body as { key: string; value: string };
        await app.secrets.set(key, value);
        app.log.info('secret set', { key, by: req.caller.username });
        return app.secrets.list().find((s) => s.key === key) ?? { key, masked_value: '' };
      },
    },
    {
      method: 'DELETE',
      url: '/api/secrets/:key',
      permission: 'manage_secrets',
      summary: 'Delete a secret from .env',
      schema: { params: { type: 'object', properties: { key: SECRET_KEY_SCHEMA }, required: ['key'] } },
      handler: async (req) => {
        const { key } = req.params as { key: string };
        if (!(await app.secrets.delete(key))) throw notFound('secret_not_found', `No secret '${key}' in .env`, { key });
        app.log.info('secret deleted', { key, by: req.caller.username });
        return { deleted: key };
      },
    },
  ];
}
