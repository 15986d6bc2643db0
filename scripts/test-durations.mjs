// Times each compiled test file run alone (one `node --test <file>` per file, DP_TEST_CONCURRENCY
// or as many as the machine has cores at once) and writes test/durations.json, seconds per file,
// which scripts/test.mjs reads to start the slowest files first. Run it on an idle machine after
// `npm run build`, when files were added or got much slower or faster, and commit the list.
// Usage: node scripts/test-durations.mjs [substring ...]  — only those files (the others keep their entry).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const testDir = path.join(root, 'dist', 'test');
const out = path.join(root, 'test', 'durations.json');
const filters = process.argv.slice(2);
const files = [];
const walk = (dir) => {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) walk(p);
    else if (entry.name.endsWith('.test.js')) files.push(p);
  }
};
if (fs.existsSync(testDir)) walk(testDir);
const selected = files.sort().filter((f) => !filters.length || filters.some((s) => f.includes(s)));
const durations = filters.length && fs.existsSync(out) ? JSON.parse(fs.readFileSync(out, 'utf8')) : {};
const concurrency = Number(process.env.DP_TEST_CONCURRENCY) || os.availableParallelism();
let next = 0;
async function worker() {
  while (next < selected.length) {
    const file = selected[next++];
    const started = Date.now();
    const code = await new Promise((resolve) => {
      const child = spawn(process.execPath, ['--test', '--test-reporter=dot', file], { cwd: root, env: { ...process.env, DP_LOG_SILENT: '1' }, stdio: 'ignore' });
      child.on('close', resolve);
    });
    const rel = path.relative(testDir, file).split(path.sep).join('/');
    durations[rel] = Math.round((Date.now() - started) / 100) / 10;
    process.stderr.write(`${String(durations[rel]).padStart(7)} s ${code ? 'FAILED ' : ''}${rel}\n`);
  }
}
await Promise.all(Array.from({ length: concurrency }, worker));
const sorted = Object.fromEntries(Object.entries(durations).sort(([a, x], [b, y]) => y - x || a.localeCompare(b)));
fs.writeFileSync(out, JSON.stringify(sorted, null, 2) + '\n');
process.stderr.write(`wrote ${path.relative(root, out)} (${Object.keys(sorted).length} files)\n`);
