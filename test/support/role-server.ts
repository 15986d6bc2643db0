/**
 * A real server with --auth and a logged-in token for each role, for tests that compare what
 * the roles may see: the admin made by the first-user setup (`root`), then a viewer and an
 * editor it creates (user name = role, password `<role>pw`).
 */
import assert from 'node:assert/strict';
import type { Clock } from '../../sdk/index.js';
import { startServer, type TestServer } from '../helpers.js';

export type Role = 'viewer' | 'editor' | 'admin';

export interface RoleServer {
  s: TestServer;
  root: string;
  tokens: Record<Role, string>;
}

export async function startServerWithRoles(root: string, options: { clock?: Clock; env?: string } = {}): Promise<RoleServer> {
  const s = await startServer(root, { auth: true, clock: options.clock, env: options.env });
  const setup = await s.request('POST', '/api/auth/setup', { username: 'root', password: 'rootpw', role: 'admin' });
  assert.equal(setup.status, 200, setup.text);
  const tokens = { admin: setup.body.token } as Record<Role, string>;
  for (const role of ['viewer', 'editor'] as const) {
    const created = await s.request('POST', '/api/users', { username: role, password: `${role}pw`, role }, { token: tokens.admin });
    assert.ok(created.status < 300, created.text);
    tokens[role] = (await s.request('POST', '/api/auth/login', { username: role, password: `${role}pw` })).body.token;
  }
  return { s, root, tokens };
}
