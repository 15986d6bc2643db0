/**
 * undici's `request`, with the package required on the first call: most dp processes never make
 * an HTTP request (a CLI command that finds no server, a server whose connectors and webhooks are
 * not used), and loading undici costs a process start about 110 ms of CPU. One loader for the
 * kernel's CLI relay and webhook notifier and the remote connectors. require() rather than
 * import(): Node runs its CommonJS export lexer over a package imported as an ES module.
 */
import { createRequire } from 'node:module';

type Undici = typeof import('undici');

let undici: Undici | undefined;

/** `undici.request`, loading the package on the first call. */
export const undiciRequest = (async (...args: Parameters<Undici['request']>) =>
  (undici ??= createRequire(import.meta.url)('undici') as Undici).request(...args)) as Undici['request'];
