import { forbidden } from './errors.js';

export type Role = 'viewer' | 'editor' | 'admin';
export type Permission = 'read' | 'write' | 'execute' | 'manage_users' | 'manage_secrets' | 'manage_environment';
/** `public` routes need no token even with --auth (login, status, setup, webhooks). */
export type RoutePermission = Permission | 'public';

export const ROLES: readonly Role[] = ['viewer', 'editor', 'admin'];
export const PERMISSIONS: readonly Permission[] = ['read', 'write', 'execute', 'manage_users', 'manage_secrets', 'manage_environment'];

/** Roles are cumulative (docs/decisions.md "Authentication" 7). */
export const ROLE_PERMISSIONS: Readonly<Record<Role, readonly Permission[]>> = {
  viewer: ['read'],
  editor: ['read', 'write', 'execute'],
  admin: ['read', 'write', 'execute', 'manage_users', 'manage_secrets', 'manage_environment'],
};

/** The minimum role that holds a permission. */
export function minimumRole(permission: Permission): Role {
  for (const role of ROLES) if (ROLE_PERMISSIONS[role].includes(permission)) return role;
  return 'admin';
}

export function isRole(value: unknown): value is Role {
  return typeof value === 'string' && (ROLES as readonly string[]).includes(value);
}

/** Who is calling. Without --auth every caller is an unauthenticated admin. */
export interface Caller {
  username: string | null;
  role: Role;
  display_name?: string | null;
  /** False when the server runs without --auth (or for the local CLI). */
  authenticated: boolean;
}

export function hasPermission(caller: Caller, permission: Permission): boolean {
  return ROLE_PERMISSIONS[caller.role].includes(permission);
}

export function requirePermission(caller: Caller, permission: Permission): void {
  if (!hasPermission(caller, permission)) {
    throw forbidden('insufficient_role', `This action needs the '${permission}' permission; role '${caller.role}' does not have it`, {
      required_permission: permission,
      required_role: minimumRole(permission),
      role: caller.role,
    });
  }
}

/** The caller the CLI acts as: it owns the database file, so it is an admin. */
export const LOCAL_ADMIN: Caller = Object.freeze({ username: null, role: 'admin', authenticated: false });

/**
 * Whether relations in `schema` are hidden from `role` on every route that names or describes
 * relations: `_service` (dp's bookkeeping) from everyone but admins, `_masking` (the masking
 * keys' pads, which no statement may read) from everyone. DuckDB names are case-insensitive.
 */
export function schemaHiddenFrom(schema: string | null | undefined, role: Role): boolean {
  const lower = (schema ?? '').toLowerCase();
  return lower === '_masking' || (lower === '_service' && role !== 'admin');
}
