// Builds the web UI into dist/ui with Vite (config: plugins/ui/vite.config.mjs), type-checks it
// (tsconfig.ui.json), and writes the import map the shell gives third-party pages into
// dist/ui/index.html. Skipped when none of its inputs changed since the last build (a hash of
// every file it reads is kept in dist/ui/ui-build.json). `--force` rebuilds regardless.
// Run by scripts/build.mjs after tsc.
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const outDir = path.join(root, 'dist', 'ui');
const infoFile = path.join(outDir, 'ui-build.json');
const started = Date.now();

/** Every file the UI build reads from the repository (node_modules through the lock file). */
function inputFiles() {
  const files = [
    'package-lock.json',
    'tsconfig.ui.json',
    'scripts/build-ui.mjs',
  ].map((f) => path.join(root, f));
  const walk = (dir) => {
    if (!fs.existsSync(dir)) return;
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else files.push(p);
    }
  };
  for (const name of fs.readdirSync(path.join(root, 'plugins')).sort()) {
    const dir = path.join(root, 'plugins', name);
    if (!fs.existsSync(path.join(dir, 'plugin.json'))) continue;
    files.push(path.join(dir, 'plugin.json'));
    files.push(path.join(dir, 'api-types.ts'));
    walk(path.join(dir, 'ui'));
  }
  // The plugins' api-types.ts may take their types from the sdk's contracts.
  walk(path.join(root, 'sdk'));
  walk(path.join(root, 'plugins', 'ui', 'app'));
  walk(path.join(root, 'plugins', 'ui', 'client'));
  files.push(path.join(root, 'plugins', 'ui', 'vite.config.mjs'));
  return files.filter((f) => fs.existsSync(f)).sort();
}

function inputsHash() {
  const h = createHash('sha256');
  for (const f of inputFiles()) {
    h.update(path.relative(root, f));
    h.update('\0');
    h.update(fs.readFileSync(f));
    h.update('\0');
  }
  return h.digest('hex');
}

const hash = inputsHash();
if (!process.argv.includes('--force')) {
  try {
    const previous = JSON.parse(fs.readFileSync(infoFile, 'utf8'));
    if (previous.inputsHash === hash && fs.existsSync(path.join(outDir, 'index.html'))) {
      process.stderr.write('web UI unchanged, not rebuilt\n');
      process.exit(0);
    }
  } catch {
    // No previous build: build.
  }
}

// Type-check the UI sources (Vite only strips types). Its own tsconfig: DOM, JSX, bundler resolution.
const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');
const checked = spawnSync(process.execPath, [tsc, '-p', path.join(root, 'tsconfig.ui.json')], { stdio: 'inherit', cwd: root });
if (checked.status !== 0) {
  process.stderr.write('web UI type check failed\n');
  process.exit(checked.status ?? 1);
}

const { build } = await import('vite');
const { uiViteConfig, SHARED_MODULES, sharedEntryName, builtInPages } = await import(pathToFileURL(path.join(root, 'plugins', 'ui', 'vite.config.mjs')).href);
const result = await build(uiViteConfig(root));
const outputs = (Array.isArray(result) ? result : [result]).flatMap((r) => r.output);

// The import map: each shared bare name → its entry chunk.
const imports = {};
for (const bare of Object.keys(SHARED_MODULES)) {
  const chunk = outputs.find((o) => o.type === 'chunk' && o.isEntry && o.name === sharedEntryName(bare));
  if (!chunk) throw new Error(`the UI build has no chunk for the shared module ${bare}`);
  imports[bare] = '/' + chunk.fileName;
}
const importMap = JSON.stringify({ imports });
const indexFile = path.join(outDir, 'index.html');
const html = fs.readFileSync(indexFile, 'utf8');
// First thing in <head>: an import map must come before any module script or modulepreload.
fs.writeFileSync(indexFile, html.replace(/<head>/, `<head>\n    <script type="importmap">${importMap}</script>`));
const importMapHash = 'sha256-' + createHash('sha256').update(importMap).digest('base64');
fs.writeFileSync(infoFile, JSON.stringify({ inputsHash: hash, importMapHash, imports, builtPages: Object.keys(builtInPages(root)) }, null, 2) + '\n');
process.stderr.write(`built the web UI into dist/ui in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
