/**
 * undici's `request`, with the package required on the first call: most dp processes never make
 * an HTTP request (a CLI command that finds no server, a server whose connectors and webhooks are
 * not used), and loading undici costs a process start about 110 ms of CPU. One loader for the
 * kernel's CLI relay and webhook notifier and the remote connectors.
 */
import { requireOnFirstUse } from './require-on-first-use.js';

type Undici = typeof import('undici');

const undici = requireOnFirstUse<Undici>(import.meta.url, 'undici');

/** `undici.request`, loading the package on the first call. */
export const undiciRequest = (async (...args: Parameters<Undici['request']>) => undici().request(...args)) as Undici['request'];
