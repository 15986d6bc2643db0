// Runs every compiled test file (dist/test/**/*.test.js) with Node's own test runner.
// Usage: node scripts/test.mjs [--write-durations] [substring ...]
//   substrings: only files whose path contains one of them;
//   --write-durations: write each file's seconds and CPU seconds from this run into test/durations.json.
//
// Files run in a few long-lived worker processes (scripts/test-worker.mjs), one more than the
// machine has cores (os.availableParallelism() + 1; DP_TEST_CONCURRENCY sets another number): each
// worker takes the next file when it is done with one, so no core idles while files wait. A file
// spends part of its time waiting (a ClickHouse cluster's DDL queue, a browser, a server's
// answer), and the extra worker uses that time: on the 2-core machine the suite took 6.0 min in
// two workers, 5.1 in three, 5.6 in four (README "Tests"). A worker runs
// its files one after another in one Node process, which pays Node's start, the kernel's
// compilation and the JIT's warm-up once instead of once per file (README "Tests": 45% less CPU
// for 59 kernel and plugin files). DP_TEST_ISOLATION=process runs one `node --test` process per
// file instead.
//
// The slowest files go first (test/durations.json, seconds per file from a run with
// --write-durations), so a long file does not start last and run alone at the end.
import { fork, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { durationKey, durationsFile, root, testFiles } from './test-files.mjs';

const args = process.argv.slice(2);
const writeDurations = args.includes('--write-durations');
const filters = args.filter((a) => a !== '--write-durations');

/** Per file (durationKey): `seconds` from start to end in its worker, `cpu` seconds it used (its worker's and its ended children's). */
const durations = fs.existsSync(durationsFile) ? JSON.parse(fs.readFileSync(durationsFile, 'utf8')) : {};
const known = Object.values(durations).map((d) => d.seconds).sort((a, b) => a - b);
// A file not in the list yet (new since the last timing) counts as a middling one.
const typical = known.length ? known[Math.floor(known.length / 2)] : 0;
const seconds = (file) => durations[durationKey(file)]?.seconds ?? typical;
const selected = testFiles(filters).sort((a, b) => seconds(b) - seconds(a) || a.localeCompare(b));
if (selected.length === 0) {
  process.stderr.write('no test files found (did the build run?)\n');
  process.exit(1);
}
const concurrency = Number(process.env.DP_TEST_CONCURRENCY) || os.availableParallelism() + 1;
// One run token for every file (test/support/templates.ts suiteRun: templates whose content carries times are this run's).
const env = { DP_TEST_RUN: `${Date.now().toString(36)}-${process.pid}`, ...process.env, DP_LOG_SILENT: '1' };

if (process.env.DP_TEST_ISOLATION === 'process') {
  if (writeDurations) {
    process.stderr.write('--write-durations times the workers; run it without DP_TEST_ISOLATION=process\n');
    process.exit(2);
  }
  const r = spawnSync(process.execPath, ['--test', `--test-concurrency=${concurrency}`, '--test-reporter=spec', ...selected], { stdio: 'inherit', cwd: root, env });
  process.exit(r.status ?? 1);
}

const started = Date.now();
const queue = [...selected];
const measured = {};
const totals = { tests: 0, pass: 0, fail: 0, cancelled: 0, skipped: 0, todo: 0 };
/** Files whose worker ended before their tests did (a crash, a signal). */
const lost = [];
/** Minutes from the start at which each worker found the queue empty: a long tail shows as one worker ending well after the others. */
const idleFrom = [];
let failed = false;

/** Passes a worker's output on line by line, so two workers' lines never mix within a line. */
function relay(stream, out) {
  readline.createInterface({ input: stream, crlfDelay: Infinity }).on('line', (line) => out.write(line + '\n'));
}

function runWorker(index) {
  return new Promise((resolve) => {
    const child = fork(path.join(root, 'scripts', 'test-worker.mjs'), [], {
      cwd: root,
      env,
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      execArgv: ['--test-reporter=spec', '--test-reporter-destination=stdout', `--test-reporter=${path.join(root, 'scripts', 'test-worker-reporter.mjs')}`, '--test-reporter-destination=stderr'],
    });
    relay(child.stdout, process.stdout);
    relay(child.stderr, process.stderr);
    let current = null;
    const next = () => {
      current = queue.shift() ?? null;
      if (!current) idleFrom.push((Date.now() - started) / 60000);
      child.send(current ? { file: current } : { end: true });
    };
    child.on('message', (message) => {
      if (message.ready) next();
      else if (message.done) {
        measured[durationKey(message.done)] = { seconds: Math.round(message.seconds * 10) / 10, cpu: Math.round(message.cpu * 10) / 10 };
        if (message.loadFailed) failed = true;
        next();
      } else if (message.totals) for (const k of Object.keys(totals)) totals[k] += message.totals[k] ?? 0;
    });
    child.on('close', (code, signal) => {
      if (code !== 0) failed = true;
      if (current) {
        // Even an exit code of 0: the file's tests did not all run (a process.exit in the file).
        failed = true;
        lost.push(current);
        process.stderr.write(`✖ worker ${index} ended (${signal ?? `exit code ${code}`}) while ${durationKey(current)} ran\n`);
        // The files it would have taken go to a new worker.
        if (queue.length) return resolve(runWorker(index));
      }
      resolve();
    });
  });
}

await Promise.all(Array.from({ length: Math.min(concurrency, selected.length) }, (_, i) => runWorker(i + 1)));

const minutes = ((Date.now() - started) / 60000).toFixed(1);
process.stdout.write(
  `\nall workers: ${selected.length} files, ${totals.tests} tests, ${totals.pass} passed, ${totals.fail} failed, ` +
    `${totals.cancelled} cancelled, ${totals.skipped} skipped, ${totals.todo} todo, ${minutes} min (${concurrency} workers)\n` +
    `workers out of files at ${idleFrom.sort((a, b) => a - b).map((m) => m.toFixed(1)).join(', ')} min\n`,
);
if (lost.length) process.stdout.write(`files cut short by their worker's end: ${lost.map(durationKey).join(', ')}\n`);

if (writeDurations && !failed) {
  const merged = { ...(filters.length ? durations : {}), ...measured };
  const sorted = Object.fromEntries(Object.entries(merged).sort(([a, x], [b, y]) => y.seconds - x.seconds || a.localeCompare(b)));
  fs.writeFileSync(durationsFile, JSON.stringify(sorted, null, 2) + '\n');
  process.stderr.write(`wrote ${path.relative(root, durationsFile)} (${Object.keys(sorted).length} files)\n`);
} else if (writeDurations) process.stderr.write('not writing test/durations.json: the run failed\n');
process.exit(failed ? 1 : 0);
