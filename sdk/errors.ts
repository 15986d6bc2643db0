/**
 * The one error type every layer throws. The HTTP server turns it into the error body
 * from docs/decisions.md "Error body": {"error": {"code", "message", "details"}}; the CLI prints its message.
 */
export class DpError extends Error {
  readonly status: number;
  readonly code: string;
  readonly details: Record<string, unknown>;
  /** Extra response headers (for example Retry-After on 429). */
  readonly headers: Record<string, string>;

  constructor(
    status: number,
    code: string,
    message: string,
    details: Record<string, unknown> = {},
    headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'DpError';
    this.status = status;
    this.code = code;
    this.details = details;
    this.headers = headers;
  }

  toBody(): { error: { code: string; message: string; details: Record<string, unknown> } } {
    return { error: { code: this.code, message: this.message, details: this.details } };
  }
}

export const badRequest = (code: string, message: string, details: Record<string, unknown> = {}) =>
  new DpError(400, code, message, details);
export const unauthorized = (code: string, message: string, details: Record<string, unknown> = {}) =>
  new DpError(401, code, message, details);
export const forbidden = (code: string, message: string, details: Record<string, unknown> = {}) =>
  new DpError(403, code, message, details);
export const notFound = (code: string, message: string, details: Record<string, unknown> = {}) =>
  new DpError(404, code, message, details);
export const conflict = (code: string, message: string, details: Record<string, unknown> = {}) =>
  new DpError(409, code, message, details);

export function isDpError(e: unknown): e is DpError {
  return e instanceof DpError || (typeof e === 'object' && e !== null && (e as { name?: string }).name === 'DpError');
}

/**
 * 507 `no_space_left` for a write that failed because the disk is full (Node's ENOSPC, DuckDB's
 * "No space left on device"), else null. The message names no path: DuckDB's names the file by its
 * absolute path, which never reaches an answer. `what` says what was not written.
 */
export function noSpaceLeft(e: unknown, what = 'The operation'): DpError | null {
  if (isDpError(e)) return e.code === 'no_space_left' ? e : null;
  const code = (e as { code?: unknown } | null)?.code;
  if (code !== 'ENOSPC' && !/no space left on device|disk (is )?full/i.test(errorMessage(e))) return null;
  return new DpError(507, 'no_space_left', `No space left on the disk: ${what} did not complete and what it had written was removed; free some space and try again`);
}

/** Message of any thrown value, without a stack. */
export function errorMessage(e: unknown): string {
  if (e instanceof Error) return e.message;
  return String(e);
}

/** One entry of an error catalogue: the HTTP status the code is always answered with, and what it means. */
export interface ErrorCodeInfo {
  status: number;
  meaning: string;
}

/**
 * A plugin's (or the kernel's) error codes. Each plugin declares the codes it throws in its
 * `errors.ts` with `defineErrors`; `docs/errors.md` is generated from every catalogue at build
 * time, and a test checks that every code thrown in the code is catalogued with the same status
 * and that no code is defined twice (a code never changes meaning).
 */
export type ErrorCatalogue = Readonly<Record<string, ErrorCodeInfo>>;

export function defineErrors<T extends Record<string, ErrorCodeInfo>>(catalogue: T): Readonly<T> {
  return Object.freeze(catalogue);
}
