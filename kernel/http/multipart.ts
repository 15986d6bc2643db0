/** Upload routes: errors of the multipart parser itself answered 400 `invalid_multipart`. */
import type { FastifyRequest } from 'fastify';
import { DpError, errorMessage, isDpError } from '../../sdk/errors.js';

/**
 * Errors the multipart parser (busboy, under @fastify/multipart) raised while an upload route
 * read its body: a missing boundary, a truncated body, a malformed part. They are plain Errors
 * and would answer 500; the error handler answers them 400 `invalid_multipart`.
 */
export const multipartErrors = new WeakSet<object>();

export const malformedMultipart = (err: unknown) =>
  new DpError(400, 'invalid_multipart', `The multipart/form-data body cannot be read (${errorMessage(err).slice(0, 200)}); send a well-formed form with its boundary`);

/** Wraps the request's parts() so that errors of the parser itself (not of the route reading it) are marked. */
export function markMultipartErrors(req: FastifyRequest): void {
  const mark = (e: unknown) => {
    if (e !== null && typeof e === 'object' && !isDpError(e) && typeof (e as { statusCode?: unknown }).statusCode !== 'number') multipartErrors.add(e);
    return e;
  };
  const target = req as unknown as { parts: (options?: unknown) => AsyncIterableIterator<{ file?: NodeJS.ReadableStream }> };
  const parts = target.parts;
  target.parts = function (options?: unknown) {
    const inner = parts.call(this, options);
    return {
      async next() {
        try {
          const step = await inner.next();
          if (!step.done) step.value.file?.once('error', mark);
          return step;
        } catch (e) {
          throw mark(e);
        }
      },
      return: (value?: unknown) => inner.return!(value),
      throw: (e?: unknown) => inner.throw!(e),
      [Symbol.asyncIterator]() {
        return this;
      },
    } as AsyncIterableIterator<{ file?: NodeJS.ReadableStream }>;
  };
}
