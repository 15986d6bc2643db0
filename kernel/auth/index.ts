import type { FastifyRequest } from 'fastify';
import type { Caller } from '../../sdk/auth.js';
import { unauthorized } from '../../sdk/errors.js';
import type { RouteDefinition } from '../../sdk/plugin.js';
import type { App } from '../app.js';

/** Authentication as the HTTP server sees it. */
export interface AuthProvider {
  /** _service tables (users, tokens), run as the kernel's migrations. */
  migrations: string[];
  /** Who sent this request; throws 401 when auth is on and the token is missing or bad. */
  resolveCaller(req: FastifyRequest): Promise<Caller>;
  /** Kernel routes: /api/auth/*, /api/users*, /api/secrets*. */
  routes(): RouteDefinition[];
}

const OPEN_CALLER: Caller = Object.freeze({ username: null, role: 'admin', authenticated: false });

export function createAuth(app: App): AuthProvider {
  return {
    migrations: [],
    async resolveCaller() {
      if (!app.authEnabled) return OPEN_CALLER;
      throw unauthorized('auth_required', 'Log in first: send Authorization: Bearer <token>');
    },
    routes() {
      return [
        {
          method: 'GET',
          url: '/api/auth/status',
          permission: 'public',
          summary: 'Whether authentication is on and whether the first user must be created',
          handler: async () => ({ auth_enabled: app.authEnabled, needs_setup: false }),
        },
      ];
    },
  };
}
