/**
 * @duckdb/node-api, loaded with require(). The package is CommonJS: an ES `import` of it makes
 * Node run its CommonJS export lexer over each of the package's ~80 files before any code runs,
 * which cost every dp command about 270 ms of CPU on the shared 2-core machine (issue 29,
 * bench/cli-start); require() loads the same modules without that pass, and the build's one-file
 * bundle of the package's JavaScript (dist/vendor/duckdb-node-api.cjs, its native bindings left
 * to the package; sdk requireBundled) loads in about 45 ms where its 50 modules took about 78.
 * Types come from `import type` as usual; the kernel's database modules take the package's values
 * from here.
 */
import { requireBundled } from '../../sdk/bundled.js';

export const duckdb = requireBundled<typeof import('@duckdb/node-api')>(import.meta.url, '../../vendor/duckdb-node-api.cjs', '@duckdb/node-api').module;
