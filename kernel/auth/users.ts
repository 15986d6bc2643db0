import path from 'node:path';
import { isRole, ROLES, type Role } from '../../sdk/auth.js';
import type { DatabasePort, MigrationStep } from '../../sdk/db.js';
import { badRequest, conflict, notFound } from '../../sdk/errors.js';
import { constantTimeEqual, DECOY_PASSWORD_HASH, hashPassword, hashToken, newToken, TOKEN_PATTERN, verifyPassword } from './crypto.js';

/** `_service.users` and `_service.tokens`, run once each by the kernel's migration runner. */
export const AUTH_MIGRATIONS: MigrationStep[] = [
  {
    id: 'auth-001',
    sql: `CREATE TABLE IF NOT EXISTS _service.users (
     username VARCHAR PRIMARY KEY,
     password_hash VARCHAR NOT NULL,
     salt VARCHAR NOT NULL,
     role VARCHAR NOT NULL,
     display_name VARCHAR,
     created_at TIMESTAMP NOT NULL,
     last_login TIMESTAMP
   )`,
  },
  {
    id: 'auth-002',
    sql: `CREATE TABLE IF NOT EXISTS _service.tokens (
     token_hash VARCHAR PRIMARY KEY,
     username VARCHAR NOT NULL,
     created_at TIMESTAMP NOT NULL,
     expires_at TIMESTAMP NOT NULL
   )`,
  },
];

/**
 * Users and tokens live in one DuckDB file per project, not in the environment's database: a
 * switch of environment (or a fresh environment file) never leaves the server without users,
 * so it never reopens first-user setup. The folder is hidden, so neither the files API nor a
 * model's file read reaches it, and user SQL runs on another DuckDB instance that has no
 * catalog entry for it.
 */
export function usersDatabaseFile(projectRoot: string): string {
  return path.join(projectRoot, '.dp', 'users.duckdb');
}

/** Owner of the one-time import of users from the environment database (before per-project users). */
const LEGACY_IMPORT = 'kernel.auth.legacy-import';

/**
 * Moves users and tokens from an environment database's `_service.users`/`_service.tokens`
 * (where earlier versions kept them) into the project store, once: only while the store has no
 * user and has never imported. The tables are then dropped from that database. Returns how many
 * users came over.
 */
export async function importLegacyUsers(store: DatabasePort, legacy: DatabasePort | null): Promise<number> {
  const done = Number((await store.value<number>('SELECT count(*) FROM _service.migrations WHERE owner = $1', [LEGACY_IMPORT])) ?? 0);
  if (done > 0) return 0;
  let users: Array<Record<string, unknown>> = [];
  let tokens: Array<Record<string, unknown>> = [];
  const storeEmpty = Number((await store.value<number>('SELECT count(*) FROM _service.users')) ?? 0) === 0;
  if (legacy && storeEmpty) {
    const tables = await legacy.all<{ t: string }>("SELECT table_name AS t FROM duckdb_tables() WHERE schema_name = '_service' AND table_name IN ('users', 'tokens')");
    const has = new Set(tables.map((r) => r.t));
    if (has.has('users')) {
      users = await legacy.all("SELECT username, password_hash, salt, role, display_name, strftime(created_at, '%Y-%m-%d %H:%M:%S') AS created_at, strftime(last_login, '%Y-%m-%d %H:%M:%S') AS last_login FROM _service.users");
    }
    if (has.has('tokens') && users.length) {
      tokens = await legacy.all("SELECT token_hash, username, strftime(created_at, '%Y-%m-%d %H:%M:%S') AS created_at, strftime(expires_at, '%Y-%m-%d %H:%M:%S') AS expires_at FROM _service.tokens");
    }
  }
  await store.withConnection((c) =>
    c.transaction(async (t) => {
      for (const u of users) {
        await t.run(
          'INSERT INTO _service.users (username, password_hash, salt, role, display_name, created_at, last_login) VALUES ($1, $2, $3, $4, $5, $6::TIMESTAMP, $7::TIMESTAMP)',
          [u.username, u.password_hash, u.salt, u.role, u.display_name, u.created_at, u.last_login],
        );
      }
      for (const k of tokens) {
        await t.run('INSERT INTO _service.tokens (token_hash, username, created_at, expires_at) VALUES ($1, $2, $3::TIMESTAMP, $4::TIMESTAMP)', [k.token_hash, k.username, k.created_at, k.expires_at]);
      }
      await t.run("INSERT INTO _service.migrations (owner, id) VALUES ($1, 'import')", [LEGACY_IMPORT]);
    }),
  );
  // The copy is the only one now: no stale password hashes stay behind in the environment.
  if (legacy && users.length) await legacy.run('DROP TABLE IF EXISTS _service.tokens; DROP TABLE IF EXISTS _service.users');
  return users.length;
}

export const USERNAME_PATTERN = /^[A-Za-z0-9_.-]+$/;
export const USERNAME_MAX = 64;
export const PASSWORD_MIN = 4;
/** PBKDF2 pre-hashes long keys, so this bound only keeps request bodies sane. */
export const PASSWORD_MAX = 1024;
export const DISPLAY_NAME_MAX = 200;

/** A user as the API shows it: never the hash or the salt. Timestamps are UTC `YYYY-MM-DD HH:MM:SS`. */
export interface UserRecord {
  username: string;
  role: Role;
  display_name: string | null;
  created_at: string;
  last_login: string | null;
}

export interface NewUser {
  username: unknown;
  password: unknown;
  role: unknown;
  display_name?: unknown;
}

export interface UserChanges {
  role?: unknown;
  password?: unknown;
  display_name?: unknown;
}

export type TokenLookup = { status: 'valid'; user: UserRecord } | { status: 'expired' } | { status: 'invalid' };

export function validateUsername(value: unknown): string {
  if (typeof value !== 'string' || value.length === 0) {
    throw badRequest('invalid_username', "'username' is required", { field: 'username' });
  }
  if (value.length > USERNAME_MAX || !USERNAME_PATTERN.test(value)) {
    throw badRequest('invalid_username', `'username' may hold only letters, digits, underscore, dot and hyphen (at most ${USERNAME_MAX} characters)`, {
      field: 'username',
    });
  }
  return value;
}

export function validatePassword(value: unknown): string {
  if (typeof value !== 'string' || value.length < PASSWORD_MIN) {
    throw badRequest('invalid_password', `'password' must be at least ${PASSWORD_MIN} characters`, { field: 'password' });
  }
  if (value.length > PASSWORD_MAX) {
    throw badRequest('invalid_password', `'password' must be at most ${PASSWORD_MAX} characters`, { field: 'password' });
  }
  return value;
}

export function validateRole(value: unknown): Role {
  if (!isRole(value)) throw badRequest('invalid_role', `'role' must be one of ${ROLES.join(', ')}`, { field: 'role', allowed: ROLES });
  return value;
}

function validateDisplayName(value: unknown): string | null {
  if (value === undefined || value === null || value === '') return null;
  if (typeof value !== 'string' || value.length > DISPLAY_NAME_MAX) {
    throw badRequest('invalid_display_name', `'display_name' must be a string of at most ${DISPLAY_NAME_MAX} characters`, { field: 'display_name' });
  }
  return value;
}

/** A new user's fields, checked and normalized (the store's checks; `dp users` beside a server makes them too). */
export function checkNewUser(input: NewUser): { username: string; password: string; role: Role; display_name: string | null } {
  return {
    username: validateUsername(input.username),
    password: validatePassword(input.password),
    role: validateRole(input.role),
    display_name: validateDisplayName(input.display_name),
  };
}

/** The changes to a user, checked and normalized; at least one is required. */
export function checkUserChanges(changes: UserChanges): { role?: Role; password?: string; display_name?: string | null } {
  const role = changes.role === undefined ? undefined : validateRole(changes.role);
  const password = changes.password === undefined ? undefined : validatePassword(changes.password);
  const displayName = changes.display_name === undefined ? undefined : validateDisplayName(changes.display_name);
  if (role === undefined && password === undefined && displayName === undefined) {
    throw badRequest('nothing_to_update', "Send at least one of 'role', 'password', 'display_name'", { field: 'role' });
  }
  return { role, password, display_name: displayName };
}

/** UTC wall time in the `YYYY-MM-DD HH:MM:SS` form of user timestamps (docs/decisions.md "Authentication"). */
function utcStamp(ms: number): string {
  return new Date(ms).toISOString().slice(0, 19).replace('T', ' ');
}

const USER_COLUMNS = `username, role, display_name,
  strftime(created_at, '%Y-%m-%d %H:%M:%S') AS created_at,
  strftime(last_login, '%Y-%m-%d %H:%M:%S') AS last_login`;

const MAX_CACHED_TOKENS = 10_000;

/**
 * Users and their tokens in the database. Every mutation runs under one in-process lock, so
 * "no user exists yet" (setup) and "another admin remains" hold between the check and the write.
 * Resolved tokens are cached in memory (a DuckDB lookup per request would dominate small
 * requests); any change to users or tokens clears the cache, so revocation is immediate. No other
 * process can change these tables meanwhile: DuckDB lets only the serving process open the file.
 */
export class UserStore {
  private queue: Promise<unknown> = Promise.resolve();
  private readonly tokenCache = new Map<string, { user: UserRecord; expiresAt: number }>();

  constructor(
    /** The project's user store (see usersDatabaseFile). */
    readonly database: DatabasePort,
    /** Token lifetime in milliseconds, read per issue so a project.yml change applies on restart. */
    private readonly tokenLifetimeMs: () => number,
    private readonly now: () => number = Date.now,
  ) {}

  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private cacheKey(tokenHash: string): string {
    return tokenHash;
  }

  private invalidateTokens(): void {
    this.tokenCache.clear();
  }

  async count(): Promise<number> {
    return Number((await this.database.value<number>('SELECT count(*) FROM _service.users')) ?? 0);
  }

  async list(): Promise<UserRecord[]> {
    return this.database.all<UserRecord & Record<string, unknown>>(`SELECT ${USER_COLUMNS} FROM _service.users ORDER BY username`);
  }

  async get(username: string): Promise<UserRecord | null> {
    const rows = await this.database.all<UserRecord & Record<string, unknown>>(`SELECT ${USER_COLUMNS} FROM _service.users WHERE username = $1`, [username]);
    return rows[0] ?? null;
  }

  private async require(username: string): Promise<UserRecord> {
    const user = await this.get(username);
    if (!user) throw notFound('user_not_found', `No user '${username}'`, { username });
    return user;
  }

  /** Creates a user; with `onlyIfNoUsers` (first-user setup) it refuses once any user exists. */
  async create(input: NewUser, options: { onlyIfNoUsers?: boolean } = {}): Promise<UserRecord> {
    const { username, password, role, display_name: displayName } = checkNewUser(input);
    const { hash, salt } = await hashPassword(password);
    return this.exclusive(async () => {
      if (options.onlyIfNoUsers && (await this.count()) > 0) {
        throw conflict('setup_done', 'Setup is already done: a user exists. Log in as an admin to create more users', {});
      }
      if (await this.get(username)) throw conflict('user_exists', `User '${username}' already exists`, { field: 'username', username });
      await this.database.run(
        'INSERT INTO _service.users (username, password_hash, salt, role, display_name, created_at) VALUES ($1, $2, $3, $4, $5, $6::TIMESTAMP)',
        [username, hash, salt, role, displayName, utcStamp(this.now())],
      );
      return this.require(username);
    });
  }

  /** Changes role, password and/or display name; a new role or password revokes the user's tokens. */
  async update(username: string, changes: UserChanges): Promise<UserRecord> {
    const { role, password, display_name: displayName } = checkUserChanges(changes);
    const hashed = password === undefined ? undefined : await hashPassword(password);
    return this.exclusive(async () => {
      const current = await this.require(username);
      if (role !== undefined && role !== 'admin' && current.role === 'admin') await this.assertAnotherAdmin(username);
      await this.database.withConnection((c) =>
        c.transaction(async (t) => {
          if (role !== undefined) await t.run('UPDATE _service.users SET role = $1 WHERE username = $2', [role, username]);
          if (hashed) await t.run('UPDATE _service.users SET password_hash = $1, salt = $2 WHERE username = $3', [hashed.hash, hashed.salt, username]);
          if (displayName !== undefined) await t.run('UPDATE _service.users SET display_name = $1 WHERE username = $2', [displayName, username]);
          if ((role !== undefined && role !== current.role) || hashed) await t.run('DELETE FROM _service.tokens WHERE username = $1', [username]);
        }),
      );
      this.invalidateTokens();
      return this.require(username);
    });
  }

  /** Deletes a user and revokes all their tokens. */
  async remove(username: string): Promise<void> {
    await this.exclusive(async () => {
      const current = await this.require(username);
      if (current.role === 'admin') await this.assertAnotherAdmin(username);
      await this.database.withConnection((c) =>
        c.transaction(async (t) => {
          await t.run('DELETE FROM _service.tokens WHERE username = $1', [username]);
          await t.run('DELETE FROM _service.users WHERE username = $1', [username]);
        }),
      );
      this.invalidateTokens();
    });
  }

  /** Keeps at least one admin, or nobody could manage users or secrets any more. */
  private async assertAnotherAdmin(username: string): Promise<void> {
    const others = Number((await this.database.value<number>("SELECT count(*) FROM _service.users WHERE role = 'admin' AND username <> $1", [username])) ?? 0);
    if (others === 0) {
      throw conflict('last_admin', `'${username}' is the only admin; make another user admin first`, { username });
    }
  }

  /**
   * Checks a username and password. Unknown users are checked against a decoy hash so the
   * answer takes the same PBKDF2 work either way. Returns the user, or null.
   */
  async authenticate(username: unknown, password: unknown): Promise<UserRecord | null> {
    const name = typeof username === 'string' ? username : '';
    const pass = typeof password === 'string' ? password : '';
    const rows = name
      ? await this.database.all<{ password_hash: string; salt: string }>('SELECT password_hash, salt FROM _service.users WHERE username = $1', [name])
      : [];
    const stored = rows[0] ? { hash: rows[0].password_hash, salt: rows[0].salt } : DECOY_PASSWORD_HASH;
    const ok = await verifyPassword(pass, stored);
    if (!ok || !rows[0]) return null;
    await this.database.run('UPDATE _service.users SET last_login = $1::TIMESTAMP WHERE username = $2', [utcStamp(this.now()), name]);
    return this.get(name);
  }

  async issueToken(username: string): Promise<{ token: string; expires_at: string }> {
    const token = newToken();
    const now = this.now();
    const expires = now + this.tokenLifetimeMs();
    await this.database.run('INSERT INTO _service.tokens (token_hash, username, created_at, expires_at) VALUES ($1, $2, $3::TIMESTAMP, $4::TIMESTAMP)', [
      hashToken(token),
      username,
      utcStamp(now),
      utcStamp(expires),
    ]);
    return { token, expires_at: new Date(expires).toISOString() };
  }

  /** Who holds this token: `invalid` for malformed, unknown or revoked tokens, `expired` past its lifetime. */
  async resolveToken(token: string): Promise<TokenLookup> {
    if (!TOKEN_PATTERN.test(token)) return { status: 'invalid' };
    const digest = hashToken(token);
    const key = this.cacheKey(digest);
    const cached = this.tokenCache.get(key);
    if (cached) {
      if (cached.expiresAt > this.now()) return { status: 'valid', user: cached.user };
      this.tokenCache.delete(key);
    }
    const rows = await this.database.all<{ token_hash: string; expires_ms: number } & UserRecord>(
      `SELECT t.token_hash, epoch_ms(t.expires_at) AS expires_ms, u.username, u.role, u.display_name,
              strftime(u.created_at, '%Y-%m-%d %H:%M:%S') AS created_at, strftime(u.last_login, '%Y-%m-%d %H:%M:%S') AS last_login
         FROM _service.tokens t JOIN _service.users u ON u.username = t.username
        WHERE t.token_hash = $1`,
      [digest],
    );
    const row = rows[0];
    // The lookup is by digest, which tells an attacker nothing about the token; the decision
    // itself is a constant-time comparison.
    if (!row || !constantTimeEqual(row.token_hash, digest)) return { status: 'invalid' };
    const expiresAt = Number(row.expires_ms);
    if (expiresAt <= this.now()) {
      await this.database.run('DELETE FROM _service.tokens WHERE token_hash = $1', [digest]);
      return { status: 'expired' };
    }
    const user: UserRecord = { username: row.username, role: row.role, display_name: row.display_name, created_at: row.created_at, last_login: row.last_login };
    if (this.tokenCache.size >= MAX_CACHED_TOKENS) this.tokenCache.clear();
    this.tokenCache.set(key, { user, expiresAt });
    return { status: 'valid', user };
  }

  /** Revokes one token (logout). */
  async revokeToken(token: string): Promise<void> {
    await this.exclusive(async () => {
      await this.database.run('DELETE FROM _service.tokens WHERE token_hash = $1', [hashToken(token)]);
      this.invalidateTokens();
    });
  }
}
