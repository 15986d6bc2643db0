/**
 * The yaml package, from the one-file bundle the build makes (dist/vendor/yaml.cjs): the package
 * is about 80 CommonJS modules, and every command reads project.yml, so resolving and wrapping
 * them one by one was the largest part of a CLI start after DuckDB itself (bench/cli-start). The
 * package itself when there is no bundle (a source checkout before its first build). yaml marks
 * its nodes with global symbols (Symbol.for), so nodes from either copy are alike.
 */
import Module, { createRequire } from 'node:module';

export const yaml: typeof import('yaml') = (() => {
  const require = createRequire(import.meta.url);
  let bundle: typeof import('yaml');
  try {
    bundle = require('../vendor/yaml.cjs') as typeof import('yaml');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'MODULE_NOT_FOUND') throw e;
    return require('yaml') as typeof import('yaml');
  }
  shareWithPackageRequires(require, bundle);
  return bundle;
})();

/**
 * Every server also loads @fastify/swagger, which requires the package itself (for its YAML
 * answer): the package's 80 modules a second time, about 40 ms of CPU at each start. The bundle is
 * that package, built from the installed copy by scripts/build.mjs, so it goes into Node's module
 * cache under the package's own file and any require('yaml') that resolves to it gets the bundle.
 * Nothing is replaced: a require that ran first (or a package with its own yaml elsewhere) keeps
 * what it loaded.
 */
function shareWithPackageRequires(require: NodeJS.Require, bundle: typeof import('yaml')): void {
  let packageFile: string;
  try {
    packageFile = require.resolve('yaml');
  } catch {
    return;
  }
  if (require.cache[packageFile]) return;
  const entry = new Module(packageFile);
  entry.filename = packageFile;
  entry.exports = bundle;
  entry.loaded = true;
  require.cache[packageFile] = entry;
}
