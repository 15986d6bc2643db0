#!/usr/bin/env node
// The dp command: runs the ahead-of-time compiled CLI in dist/ (built by `npm install`/`npm run build`).
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const entry = join(root, 'dist', 'kernel', 'cli.js');
if (!existsSync(entry)) {
  process.stderr.write(`error: dp is not built yet: run 'npm run build' in ${root}\n`);
  process.exit(1);
}
const { main } = await import(entry);
await main();
