import crypto from 'node:crypto';
import { promisify } from 'node:util';

const pbkdf2 = promisify(crypto.pbkdf2);

/** docs/decisions.md "Authentication" 5: PBKDF2-SHA256, 100000 iterations, a 32-byte salt per user. */
export const PBKDF2_ITERATIONS = 100_000;
export const PBKDF2_DIGEST = 'sha256';
export const SALT_BYTES = 32;
const HASH_BYTES = 32;

/** Opaque tokens: a recognisable prefix (so secret scanners and logs can spot them) plus 32 random bytes. */
export const TOKEN_PREFIX = 'dp_';
const TOKEN_BYTES = 32;
/** 32 bytes in base64url are 43 characters. */
export const TOKEN_PATTERN = /^dp_[A-Za-z0-9_-]{43}$/;

/**
 * Compares two secrets in time that depends only on their lengths' SHA-256 digests, never on
 * where they first differ. Both sides are hashed first so inputs of different lengths still go
 * through crypto.timingSafeEqual (which requires equal lengths) instead of returning early.
 * `crypto.timingSafeEqual` is looked up on the module object at call time, so tests can spy on it.
 */
export function constantTimeEqual(a: string | Buffer, b: string | Buffer): boolean {
  const da = crypto.createHash('sha256').update(a).digest();
  const db = crypto.createHash('sha256').update(b).digest();
  const sameDigest = crypto.timingSafeEqual(da, db);
  // Equal digests of unequal inputs would need a SHA-256 collision; the length check is free.
  return sameDigest && Buffer.byteLength(a) === Buffer.byteLength(b);
}

export interface PasswordHash {
  /** Hex of the PBKDF2 output. */
  hash: string;
  /** Hex of the random salt. */
  salt: string;
}

/** Async PBKDF2 so hashing (~50 ms) runs on libuv's pool and never blocks the server. */
export async function hashPassword(password: string, saltHex?: string): Promise<PasswordHash> {
  const salt = saltHex ? Buffer.from(saltHex, 'hex') : crypto.randomBytes(SALT_BYTES);
  const derived = await pbkdf2(password, salt, PBKDF2_ITERATIONS, HASH_BYTES, PBKDF2_DIGEST);
  return { hash: derived.toString('hex'), salt: salt.toString('hex') };
}

export async function verifyPassword(password: string, stored: PasswordHash): Promise<boolean> {
  const { hash } = await hashPassword(password, stored.salt);
  return constantTimeEqual(Buffer.from(hash, 'hex'), Buffer.from(stored.hash, 'hex'));
}

/**
 * A fixed, valid-looking hash to verify against when the username is unknown, so a failed login
 * costs the same PBKDF2 work whether or not the user exists (no username probing by timing).
 */
export const DECOY_PASSWORD_HASH: PasswordHash = {
  hash: '0'.repeat(HASH_BYTES * 2),
  salt: '1'.repeat(SALT_BYTES * 2),
};

export function newToken(): string {
  return TOKEN_PREFIX + crypto.randomBytes(TOKEN_BYTES).toString('base64url');
}

/** Only this digest is stored; the token itself exists only in the client's hands. */
export function hashToken(token: string): string {
  // Every authenticated request hashes its token: one call, no Hash object to collect.
  return crypto.hash('sha256', token, 'hex');
}
