// Runs every compiled test file (dist/test/**/*.test.js) with Node's own test runner.
// Usage: node scripts/test.mjs [substring ...]  — only files whose path contains one of the substrings.
// Files run in parallel, as many as the machine has cores (os.availableParallelism());
// DP_TEST_CONCURRENCY sets another number (README "Tests": running the suite under load).
// The slowest files start first (test/durations.json, seconds per file from a full run, written by
// scripts/test-durations.mjs): node --test takes files in the order given, so a long file started
// last would run alone at the end while the other cores idle.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import { durationKey, durationsFile, root, testFiles } from './test-files.mjs';

const durations = fs.existsSync(durationsFile) ? JSON.parse(fs.readFileSync(durationsFile, 'utf8')) : {};
const known = Object.values(durations).sort((a, b) => a - b);
// A file not in the list yet (new since the last timing) counts as a middling one.
const typical = known.length ? known[Math.floor(known.length / 2)] : 0;
const seconds = (file) => durations[durationKey(file)] ?? typical;
const selected = testFiles(process.argv.slice(2)).sort((a, b) => seconds(b) - seconds(a) || a.localeCompare(b));
if (selected.length === 0) {
  process.stderr.write('no test files found (did the build run?)\n');
  process.exit(1);
}
const concurrency = Number(process.env.DP_TEST_CONCURRENCY) || os.availableParallelism();
const r = spawnSync(process.execPath, ['--test', `--test-concurrency=${concurrency}`, '--test-reporter=spec', ...selected], {
  stdio: 'inherit',
  cwd: root,
  // One run token for every file (test/support/templates.ts suiteRun: templates whose content carries times are this run's).
  env: { DP_TEST_RUN: `${Date.now().toString(36)}-${process.pid}`, ...process.env, DP_LOG_SILENT: '1' },
});
process.exit(r.status ?? 1);
