// Compiles the TypeScript sources into dist/ (tsc, strict). Run by `npm install` (prepare) and before tests.
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
const started = Date.now();
const r = spawnSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.json')], { stdio: 'inherit', cwd: root });
if (r.status !== 0) {
  process.stderr.write('build failed\n');
  process.exit(r.status ?? 1);
}
process.stderr.write(`built dist/ in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
