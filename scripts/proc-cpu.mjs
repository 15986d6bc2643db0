// CPU seconds of the children of this process that have ended and been waited for, from
// /proc/self/stat (Linux): what the test runner credits a test file with (scripts/test-worker.mjs)
// and what a bench reads around a spawned process (bench/transpiler-start.mjs).
import fs from 'node:fs';

/** Clock ticks per second of /proc's times (USER_HZ: 100 on Linux on every architecture Node runs on). */
const TICKS_PER_SECOND = 100;

/** User + system CPU seconds of the ended, waited-for children; 0 without /proc (not Linux). */
export function endedChildrenCpuSeconds() {
  let stat;
  try {
    stat = fs.readFileSync('/proc/self/stat', 'utf8');
  } catch {
    return 0;
  }
  // The fields after the command's closing parenthesis; cutime and cstime are the 14th and 15th.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[13]) + Number(fields[14])) / TICKS_PER_SECOND;
}
