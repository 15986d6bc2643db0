/**
 * sdk runInDependencyOrder: each item after what it depends on, independent ones side by side up
 * to the limit, results in the items' order, and an error that stops new work but waits for the
 * running. Each item's run is a promise the test settles by hand: no timers, no timing.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { runInDependencyOrder } from '../../sdk/index.js';

interface Item {
  name: string;
  deps: string[];
}

/** Runs the items with runs the test ends one by one (`end(name)`), recording starts and ends. */
function controlled(items: Item[], concurrency: number) {
  const log: string[] = [];
  const pending = new Map<string, { resolve: (v: string) => void; reject: (e: Error) => void }>();
  let started: () => void = () => undefined;
  const done = runInDependencyOrder(items, {
    key: (i) => i.name,
    dependsOn: (i) => i.deps,
    concurrency,
    run: (i) =>
      new Promise<string>((resolve, reject) => {
        log.push(`start ${i.name}`);
        pending.set(i.name, { resolve, reject });
        started();
      }),
    onDone: (i, _r, n) => log.push(`end ${i.name} (${n})`),
  });
  /** Resolves once nothing more can start until a running item ends. */
  const settled = () => new Promise<void>((resolve) => setImmediate(resolve));
  return {
    log,
    done,
    running: () => [...pending.keys()],
    async end(name: string, error?: Error) {
      const p = pending.get(name);
      assert.ok(p, `${name} is running (running: ${[...pending.keys()].join(', ')})`);
      pending.delete(name);
      if (error) p.reject(error);
      else p.resolve(`built ${name}`);
      await settled();
    },
    settled,
  };
}

const graph: Item[] = [
  { name: 'stg', deps: [] },
  { name: 'a', deps: ['stg'] },
  { name: 'b', deps: ['stg', 'outside'] },
  { name: 'c', deps: ['stg'] },
  { name: 'd', deps: ['a', 'b'] },
];

describe('runInDependencyOrder', () => {
  it('starts an item once what it depends on has ended, independent ones side by side up to the limit', async () => {
    const run = controlled(graph, 2);
    await run.settled();
    assert.deepEqual(run.running(), ['stg']);
    await run.end('stg');
    // a, b, c are ready; two at a time, in the items' order ('outside' is not among the items: not waited for).
    assert.deepEqual(run.running(), ['a', 'b']);
    await run.end('b');
    assert.deepEqual(run.running(), ['a', 'c']);
    await run.end('a');
    assert.deepEqual(run.running(), ['c', 'd']);
    await run.end('d');
    await run.end('c');
    assert.deepEqual(await run.done, ['built stg', 'built a', 'built b', 'built c', 'built d']);
    assert.deepEqual(run.log, ['start stg', 'end stg (1)', 'start a', 'start b', 'end b (2)', 'start c', 'end a (3)', 'start d', 'end d (4)', 'end c (5)']);
  });

  it('runs one at a time in the items\' order with a limit of 1', async () => {
    const run = controlled(graph, 1);
    for (const name of ['stg', 'a', 'b', 'c', 'd']) {
      await run.settled();
      assert.deepEqual(run.running(), [name]);
      await run.end(name);
    }
    assert.equal((await run.done).length, 5);
  });

  it('does not wait on a dependency listed later (a cycle cannot stall it)', async () => {
    const run = controlled([{ name: 'x', deps: ['y'] }, { name: 'y', deps: ['x'] }], 4);
    await run.settled();
    assert.deepEqual(run.running(), ['x']);
    await run.end('x');
    await run.end('y');
    assert.deepEqual(await run.done, ['built x', 'built y']);
  });

  it('on an error starts nothing new, lets the running finish, then throws the first error', async () => {
    const run = controlled(graph, 2);
    await run.settled();
    await run.end('stg');
    let outcome: unknown = null;
    void run.done.catch((e: unknown) => (outcome = e));
    await run.end('a', new Error('a broke'));
    assert.deepEqual(run.running(), ['b'], 'c is not started');
    assert.equal(outcome, null, 'not thrown while b runs');
    await run.end('b');
    assert.match(String((outcome as Error | null)?.message), /a broke/);
  });

  it('resolves at once with nothing to run', async () => {
    assert.deepEqual(await runInDependencyOrder([], { key: String, dependsOn: () => [], concurrency: 4, run: async () => 1 }), []);
  });
});
