import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, it } from 'node:test';
import { requireBundled, writeCodeCache } from '../../sdk/bundled.js';
import { tempDir } from '../helpers.js';

/** Writes a bundle's code cache as the build does (in another process: here, this one, then forgotten). */
function cacheAsTheBuild(file: string): void {
  writeCodeCache(file);
  delete createRequire(file).cache[file];
}

/** A folder with a caller file (its URL is requireBundled's `from`) and a bundle beside it. */
function bundleDir(source: string): { from: string; file: string } {
  const dir = tempDir('dp-bundle-');
  fs.writeFileSync(path.join(dir, 'caller.js'), '');
  const file = path.join(dir, 'bundle.cjs');
  fs.writeFileSync(file, source);
  return { from: pathToFileURL(path.join(dir, 'caller.js')).href, file };
}

describe("the build's bundles and their V8 code caches (sdk/bundled.ts)", () => {
  it('loads a bundle with its code cache as require would: one module, its own require', () => {
    const { from, file } = bundleDir("const path = require('node:path');\nmodule.exports = { answer: 42, sep: path.sep, here: __filename };\n");
    cacheAsTheBuild(file);
    const cache = fs.readFileSync(`${file}.v8cache`);
    assert.deepEqual(cache.subarray(0, 32), crypto.createHash('sha256').update(fs.readFileSync(file, 'utf8')).digest());
    const first = requireBundled<{ answer: number; sep: string; here: string }>(from, './bundle.cjs', 'no-such-package');
    assert.equal(first.bundled, true);
    assert.deepEqual(first.module, { answer: 42, sep: path.sep, here: file });
    // Node's module cache holds it: a second load (or a plain require) gets the same object.
    assert.equal(requireBundled(from, './bundle.cjs', 'no-such-package').module, first.module);
    assert.equal(first.require(file), first.module);
  });

  it('does not use a cache made from another source, even of the same length', () => {
    const { from, file } = bundleDir('module.exports = { value: 1 };\n');
    cacheAsTheBuild(file);
    // Same length, other code: V8's own check (the length) would accept the old cache.
    fs.writeFileSync(file, 'module.exports = { value: 2 };\n');
    assert.deepEqual(requireBundled(from, './bundle.cjs', 'no-such-package').module, { value: 2 });
  });

  it('lets a bundle loaded with its cache import() as a module Node loaded would', async () => {
    const { from, file } = bundleDir("module.exports = () => import('node:path');\n");
    cacheAsTheBuild(file);
    const load = requireBundled<() => Promise<typeof import('node:path')>>(from, './bundle.cjs', 'no-such-package').module;
    assert.equal((await load()).sep, path.sep);
  });

  it('takes the package when there is no bundle', () => {
    const { from } = bundleDir('module.exports = 1;\n');
    const loaded = requireBundled<typeof import('node:path')>(from, './missing.cjs', 'node:path');
    assert.equal(loaded.bundled, false);
    assert.equal(loaded.module.join('a', 'b'), path.join('a', 'b'));
  });
});
