import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The kernel's write lock behind `ctx.db.exclusive`: transform, seed, ingest, sync, restore and
 * maintenance run one at a time, first come first served. Reads never take it. A holder that
 * calls `exclusive` again (a stream step running a transform) runs at once instead of waiting on
 * itself: the holder is known through the async context, and only while its section runs.
 */
export class WriteLock {
  private tail: Promise<void> = Promise.resolve();
  private readonly holder = new AsyncLocalStorage<{ active: boolean }>();
  private waiting = 0;
  private held = false;

  async exclusive<T>(fn: () => Promise<T>): Promise<T> {
    if (this.holder.getStore()?.active) return fn();
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
      return await this.holder.run(token, fn);
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
