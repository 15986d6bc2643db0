/**
 * @duckdb/node-api, loaded with require(). The package is CommonJS: an ES `import` of it makes
 * Node run its CommonJS export lexer over each of the package's ~80 files before any code runs,
 * which cost every dp command about 270 ms of CPU on the shared 2-core machine (issue 29,
 * bench/cli-start); require() loads the same modules without that pass. Types come from
 * `import type` as usual; the kernel's database modules take the package's values from here.
 */
import { createRequire } from 'node:module';

export const duckdb = createRequire(import.meta.url)('@duckdb/node-api') as typeof import('@duckdb/node-api');
