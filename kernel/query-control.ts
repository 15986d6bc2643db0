/**
 * What keeps user queries from wedging the server (issue 11): every query carries its role's
 * deadline from the moment it is accepted, waits for one of a bounded number of query slots,
 * and is interrupted wherever it is when the deadline passes or its client leaves.
 *
 * Why slots: `@duckdb/node-api` runs every DuckDB call on a libuv worker. A long query holds its
 * worker until it ends; with every worker held, nothing else (health, login, auth lookups, file
 * reads) runs at all. User queries therefore run at most `total` at a time, fewer than the
 * workers, so short work always finds one; the rest wait in a queue with their deadline running.
 *
 * Why interrupts repeat: DuckDB forgets an interrupt that arrives before the query started on a
 * worker (it resets the flag at the start of each query), so a stopped query is interrupted
 * again and again until its call settles, and no new call is started for it.
 */
import type { Role } from '../sdk/auth.js';
import { DpError } from '../sdk/errors.js';
import type { QueryStopSignal } from '../sdk/plugin.js';
import { type Clock, deadlineTimeout } from '../sdk/scheduler.js';
import { systemClock } from './scheduler.js';

/** libuv's thread pool size as it was set for this process (UV_THREADPOOL_SIZE, default 4, at most 1024). */
export function threadPoolSize(env: NodeJS.ProcessEnv = process.env): number {
  const n = Number.parseInt(env.UV_THREADPOOL_SIZE ?? '', 10);
  return Number.isFinite(n) && n > 0 ? Math.min(n, 1024) : 4;
}

/** User queries that may run at once: the pool minus the workers kept for short work (a quarter, at least 2). */
export function queryWorkers(poolSize: number): number {
  return Math.max(1, poolSize - Math.max(2, Math.ceil(poolSize / 4)));
}

/** The moment a query must be done by, counted from when it was accepted, on the app's clock (a test about deadlines moves one it owns). */
export class Deadline {
  readonly at: number;

  constructor(
    readonly seconds: number,
    readonly role: Role,
    readonly clock: Clock = systemClock,
  ) {
    this.at = clock.now() + seconds * 1000;
  }

  remainingMs(): number {
    return Math.max(0, this.at - this.clock.now());
  }

  error(): DpError {
    return new DpError(408, 'query_timeout', `The query ran longer than the ${this.seconds} s allowed for role '${this.role}' and was cancelled`, {
      timeout_seconds: this.seconds,
      role: this.role,
    });
  }
}

/** The stop reason when the client closed its connection (nobody reads it; logged at most). */
export function clientGone(): DpError {
  return new DpError(499, 'client_closed_request', 'The client closed the connection; the query was cancelled');
}

/** A connection a stopped query's calls run on (kernel/database.ts Connection). */
interface Interruptible {
  interruptUntilSettled(settled: Promise<unknown>): Promise<void>;
}

const noop = () => {};

/**
 * One user query's stop switch: stops at the deadline or when `external` aborts (client gone),
 * and after a stop interrupts the connection in use until every guarded DuckDB call settled.
 */
export class QueryControl {
  /**
   * Created on first use of `signal`: a query that is never stopped and never waits for a slot
   * needs none. Stops reach `guard`'s waiters through `onStop` instead of EventTarget listeners
   * (Node's AbortSignal costs microseconds per listener added and removed, twice per query).
   */
  private stopper: AbortController | null = null;
  private stopReason: DpError | null = null;
  private readonly stopListeners = new Set<(reason: DpError) => void>();
  private readonly timer: unknown;
  private readonly pending = new Set<Promise<unknown>>();
  private connection: Interruptible | null = null;
  /** Set while the connection is being interrupted until every guarded call settled. */
  private interrupting = false;
  private readonly unlisten: () => void;

  constructor(
    readonly deadline: Deadline,
    external?: QueryStopSignal,
    /** Told once the query is over and DuckDB let go of it. */
    private readonly onOver: () => void = noop,
  ) {
    this.timer = deadlineTimeout(deadline.clock, () => this.stop(deadline.error()), deadline.remainingMs());
    const onAbort = () => this.stop(clientGone());
    if (external?.aborted) queueMicrotask(onAbort);
    else external?.addEventListener('abort', onAbort, { once: true });
    this.unlisten = () => external?.removeEventListener('abort', onAbort);
  }

  /** Aborted (with the DpError to answer) when the query is stopped. */
  get signal(): AbortSignal {
    if (!this.stopper) {
      this.stopper = new AbortController();
      if (this.stopReason) this.stopper.abort(this.stopReason);
    }
    return this.stopper.signal;
  }

  /** The stop reason (the DpError to answer), or null while the query may go on. */
  get stopped(): DpError | null {
    return this.stopReason;
  }

  /** Throws the stop reason when the query was stopped: call before starting new work for it. */
  throwIfStopped(): void {
    if (this.stopReason) throw this.stopReason;
  }

  /** Calls `listener` with the reason when the query is stopped (not when already stopped: check `stopped`); returns the removal. */
  onStop(listener: (reason: DpError) => void): () => void {
    this.stopListeners.add(listener);
    return () => this.stopListeners.delete(listener);
  }

  stop(reason: DpError): void {
    if (this.stopReason) return;
    this.stopReason = reason;
    for (const listener of this.stopListeners) listener(reason);
    this.stopListeners.clear();
    this.stopper?.abort(reason);
    this.interruptWhileBusy();
  }

  /** The connection the query's calls run on (what a stop interrupts). */
  use(connection: Interruptible): void {
    this.connection = connection;
    if (this.stopReason) this.interruptWhileBusy();
  }

  private interruptWhileBusy(): void {
    if (this.interrupting || this.pending.size === 0 || !this.connection) return;
    this.interrupting = true;
    void this.connection.interruptUntilSettled(this.idle()).then(() => {
      this.interrupting = false;
      // A call guarded after the loop saw the last one settle is interrupted too.
      this.interruptWhileBusy();
    });
  }

  /**
   * Waits for `work` (DuckDB calls for this query), or rejects with the stop reason as soon as
   * the query is stopped: the caller never waits on DuckDB past the deadline, while the
   * interrupts go on until `work` settled (see `idle`).
   */
  guard<T>(work: Promise<T>): Promise<T> {
    this.pending.add(work);
    work.then(noop, noop).finally(() => this.pending.delete(work));
    if (this.stopReason) {
      this.interruptWhileBusy();
      return Promise.reject(this.stopReason);
    }
    // Not Promise.race with one long-lived promise: each race would leave a reaction on it that
    // keeps its result (a chunk of rows) alive until the query ends.
    return new Promise<T>((resolve, reject) => {
      this.stopListeners.add(reject);
      work.then(
        (value) => {
          this.stopListeners.delete(reject);
          resolve(value);
        },
        (error) => {
          this.stopListeners.delete(reject);
          reject(error);
        },
      );
    });
  }

  /** Settles once every guarded call settled: a stopped query has let go of its worker and connection. */
  async idle(): Promise<void> {
    while (this.pending.size) await Promise.all([...this.pending].map((p) => p.then(noop, noop)));
  }

  /** The query is over: no more stops. Interrupts already under way go on until their calls settle. */
  finish(): void {
    this.deadline.clock.clearTimeout(this.timer);
    this.unlisten();
    void this.idle().then(this.onOver);
  }
}

export interface SlotLimits {
  /** Queries of each role that may run at once. */
  perRole: Record<Role, number>;
  /** Queries of all roles that may run at once (below the worker pool). */
  total: number;
  /** Queries of one role that may wait for a slot; more are refused with 503. */
  maxQueued: number;
}

interface Waiter {
  role: Role;
  admit(): void;
}

/** Counting slots for running user queries, per role and in total; waiters are admitted in arrival order. */
export class QuerySlots {
  private readonly running: Record<Role, number> = { admin: 0, editor: 0, viewer: 0 };
  private total = 0;
  private readonly queue: Waiter[] = [];

  constructor(private readonly limits: () => SlotLimits) {}

  /** Running and waiting queries, per role. */
  stats(): { running: Record<Role, number>; queued: Record<Role, number> } {
    const queued: Record<Role, number> = { admin: 0, editor: 0, viewer: 0 };
    for (const w of this.queue) queued[w.role]++;
    return { running: { ...this.running }, queued };
  }

  private fits(role: Role): boolean {
    const l = this.limits();
    return this.running[role] < Math.max(1, l.perRole[role]) && this.total < Math.max(1, l.total);
  }

  private take(role: Role): () => void {
    this.running[role]++;
    this.total++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.running[role]--;
      this.total--;
      this.admitWaiting();
    };
  }

  private admitWaiting(): void {
    for (let i = 0; i < this.queue.length && this.total < this.limits().total; ) {
      const w = this.queue[i];
      if (this.fits(w.role)) {
        this.queue.splice(i, 1);
        w.admit();
      } else i++;
    }
  }

  /**
   * A slot for a query of `role`: at once when one is free and nobody of that role waits,
   * else after the queries ahead. Rejects with the stop reason when the query is stopped while waiting
   * (deadline, client gone): such a query never runs. Resolves to the slot's release.
   */
  acquire(role: Role, stop: Pick<QueryControl, 'stopped' | 'onStop'>): Promise<() => void> {
    if (stop.stopped) return Promise.reject(stop.stopped);
    if (this.fits(role) && !this.queue.some((w) => w.role === role)) return Promise.resolve(this.take(role));
    const waiting = this.queue.filter((w) => w.role === role).length;
    const { maxQueued } = this.limits();
    if (waiting >= maxQueued) {
      return Promise.reject(
        new DpError(503, 'query_queue_full', `Too many queries of role '${role}' are waiting to run (${waiting}); retry shortly`, { role, queued: waiting }, { 'Retry-After': '1' }),
      );
    }
    return new Promise((resolve, reject) => {
      const unlisten = stop.onStop((reason) => {
        const at = this.queue.indexOf(waiter);
        if (at >= 0) this.queue.splice(at, 1);
        reject(reason);
      });
      const waiter: Waiter = {
        role,
        admit: () => {
          unlisten();
          resolve(this.take(role));
        },
      };
      this.queue.push(waiter);
    });
  }
}
