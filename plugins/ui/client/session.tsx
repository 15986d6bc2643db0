/**
 * Who is using the UI and what they may do. The shell provides it; pages read it with
 * useSession() / useCan() to hide or disable what the role may not do (the API refuses it anyway).
 */
import { createContext, useContext, type ReactNode } from 'react';

export type Role = 'viewer' | 'editor' | 'admin';
export type Permission = 'read' | 'write' | 'execute' | 'manage_users' | 'manage_secrets' | 'manage_environment';

/** The role → permission table of docs/auth.md (roles are cumulative). */
export const ROLE_PERMISSIONS: Record<Role, readonly Permission[]> = {
  viewer: ['read'],
  editor: ['read', 'write', 'execute'],
  admin: ['read', 'write', 'execute', 'manage_users', 'manage_secrets', 'manage_environment'],
};

export interface SessionUser {
  username: string | null;
  role: Role;
  display_name?: string | null;
  /** False when the server runs without --auth. */
  authenticated: boolean;
}

export interface Session {
  /** True when `dp serve --auth`: the user logged in. */
  authEnabled: boolean;
  user: SessionUser;
  /** The project's name and active environment (from /api/health). */
  project: { name: string; environment: string | null };
  /** Names of the enabled plugins (a page skips calls to a disabled one). */
  plugins: string[];
  can(permission: Permission): boolean;
  logout(): Promise<void>;
  /** Asks the shell to re-read the project, environment and pages (after an environment switch). */
  refresh(): void;
}

export const SessionContext = createContext<Session | null>(null);

export function SessionProvider({ value, children }: { value: Session; children: ReactNode }) {
  return <SessionContext.Provider value={value}>{children}</SessionContext.Provider>;
}

export function useSession(): Session {
  const s = useContext(SessionContext);
  if (!s) throw new Error('useSession() outside the dp shell');
  return s;
}

/** True when the user's role has the permission. */
export function useCan(permission: Permission): boolean {
  return useSession().can(permission);
}

/** Renders its children only when the role has the permission (or `otherwise`). */
export function IfCan({ permission, children, otherwise = null }: { permission: Permission; children: ReactNode; otherwise?: ReactNode }) {
  return <>{useCan(permission) ? children : otherwise}</>;
}

export function roleCan(role: Role, permission: Permission): boolean {
  return ROLE_PERMISSIONS[role]?.includes(permission) ?? false;
}
