/**
 * DESIGN.md "Login rate limit": 10 failed attempts per client IP per 15 minutes, then 429 with
 * Retry-After. Failures are also counted per username (the same limit), so guessing one account's
 * password from many addresses is bounded too.
 */
export const LOGIN_MAX_FAILURES = 10;
export const LOGIN_WINDOW_MS = 15 * 60 * 1000;
/** Bounds memory when many addresses or names fail once; the least recently failing are forgotten first. */
const MAX_TRACKED_KEYS = 10_000;

interface Failure {
  at: number;
  /** The username the failed attempt named (normalized). */
  username: string;
}

/** Usernames compare case-insensitively here, so `Alice` and `alice` share one count. */
const normalize = (username: string) => String(username).toLowerCase();

/**
 * Counts failed logins in a sliding window per client address and per username. A key with
 * `maxFailures` failures inside the window is refused until the oldest of them ages out.
 *
 * A successful login clears only the failures that named the same username: from that
 * username's count and from the address's count. Failures against other usernames stay, so the
 * holder of one account cannot reset the address's count by logging in between guesses of
 * another account's password.
 */
export class LoginRateLimiter {
  private readonly byAddress = new Map<string, Failure[]>();
  private readonly byUsername = new Map<string, Failure[]>();

  constructor(
    private readonly maxFailures = LOGIN_MAX_FAILURES,
    private readonly windowMs = LOGIN_WINDOW_MS,
    private readonly now: () => number = Date.now,
  ) {}

  private recent(map: Map<string, Failure[]>, key: string): Failure[] {
    const cutoff = this.now() - this.windowMs;
    const kept = (map.get(key) ?? []).filter((f) => f.at > cutoff);
    if (kept.length) map.set(key, kept);
    else map.delete(key);
    return kept;
  }

  private wait(map: Map<string, Failure[]>, key: string): number {
    const recent = this.recent(map, key);
    if (recent.length < this.maxFailures) return 0;
    const oldestThatCounts = recent[recent.length - this.maxFailures].at;
    return Math.max(1, Math.ceil((oldestThatCounts + this.windowMs - this.now()) / 1000));
  }

  /** Seconds until this address may try this username again, or 0 when it may try now. */
  retryAfterSeconds(ip: string, username: string): number {
    return Math.max(this.wait(this.byAddress, ip), this.wait(this.byUsername, normalize(username)));
  }

  /** Which limit refuses the attempt now: `address`, `username`, or null. */
  blockedBy(ip: string, username: string): 'address' | 'username' | null {
    if (this.wait(this.byAddress, ip) > 0) return 'address';
    if (this.wait(this.byUsername, normalize(username)) > 0) return 'username';
    return null;
  }

  recordFailure(ip: string, username: string): void {
    const failure: Failure = { at: this.now(), username: normalize(username) };
    this.push(this.byAddress, ip, failure);
    this.push(this.byUsername, failure.username, failure);
  }

  private push(map: Map<string, Failure[]>, key: string, failure: Failure): void {
    const recent = this.recent(map, key);
    recent.push(failure);
    // Re-insert so Map order is least-recently-failed first, which is what eviction drops.
    map.delete(key);
    map.set(key, recent.slice(-this.maxFailures * 4));
    while (map.size > MAX_TRACKED_KEYS) map.delete(map.keys().next().value as string);
  }

  /** A successful login as `username` from `ip` clears that username's failures, and nothing else. */
  recordSuccess(ip: string, username: string): void {
    const name = normalize(username);
    this.byUsername.delete(name);
    const left = this.recent(this.byAddress, ip).filter((f) => f.username !== name);
    if (left.length) this.byAddress.set(ip, left);
    else this.byAddress.delete(ip);
  }
}
