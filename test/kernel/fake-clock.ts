/** A clock tests move by hand (sdk `Clock`): timers fire in time order as `advance` passes them. */
import type { Clock } from '../../sdk/index.js';

export class FakeClock implements Clock {
  private timers: Array<{ at: number; fn: () => void; id: number }> = [];
  private seq = 0;
  constructor(private time: number) {}
  now(): number {
    return this.time;
  }
  setTimeout(fn: () => void, ms: number): unknown {
    const id = ++this.seq;
    this.timers.push({ at: this.time + ms, fn, id });
    return id;
  }
  clearTimeout(handle: unknown): void {
    this.timers = this.timers.filter((t) => t.id !== handle);
  }
  /** Moves time forward, firing each timer due on the way (and those they arm). */
  async advance(ms: number): Promise<void> {
    const end = this.time + ms;
    for (;;) {
      const due = this.timers.filter((t) => t.at <= end).sort((a, b) => a.at - b.at)[0];
      if (!due) break;
      this.timers = this.timers.filter((t) => t !== due);
      this.time = Math.max(this.time, due.at);
      due.fn();
      await new Promise((r) => setImmediate(r));
    }
    this.time = end;
  }
  /** Timers armed and not yet fired. */
  get pending(): number {
    return this.timers.length;
  }
}

export const quietLog = { info() {}, warn() {}, error() {}, debug() {} };
