// One test worker of scripts/test.mjs: a Node process that runs many test files one after
// another. It asks the runner for a file (IPC), runs it as one suite named after the file (the
// suite's body imports the file, so node:test files the file's describe(), test() and top-level
// hooks under that suite), reports the file's seconds when the suite has ended, and asks for the
// next. One process for many files pays Node's start, the kernel's compilation and the JIT's
// warm-up once instead of once per file (README "Tests").
//
// The suite per file keeps a file's top-level before()/after() hooks the file's own, as with one
// process per file: registered on node:test's root instead, they would run whenever the root
// fell idle between files, and a file imported while the previous file's after() hooks were
// still running had its own after() run at once, before its tests (a temp folder removed under
// them). What still differs: modules are shared, so a file must leave process-wide state
// (process.env, the working folder, patched globals) as it found it.
import path from 'node:path';
import { describe } from 'node:test';
import { pathToFileURL } from 'node:url';
import { endedChildrenCpuSeconds } from './proc-cpu.mjs';
import { totals } from './test-worker-reporter.mjs';

/** How long the worker may take to end after its last file. */
const LEFTOVER_GRACE_S = 120;

if (!process.send) {
  process.stderr.write('scripts/test-worker.mjs is started by scripts/test.mjs\n');
  process.exit(2);
}

/**
 * CPU seconds of this process (every thread: DuckDB's too) and of its children that have ended and
 * been waited for (a file's `dp` processes, its database servers, the ClickHouse cluster). Not
 * all of Chromium's: its renderers are not waited for through the browser process, so a UI file
 * uses about twice what it is credited with (23 CPU-seconds on the machine for 12.7 counted).
 */
function cpuSeconds() {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1e6 + endedChildrenCpuSeconds();
}

/** Runs `file` as one suite; resolves with its seconds, its CPU seconds and whether its import threw. */
async function runFile(file) {
  const started = process.hrtime.bigint();
  const cpuBefore = cpuSeconds();
  let loadFailed = false;
  await describe(path.relative(process.cwd(), file), async () => {
    try {
      await import(pathToFileURL(file).href);
    } catch (e) {
      // The suite fails with the error; a failed suite counts as no failed test, so say so.
      loadFailed = true;
      process.stderr.write(`✖ ${file} could not be loaded: ${e?.stack ?? e}\n`);
      throw e;
    }
  });
  return { seconds: Number(process.hrtime.bigint() - started) / 1e9, cpu: cpuSeconds() - cpuBefore, loadFailed };
}

process.on('message', (message) => {
  if (message.file) {
    runFile(message.file).then(({ seconds, cpu, loadFailed }) => process.send({ done: message.file, seconds, cpu, loadFailed }));
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
