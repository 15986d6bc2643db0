/**
 * A package loaded on the first call of the returned function, not when the module that needs it
 * loads (docs/plugins.md "Activation on demand"): the drivers, parsers and clients most dp
 * processes never use. require() rather than import(): for a package imported as an ES module Node
 * first runs its CommonJS export lexer over the package's files. `from` is the caller's
 * `import.meta.url`, so the package resolves from the caller's folder (a third-party plugin's own
 * node_modules included).
 *
 *   const pgDriver = requireOnFirstUse<typeof import('pg')>(import.meta.url, 'pg');
 *   new (pgDriver().Client)({ ... });
 */
import { createRequire } from 'node:module';

export function requireOnFirstUse<T>(from: string, id: string): () => T {
  let loaded: T | undefined;
  return () => (loaded ??= createRequire(from)(id) as T);
}
