/** docs/decisions.md "Login rate limit": 10 failed attempts per client IP per 15 minutes. */
export const LOGIN_MAX_FAILURES = 10;
export const LOGIN_WINDOW_MS = 15 * 60 * 1000;
/** Bounds memory when many addresses fail once; the oldest addresses are forgotten first. */
const MAX_TRACKED_ADDRESSES = 10_000;

/**
 * Counts failed logins per client address in a sliding window. Once an address has
 * `maxFailures` failures inside the window it is refused until the oldest of them ages out.
 */
export class LoginRateLimiter {
  private readonly failures = new Map<string, number[]>();

  constructor(
    private readonly maxFailures = LOGIN_MAX_FAILURES,
    private readonly windowMs = LOGIN_WINDOW_MS,
    private readonly now: () => number = Date.now,
  ) {}

  private recent(ip: string): number[] {
    const cutoff = this.now() - this.windowMs;
    const kept = (this.failures.get(ip) ?? []).filter((t) => t > cutoff);
    if (kept.length) this.failures.set(ip, kept);
    else this.failures.delete(ip);
    return kept;
  }

  /** Seconds until this address may try again, or 0 when it may try now. */
  retryAfterSeconds(ip: string): number {
    const recent = this.recent(ip);
    if (recent.length < this.maxFailures) return 0;
    const oldestThatCounts = recent[recent.length - this.maxFailures];
    return Math.max(1, Math.ceil((oldestThatCounts + this.windowMs - this.now()) / 1000));
  }

  recordFailure(ip: string): void {
    const recent = this.recent(ip);
    recent.push(this.now());
    // Re-insert so Map order is least-recently-failed first, which is what eviction drops.
    this.failures.delete(ip);
    this.failures.set(ip, recent.slice(-this.maxFailures));
    while (this.failures.size > MAX_TRACKED_ADDRESSES) {
      const oldest = this.failures.keys().next().value as string;
      this.failures.delete(oldest);
    }
  }

  /** A successful login clears the address's failures. */
  reset(ip: string): void {
    this.failures.delete(ip);
  }
}
