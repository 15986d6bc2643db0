/**
 * esbuild, required on the first compile: a server or CLI command that runs no script and no
 * notebook cell never loads it (10–18 ms of CPU at every start otherwise). require() rather than
 * import(): Node runs its CommonJS export lexer over a package imported as an ES module.
 */
import { createRequire } from 'node:module';
import type * as Esbuild from 'esbuild';

let loaded: typeof Esbuild | undefined;

/** The esbuild package, loaded on the first call. */
export const esbuild = (): typeof Esbuild => (loaded ??= createRequire(import.meta.url)('esbuild') as typeof Esbuild);
