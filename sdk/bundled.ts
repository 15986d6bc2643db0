/**
 * A package from the one-file bundle the build makes of it (dist/vendor/, scripts/build.mjs),
 * or the package itself when there is no bundle (a source checkout before its first build).
 * Bundled, a package of tens or hundreds of modules loads as one file: what every dp process
 * would otherwise pay to resolve and wrap them one by one at its start (bench/cli-start).
 * `from` is the caller's `import.meta.url`; `bundle` is relative to it.
 *
 * Beside a bundle the build keeps V8's code cache of it (`<bundle>.v8cache`, written by
 * `writeCodeCache` after the bundle ran once): with it V8 skips parsing and compiling the
 * bundle's code again, about a third of loading the three largest bundles. The cache starts with
 * the SHA-256 of the source it was made from and is used only for that source (V8's own check
 * compares lengths); one V8 refuses (another Node, other V8 flags) is ignored, and the bundle
 * compiles as it would without one.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import Module, { createRequire } from 'node:module';
import path from 'node:path';
import vm from 'node:vm';

export function requireBundled<T>(from: string, bundle: string, packageId: string): { module: T; bundled: boolean; require: NodeJS.Require } {
  const require = createRequire(from);
  let file: string;
  try {
    file = require.resolve(bundle);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'MODULE_NOT_FOUND') throw e;
    return { module: require(packageId) as T, bundled: false, require };
  }
  return { module: loadBundle(file, require) as T, bundled: true, require };
}

const CODE_CACHE_SUFFIX = '.v8cache';
const HASH_BYTES = 32;

const sourceHash = (source: string) => crypto.createHash('sha256').update(source).digest();

/** A bundle loaded as `require` would (one module in Node's cache, its own `require`), compiled with its code cache when it has a valid one. */
function loadBundle(file: string, require: NodeJS.Require): unknown {
  const kept = require.cache[file];
  if (kept) return kept.exports;
  let cache: Buffer;
  try {
    cache = fs.readFileSync(file + CODE_CACHE_SUFFIX);
  } catch {
    return require(file);
  }
  const source = fs.readFileSync(file, 'utf8');
  if (cache.length <= HASH_BYTES || !cache.subarray(0, HASH_BYTES).equals(sourceHash(source))) return require(file);
  return run(file, source, cache.subarray(HASH_BYTES), require).exports;
}

/** Compiles (with V8's cached data when given) and runs a CommonJS file as Node's loader would; the script is for writeCodeCache. */
function run(file: string, source: string, cachedData: Buffer | undefined, require: NodeJS.Require): { exports: unknown; script: vm.Script } {
  // A dynamic import() in the bundle resolves as it would in a module Node loaded itself.
  const importModuleDynamically = (vm as unknown as { constants?: { USE_MAIN_CONTEXT_DEFAULT_LOADER?: unknown } }).constants?.USE_MAIN_CONTEXT_DEFAULT_LOADER;
  const script = new vm.Script(Module.wrap(source), { filename: file, cachedData, ...(importModuleDynamically ? { importModuleDynamically: importModuleDynamically as never } : {}) });
  const mod = new Module(file);
  mod.filename = file;
  mod.paths = (Module as unknown as { _nodeModulePaths(dir: string): string[] })._nodeModulePaths(path.dirname(file));
  require.cache[file] = mod;
  try {
    const wrapper = script.runInThisContext() as (exports: unknown, require: NodeJS.Require, module: Module, filename: string, dirname: string) => void;
    wrapper.call(mod.exports, mod.exports, createRequire(file), mod, file, path.dirname(file));
  } catch (e) {
    delete require.cache[file];
    throw e;
  }
  mod.loaded = true;
  return { exports: mod.exports, script };
}

/**
 * For the build: runs a bundle once in this process and writes V8's code cache of it beside it,
 * with the functions its load compiled.
 */
export function writeCodeCache(file: string): void {
  const require = createRequire(file);
  delete require.cache[file];
  const source = fs.readFileSync(file, 'utf8');
  const { script } = run(file, source, undefined, require);
  fs.writeFileSync(file + CODE_CACHE_SUFFIX, Buffer.concat([sourceHash(source), script.createCachedData()]));
}
