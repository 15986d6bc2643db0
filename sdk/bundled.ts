/**
 * A package from the one-file bundle the build makes of it (dist/vendor/, scripts/build.mjs),
 * or the package itself when there is no bundle (a source checkout before its first build).
 * Bundled, a package of tens or hundreds of modules loads as one file: what every dp process
 * would otherwise pay to resolve and wrap them one by one at its start (bench/cli-start).
 * `from` is the caller's `import.meta.url`; `bundle` is relative to it.
 */
import { createRequire } from 'node:module';

export function requireBundled<T>(from: string, bundle: string, packageId: string): { module: T; bundled: boolean; require: NodeJS.Require } {
  const require = createRequire(from);
  try {
    return { module: require(bundle) as T, bundled: true, require };
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'MODULE_NOT_FOUND') throw e;
    return { module: require(packageId) as T, bundled: false, require };
  }
}
