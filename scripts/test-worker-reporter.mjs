// The test worker's own reporter (scripts/test-worker.mjs passes it to node:test beside the
// spec reporter): it prints nothing; it counts the results for the run's summary, which the
// worker sends to the runner. node:test loads a reporter with import(), so the worker that
// imports this module by the same URL shares its state.

/**
 * Leaf results of this process: tests (suites not counted), as node:test's summary counts them,
 * plus, as failed, a suite that failed of its own (its body threw or one of its hooks did) rather
 * than by a failed test inside it: a file's after() hook that throws fails the run.
 */
export const totals = { tests: 0, pass: 0, fail: 0, cancelled: 0, skipped: 0, todo: 0 };

export default async function* workerReporter(source) {
  for await (const event of source) {
    const data = event.data;
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    if (data.details?.type === 'suite') {
      const failure = data.details.error?.failureType;
      if (event.type === 'test:fail' && failure !== 'subtestsFailed' && failure !== 'cancelledByParent') totals.fail++;
      continue;
    }
    totals.tests++;
    if (data.skip) totals.skipped++;
    else if (data.todo) totals.todo++;
    else if (event.type === 'test:pass') totals.pass++;
    else if (data.details?.error?.failureType === 'cancelledByParent') totals.cancelled++;
    else totals.fail++;
  }
}
