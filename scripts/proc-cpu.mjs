// CPU time from /proc (Linux), one reader for the test runner (scripts/test-worker.mjs credits a
// test file with its ended children's CPU) and the benches (a server's CPU around requests, an
// engine's CPU to ready, a spawned process's CPU once it has been waited for).
import fs from 'node:fs';

/** Clock ticks per second of /proc's times (USER_HZ: 100 on Linux on every architecture Node runs on). */
const TICKS_PER_SECOND = 100;

/** The fields of a /proc stat file after the command's closing parenthesis (utime is [11], stime [12], cutime [13], cstime [14]). */
function statFields(file) {
  const stat = fs.readFileSync(file, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** User + system CPU seconds of this process's children that have ended and been waited for; 0 without /proc (not Linux). */
export function endedChildrenCpuSeconds() {
  let fields;
  try {
    fields = statFields('/proc/self/stat');
  } catch {
    return 0;
  }
  return (Number(fields[13]) + Number(fields[14])) / TICKS_PER_SECOND;
}

/** User + system CPU ms in a stat file of a live process or of one of its threads. */
function ownCpuMs(file) {
  const fields = statFields(file);
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
}

/** User + system CPU ms of a live process, every thread (DuckDB's too). */
export const processCpuMs = (pid) => ownCpuMs(`/proc/${pid}/stat`);

/** User + system CPU ms of a process's main thread: its event loop, what one core can serve. */
export const mainThreadCpuMs = (pid) => ownCpuMs(`/proc/${pid}/task/${pid}/stat`);

/** The pids of a process's children, oldest first (a `dp serve` supervisor has one: its engine). */
export function childPids(pid) {
  return fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
}
