// The compiled test files (dist/test/**/*.test.js) for scripts/test.mjs.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
export const testDir = path.join(root, 'dist', 'test');
export const durationsFile = path.join(root, 'test', 'durations.json');

/** Every compiled test file, sorted by path; with `filters`, only those whose path contains one of them. */
export function testFiles(filters = []) {
  const files = [];
  const walk = (dir) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(p);
      else if (entry.name.endsWith('.test.js')) files.push(p);
    }
  };
  if (fs.existsSync(testDir)) walk(testDir);
  return files.sort().filter((f) => !filters.length || filters.some((s) => f.includes(s)));
}

/** A file's key in test/durations.json: its path under dist/test, with forward slashes. */
export const durationKey = (file) => path.relative(testDir, file).split(path.sep).join('/');
