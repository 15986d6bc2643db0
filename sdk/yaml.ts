/**
 * The yaml package, from the one-file bundle the build makes (dist/vendor/yaml.cjs): the package
 * is about 80 CommonJS modules, and every command reads project.yml, so resolving and wrapping
 * them one by one was the largest part of a CLI start after DuckDB itself (bench/cli-start). The
 * package itself when there is no bundle (a source checkout before its first build). yaml marks
 * its nodes with global symbols (Symbol.for), so nodes from either copy are alike.
 */
import { createRequire } from 'node:module';

export const yaml: typeof import('yaml') = (() => {
  const require = createRequire(import.meta.url);
  try {
    return require('../vendor/yaml.cjs') as typeof import('yaml');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'MODULE_NOT_FOUND') throw e;
    return require('yaml') as typeof import('yaml');
  }
})();
