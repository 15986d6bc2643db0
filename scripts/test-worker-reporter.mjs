// The test worker's own reporter (scripts/test-worker.mjs passes it to node:test beside the
// spec reporter): it prints nothing; it tells the worker, in the same process, when each
// top-level test of a file has been reported, and counts the results for the run's summary.
// node:test loads a reporter with import(), so the worker that imports this module by the same
// URL shares its state.
import { EventEmitter } from 'node:events';

/** 'file-done' (file path) once every top-level test that file enqueued has been reported. */
export const events = new EventEmitter();
/** Leaf results of this process: tests (suites not counted), as node:test's summary counts them. */
export const totals = { tests: 0, pass: 0, fail: 0, cancelled: 0, skipped: 0, todo: 0 };
const open = new Map();

export default async function* workerReporter(source) {
  for await (const event of source) {
    const data = event.data;
    if (!data || typeof data.file !== 'string') continue;
    if (data.nesting === 0 && event.type === 'test:enqueue') open.set(data.file, (open.get(data.file) ?? 0) + 1);
    // Reported (test:pass / test:fail) after everything nested in it, in the order declared.
    if (data.nesting === 0 && (event.type === 'test:pass' || event.type === 'test:fail')) {
      const left = (open.get(data.file) ?? 1) - 1;
      open.set(data.file, left);
      if (left === 0) events.emit('file-done', data.file);
    }
    if ((event.type === 'test:pass' || event.type === 'test:fail') && data.details?.type !== 'suite') {
      totals.tests++;
      if (data.skip) totals.skipped++;
      else if (data.todo) totals.todo++;
      else if (event.type === 'test:pass') totals.pass++;
      else if (data.details?.error?.failureType === 'cancelledByParent') totals.cancelled++;
      else totals.fail++;
    }
  }
}

/** Top-level tests of `file` enqueued and not yet completed (0 once they all ran, or none were enqueued yet). */
export const openTests = (file) => open.get(file) ?? 0;
/** Whether `file` enqueued any top-level test. */
export const enqueuedAny = (file) => open.has(file);
