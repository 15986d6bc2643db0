// Times each compiled test file run alone (one `node --test <file>` per file, DP_TEST_CONCURRENCY
// or as many as the machine has cores at once) and writes test/durations.json, seconds per file,
// which scripts/test.mjs reads to start the slowest files first. Run it on an idle machine after
// `npm run build`, when files were added or got much slower or faster, and commit the list.
// Usage: node scripts/test-durations.mjs [substring ...]  — only those files (the others keep their entry).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { durationKey, durationsFile, root, testFiles } from './test-files.mjs';

const filters = process.argv.slice(2);
const selected = testFiles(filters);
const durations = filters.length && fs.existsSync(durationsFile) ? JSON.parse(fs.readFileSync(durationsFile, 'utf8')) : {};
// One run token for every file, as scripts/test.mjs gives (test/support/templates.ts suiteRun).
const runToken = `${Date.now().toString(36)}-${process.pid}`;
const concurrency = Number(process.env.DP_TEST_CONCURRENCY) || os.availableParallelism();
let next = 0;
async function worker() {
  while (next < selected.length) {
    const file = selected[next++];
    const started = Date.now();
    const code = await new Promise((resolve) => {
      const child = spawn(process.execPath, ['--test', '--test-reporter=dot', file], { cwd: root, env: { DP_TEST_RUN: runToken, ...process.env, DP_LOG_SILENT: '1' }, stdio: 'ignore' });
      child.on('close', resolve);
    });
    const rel = durationKey(file);
    durations[rel] = Math.round((Date.now() - started) / 100) / 10;
    process.stderr.write(`${String(durations[rel]).padStart(7)} s ${code ? 'FAILED ' : ''}${rel}\n`);
  }
}
await Promise.all(Array.from({ length: concurrency }, worker));
const sorted = Object.fromEntries(Object.entries(durations).sort(([a, x], [b, y]) => y - x || a.localeCompare(b)));
fs.writeFileSync(durationsFile, JSON.stringify(sorted, null, 2) + '\n');
process.stderr.write(`wrote ${path.relative(root, durationsFile)} (${Object.keys(sorted).length} files)\n`);
