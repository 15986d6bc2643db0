/**
 * docs/auth.md "Login rate limit": 10 failed attempts per username from one client address per
 * 15 minutes, then 429 with Retry-After. Wider counts bound the other two ways of guessing, with
 * room for many people's typos: 50 failures from one address over any usernames (spraying), and
 * 50 failures naming one username from any addresses (one account guessed from many machines).
 * On a shared machine every user is 127.0.0.1: one person's typos lock out only their own
 * username from that address, never the admin.
 */
export const LOGIN_MAX_FAILURES = 10;
export const LOGIN_WINDOW_MS = 15 * 60 * 1000;
/** Failures one address (over all usernames), or one username (over all addresses), may add up to. */
export const LOGIN_MAX_SPREAD_FAILURES = 50;
/** Bounds memory when many addresses or names fail once; the least recently failing are forgotten first. */
const MAX_TRACKED_KEYS = 10_000;

interface Failure {
  at: number;
  /** The username the failed attempt named (normalized). */
  username: string;
}

/** Usernames compare case-insensitively here, so `Alice` and `alice` share one count. */
const normalize = (username: string) => String(username).toLowerCase();

export type LoginLimit = 'address_and_username' | 'address' | 'username';

/**
 * Counts failed logins in a sliding window per (address, username) pair, per address and per
 * username. A key at its limit inside the window is refused until the oldest failure that counts
 * ages out.
 *
 * A successful login clears only the failures that named the same username: its pair's, its
 * username's, and those among the address's. Failures against other usernames stay, so the
 * holder of one account cannot reset the address's count by logging in between guesses of
 * another account's password.
 */
export class LoginRateLimiter {
  private readonly byPair = new Map<string, Failure[]>();
  private readonly byAddress = new Map<string, Failure[]>();
  private readonly byUsername = new Map<string, Failure[]>();

  constructor(
    private readonly maxFailures = LOGIN_MAX_FAILURES,
    private readonly windowMs = LOGIN_WINDOW_MS,
    private readonly now: () => number = Date.now,
    private readonly maxSpreadFailures = Math.max(maxFailures, LOGIN_MAX_SPREAD_FAILURES),
  ) {}

  private recent(map: Map<string, Failure[]>, key: string): Failure[] {
    const cutoff = this.now() - this.windowMs;
    const kept = (map.get(key) ?? []).filter((f) => f.at > cutoff);
    if (kept.length) map.set(key, kept);
    else map.delete(key);
    return kept;
  }

  private wait(map: Map<string, Failure[]>, key: string, max: number): number {
    const recent = this.recent(map, key);
    if (recent.length < max) return 0;
    const oldestThatCounts = recent[recent.length - max].at;
    return Math.max(1, Math.ceil((oldestThatCounts + this.windowMs - this.now()) / 1000));
  }

  private waits(ip: string, username: string): Record<LoginLimit, number> {
    const name = normalize(username);
    return {
      address_and_username: this.wait(this.byPair, pairKey(ip, name), this.maxFailures),
      address: this.wait(this.byAddress, ip, this.maxSpreadFailures),
      username: this.wait(this.byUsername, name, this.maxSpreadFailures),
    };
  }

  /** Seconds until this address may try this username again, or 0 when it may try now. */
  retryAfterSeconds(ip: string, username: string): number {
    return Math.max(...Object.values(this.waits(ip, username)));
  }

  /** Which limit refuses the attempt now, or null. */
  blockedBy(ip: string, username: string): LoginLimit | null {
    const waits = this.waits(ip, username);
    return (Object.keys(waits) as LoginLimit[]).find((k) => waits[k] > 0) ?? null;
  }

  recordFailure(ip: string, username: string): void {
    const failure: Failure = { at: this.now(), username: normalize(username) };
    this.push(this.byPair, pairKey(ip, failure.username), failure, this.maxFailures);
    this.push(this.byAddress, ip, failure, this.maxSpreadFailures);
    this.push(this.byUsername, failure.username, failure, this.maxSpreadFailures);
  }

  private push(map: Map<string, Failure[]>, key: string, failure: Failure, max: number): void {
    const recent = this.recent(map, key);
    recent.push(failure);
    // Re-insert so Map order is least-recently-failed first, which is what eviction drops.
    map.delete(key);
    map.set(key, recent.slice(-max * 4));
    while (map.size > MAX_TRACKED_KEYS) map.delete(map.keys().next().value as string);
  }

  /** A successful login as `username` from `ip` clears that username's failures, and nothing else. */
  recordSuccess(ip: string, username: string): void {
    const name = normalize(username);
    this.byUsername.delete(name);
    this.byPair.delete(pairKey(ip, name));
    const left = this.recent(this.byAddress, ip).filter((f) => f.username !== name);
    if (left.length) this.byAddress.set(ip, left);
    else this.byAddress.delete(ip);
  }
}

const pairKey = (ip: string, username: string) => `${ip}\u0000${username}`;
