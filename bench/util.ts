/** Shared benchmark helpers: timing loops and HTTP load from this process. */
import { performance } from 'node:perf_hooks';

export interface BenchResult {
  name: string;
  value: number;
  unit: string;
  target?: string;
  ok?: boolean;
}

/** Runs fn repeatedly for about `ms` milliseconds (after a warm-up) and returns mean milliseconds per call. */
export async function timePerCall(fn: () => Promise<unknown> | unknown, ms = 1500, warmup = 20): Promise<number> {
  for (let i = 0; i < warmup; i++) await fn();
  let n = 0;
  const start = performance.now();
  while (performance.now() - start < ms) {
    await fn();
    n++;
  }
  return (performance.now() - start) / n;
}

/** Requests per second against url with `concurrency` requests in flight, for `ms` milliseconds. */
export async function throughput(url: string, init: RequestInit, ms = 3000, concurrency = 8): Promise<number> {
  let done = 0;
  const stopAt = performance.now() + ms;
  const worker = async () => {
    while (performance.now() < stopAt) {
      const res = await fetch(url, init);
      await res.arrayBuffer();
      if (!res.ok) throw new Error(`${url} answered ${res.status}`);
      done++;
    }
  };
  const start = performance.now();
  await Promise.all(Array.from({ length: concurrency }, worker));
  return done / ((performance.now() - start) / 1000);
}
