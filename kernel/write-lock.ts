import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The sections the current async context runs inside, by lock: one store for every lock, since
 * each AsyncLocalStorage, once used, stays enabled for the life of the process (Node 20) and
 * costs every promise created after it. One per lock made a process that opens many databases
 * (a test worker, an app reloaded many times) pay for all of them.
 */
const heldSections = new AsyncLocalStorage<ReadonlyMap<WriteLock, { active: boolean }>>();

/**
 * The kernel's write lock behind `ctx.db.exclusive`: transform, seed, ingest, sync, restore and
 * maintenance run one at a time, first come first served. Reads never take it. A holder that
 * calls `exclusive` again (a stream step running a transform) runs at once instead of waiting on
 * itself: the holder is known through the async context, and only while its section runs.
 */
export class WriteLock {
  private tail: Promise<void> = Promise.resolve();
  private waiting = 0;
  private held = false;

  async exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const sections = heldSections.getStore();
    if (sections?.get(this)?.active) return fn();
    const previous = this.tail;
    let release!: () => void;
    this.tail = new Promise<void>((resolve) => (release = resolve));
    this.waiting++;
    try {
      await previous;
    } finally {
      this.waiting--;
    }
    const token = { active: true };
    this.held = true;
    try {
      return await heldSections.run(new Map(sections).set(this, token), fn);
    } finally {
      token.active = false;
      this.held = false;
      release();
    }
  }

  /** True while a section runs (for status and tests). */
  get busy(): boolean {
    return this.held;
  }

  /** Sections waiting for their turn. */
  get queued(): number {
    return this.waiting;
  }
}
