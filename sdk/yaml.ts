/**
 * The yaml package, from its bundle (dist/vendor/yaml.cjs; see bundled.ts): the package is about
 * 80 CommonJS modules, and every command reads project.yml, so resolving and wrapping them one by
 * one was the largest part of a CLI start after DuckDB itself (bench/cli-start). yaml marks its
 * nodes with global symbols (Symbol.for), so nodes from the bundle and from the package are alike.
 */
import Module from 'node:module';
import { requireBundled } from './bundled.js';

export const yaml: typeof import('yaml') = (() => {
  const { module: loaded, bundled, require } = requireBundled<typeof import('yaml')>(import.meta.url, '../vendor/yaml.cjs', 'yaml');
  if (bundled) shareWithPackageRequires(require, loaded);
  return loaded;
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
