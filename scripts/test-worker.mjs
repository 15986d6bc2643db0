// One test worker of scripts/test.mjs: a Node process that runs many test files one after
// another. It asks the runner for a file (IPC), imports it (its describe() calls queue its suites
// in node:test's root, which runs them in turn), waits until the file's top-level tests have all
// ended (scripts/test-worker-reporter.mjs), reports the file's seconds and asks for the next.
// One process for many files pays Node's start, the kernel's compilation and the JIT's warm-up
// once instead of once per file (README "Tests").
//
// What differs from one process per file: a file's top-level after() hooks run when the worker
// ends, not when the file does (hooks in a describe() run with it), and modules are shared, so a
// file must leave process-wide state (process.env, the working folder, patched globals) as it
// found it.
import { pathToFileURL } from 'node:url';
import { enqueuedAny, events, openTests, totals } from './test-worker-reporter.mjs';

/** How long the worker may take to end after its last file (the files' top-level after() hooks run then). */
const LEFTOVER_GRACE_S = 120;

if (!process.send) {
  process.stderr.write('scripts/test-worker.mjs is started by scripts/test.mjs\n');
  process.exit(2);
}

/** Resolves once every top-level test `file` enqueued has completed. */
function fileDone(file) {
  return new Promise((resolve) => {
    const check = () => {
      if (enqueuedAny(file) && openTests(file) === 0) {
        events.off('file-done', onDone);
        resolve();
      }
    };
    const onDone = (done) => done === file && check();
    events.on('file-done', onDone);
    check();
  });
}

/** A file that enqueued no test at all once the reporter has seen everything its import queued. */
async function noTests(file) {
  for (let turn = 0; turn < 3; turn++) await new Promise((resolve) => setImmediate(resolve));
  return !enqueuedAny(file);
}

async function runFile(file) {
  const started = process.hrtime.bigint();
  await import(pathToFileURL(file).href);
  if (!(await noTests(file))) await fileDone(file);
  return Number(process.hrtime.bigint() - started) / 1e9;
}

process.on('message', (message) => {
  if (message.file) {
    runFile(message.file).then(
      (seconds) => process.send({ done: message.file, seconds }),
      // An import that throws: node:test does not see the file, so the worker reports it.
      (e) => {
        process.stderr.write(`✖ ${message.file} could not be loaded: ${e?.stack ?? e}\n`);
        process.exitCode = 1;
        process.send({ done: message.file, seconds: 0, loadFailed: true });
      },
    );
  } else if (message.end) {
    // The files' tests have all ended; node:test prints its summary when the event loop empties,
    // which the IPC channel would prevent.
    process.send({ totals }, () => process.disconnect());
    // A file that left a server, a child or a timer running would keep this process alive for
    // good (one process per file would hang the same way): name what is left, and end.
    setTimeout(() => {
      process.stderr.write(`✖ the test worker did not end ${LEFTOVER_GRACE_S} s after its last file: still running ${JSON.stringify(process.getActiveResourcesInfo())}\n`);
      process.exit(1);
    }, LEFTOVER_GRACE_S * 1000).unref();
  }
});
process.send({ ready: true });
