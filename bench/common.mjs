// What the plain-JavaScript benches share (the TypeScript ones have bench/util.ts).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** The median of a list of numbers (the mean of the two middle ones for an even count). */
export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

/**
 * A temp copy of examples/shop, seeded and transformed by `dp` (this checkout's unless another
 * bin/dp.js is given), so every side of a bench reads the same tables. The caller removes it.
 */
export function builtShopCopy(prefix, dp = path.join(repo, 'bin', 'dp.js')) {
  const project = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  fs.cpSync(path.join(repo, 'examples', 'shop'), project, { recursive: true, filter: (src) => !/\.duckdb(\.wal)?$|\.service-env$/.test(src) });
  for (const step of ['seed', 'transform']) {
    const r = spawnSync(process.execPath, [dp, step], { cwd: project, encoding: 'utf8', env: { ...process.env, DP_LOG_SILENT: '1' } });
    if (r.status !== 0) {
      fs.rmSync(project, { recursive: true, force: true });
      throw new Error(`dp ${step} failed (${r.status}): ${r.stderr}`);
    }
  }
  return project;
}

/** The project's DuckDB file (the one `*.duckdb` at its top). */
export function databaseFileOf(project) {
  return path.join(project, fs.readdirSync(project).find((f) => f.endsWith('.duckdb')));
}
