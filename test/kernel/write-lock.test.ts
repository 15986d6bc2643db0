/**
 * The kernel's write lock (ctx.db.exclusive): sections one at a time in arrival order; a section
 * that asks for its own lock again runs at once; holding one lock lets nothing through another;
 * and work a section started that outlives it waits like anyone else.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { WriteLock } from '../../kernel/write-lock.js';

/** A promise and the function that settles it. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

describe('write lock', () => {
  it('runs sections one at a time, in the order they asked', async () => {
    const lock = new WriteLock();
    const order: string[] = [];
    const first = gate();
    const a = lock.exclusive(async () => {
      order.push('a starts');
      await first.opened;
      order.push('a ends');
    });
    const b = lock.exclusive(async () => void order.push('b'));
    const c = lock.exclusive(async () => void order.push('c'));
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(order, ['a starts']);
    assert.equal(lock.queued, 2);
    assert.equal(lock.busy, true);
    first.open();
    await Promise.all([a, b, c]);
    assert.deepEqual(order, ['a starts', 'a ends', 'b', 'c']);
    assert.equal(lock.busy, false);
  });

  it('lets a section take its own lock again at once, but not another lock that is held', async () => {
    const mine = new WriteLock();
    const other = new WriteLock();
    const otherHeld = gate();
    const otherRelease = gate();
    const holding = other.exclusive(async () => {
      otherHeld.open();
      await otherRelease.opened;
    });
    await otherHeld.opened;
    const events: string[] = [];
    const outer = mine.exclusive(async () => {
      await mine.exclusive(async () => void events.push('nested in mine'));
      const throughOther = other.exclusive(async () => void events.push('other'));
      await new Promise((r) => setImmediate(r));
      events.push('other still held');
      otherRelease.open();
      await throughOther;
    });
    await Promise.all([outer, holding]);
    assert.deepEqual(events, ['nested in mine', 'other still held', 'other']);
  });

  it('makes work a section left running wait for the lock like anyone else once the section ended', async () => {
    const lock = new WriteLock();
    const later = gate();
    let leftRunning!: Promise<string>;
    await lock.exclusive(async () => {
      leftRunning = (async () => {
        await later.opened;
        return lock.exclusive(async () => 'ran after waiting');
      })();
    });
    const blocker = gate();
    const next = lock.exclusive(() => blocker.opened);
    later.open();
    await new Promise((r) => setImmediate(r));
    assert.equal(lock.queued, 1, 'the leftover work did not wait its turn');
    blocker.open();
    await next;
    assert.equal(await leftRunning, 'ran after waiting');
  });
});
