/**
 * Work over a dependency graph, several items at a time: a target's transform builds each model
 * once the models it reads are built, and independent models side by side, because on a remote
 * engine most of a build is waiting (a cluster's DDL queue, the network), not this machine's CPU.
 */

export interface DependencyRunOptions<T, R> {
  /** The item's name, as `dependsOn` spells it (compare lower-case names: pass them so). */
  key(item: T): string;
  /** Names of the items this one must wait for; names not among the items are not waited for. */
  dependsOn(item: T): readonly string[];
  /** Items running at once (at least 1). */
  concurrency: number;
  run(item: T): Promise<R>;
  /** Called as each item finishes, in the order they finish; `finished` counts them. */
  onDone?(item: T, result: R, finished: number): void;
}

/**
 * Runs `run` on each item once every item it depends on has finished, at most `concurrency` at a
 * time; among the ready ones, the one earliest in `items` starts first. `items` must come in an
 * order where each follows what it depends on: a dependency on a later item is not waited for, so
 * a cycle cannot stall the run. Resolves with the results in the order of `items`. When a `run`
 * or `onDone` throws, nothing new starts, the running ones are let finish, and the first error is
 * thrown: no work is left running behind the caller.
 */
export function runInDependencyOrder<T, R>(items: readonly T[], options: DependencyRunOptions<T, R>): Promise<R[]> {
  const index = new Map(items.map((item, i) => [options.key(item), i]));
  const waitingOn = items.map(() => 0);
  const downstream: number[][] = items.map(() => []);
  items.forEach((item, i) => {
    for (const name of new Set(options.dependsOn(item))) {
      const up = index.get(name);
      if (up === undefined || up >= i) continue;
      waitingOn[i]!++;
      downstream[up]!.push(i);
    }
  });
  const ready = items.map((_, i) => i).filter((i) => waitingOn[i] === 0);
  const results = new Array<R>(items.length);
  const concurrency = Math.max(1, Math.floor(options.concurrency));
  let running = 0;
  let finished = 0;
  let failure: { error: unknown } | null = null;
  return new Promise<R[]>((resolve, reject) => {
    const settle = () => {
      if (running > 0) return;
      if (failure) reject(failure.error);
      else if (finished === items.length) resolve(results);
    };
    const start = () => {
      while (!failure && running < concurrency && ready.length) {
        const i = ready.shift()!;
        running++;
        void Promise.resolve()
          .then(() => options.run(items[i]!))
          .then((result) => {
            results[i] = result;
            finished++;
            options.onDone?.(items[i]!, result, finished);
            let added = false;
            for (const d of downstream[i]!) {
              if (--waitingOn[d]! === 0) {
                ready.push(d);
                added = true;
              }
            }
            // Sorted only when it changed: a run of thousands of independent models finishes each without a sort.
            if (added) ready.sort((a, b) => a - b);
          })
          .catch((error: unknown) => {
            failure ??= { error };
          })
          .finally(() => {
            running--;
            start();
            settle();
          });
      }
    };
    start();
    settle();
  });
}
