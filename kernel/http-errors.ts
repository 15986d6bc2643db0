/**
 * Bad input answered in dp's error shape, whatever layer refuses it: the request validator
 * (ajv), Fastify's router and body parser, and Node's HTTP parser (before Fastify sees a request).
 */
import http from 'node:http';
import type { Duplex } from 'node:stream';
import { Ajv, type ErrorObject, type Options as AjvOptions, type ValidateFunction } from 'ajv';
import formatsModule from 'ajv-formats';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { DpError } from '../sdk/errors.js';
import { ajvFieldError, compileOnFirstUse } from '../sdk/project-files.js';

/**
 * Longest path parameter (as sent, %-encoded) the router matches. Fastify's default of 100 made
 * long table and file names unreachable; beyond this the answer is 414 `path_parameter_too_long`.
 */
export const MAX_PARAM_LENGTH = 2048;

const addFormats = ((formatsModule as unknown as { default?: unknown }).default ?? formatsModule) as (ajv: Ajv) => Ajv;

const COMMON: AjvOptions = { removeAdditional: false, useDefaults: true, allErrors: false, allowUnionTypes: true, addUsedSchema: false };

/**
 * The validator compiler for route schemas. JSON bodies are validated as sent: a number where a
 * string is expected (or an array where an object is) is refused, never coerced. Querystrings,
 * path parameters and headers are text by nature, so their values are coerced to the declared
 * types, but a coercion that yields a non-finite number (`1e400`) or an integer beyond 2^53 is
 * refused rather than passed on as Infinity or a rounded value.
 */
export function routeValidatorCompiler(): (route: { schema: object; httpPart?: string }) => ValidateFunction {
  let strict: Ajv | undefined;
  let coercing: Ajv | undefined;
  return ({ schema, httpPart }) => {
    // Compiled on the route's first request, not at start-up: a server has a few hundred route
    // schemas and a session (or a test) reaches few of them; compiling them all was about a
    // third of a test server's start (issue 29).
    const validate = compileOnFirstUse(() =>
      (httpPart === 'body' ? (strict ??= addFormats(new Ajv({ ...COMMON, coerceTypes: false }))) : (coercing ??= addFormats(new Ajv({ ...COMMON, coerceTypes: 'array' })))).compile(schema),
    );
    const checked = function (this: unknown, data: unknown, dataCxt?: unknown) {
      const ok = (validate as (d: unknown, c?: unknown) => boolean).call(this, data, dataCxt);
      if (!ok) {
        checked.errors = validate.errors;
        return false;
      }
      const bad = badNumber(data, '');
      if (bad) {
        checked.errors = [bad];
        return false;
      }
      checked.errors = null;
      return true;
    } as unknown as ValidateFunction & { errors: ErrorObject[] | null | undefined };
    // Fastify passes the parent object when the validator has a schemaEnv (every compiled ajv
    // validator has one), so defaults and coercions can replace the root value.
    (checked as unknown as { schemaEnv: unknown }).schemaEnv = true;
    return checked;
  };
}

/** The first number in a validated value that is not finite or is an integer too large to hold exactly. */
function badNumber(value: unknown, at: string, depth = 0): ErrorObject | null {
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) return numberError(at, 'must be a finite number');
    if (Number.isInteger(value) && !Number.isSafeInteger(value)) return numberError(at, 'must be an integer between -(2^53-1) and 2^53-1');
    return null;
  }
  if (depth > 32 || value === null || typeof value !== 'object') return null;
  for (const [k, v] of Object.entries(value)) {
    const found = badNumber(v, `${at}/${k}`, depth + 1);
    if (found) return found;
  }
  return null;
}

function numberError(instancePath: string, message: string): ErrorObject {
  return { instancePath, schemaPath: '#/type', keyword: 'type', params: {}, message };
}

/** Fastify's own request errors (validation, body parsing, routing) as DpErrors; null for anything else. */
export function fromFastifyError(err: any): DpError | null {
  if (err.validation) {
    const first = err.validation[0] ?? {};
    const extra = first.params?.additionalProperty;
    const field = ajvFieldError({ instancePath: '', params: {}, ...first }).field || null;
    const context = err.validationContext ?? 'request';
    const message = extra ? `unknown field '${field}'` : `${field ? `field '${field}' ` : ''}${first.message ?? err.message}`;
    return new DpError(400, 'invalid_request', `${context}: ${message}`, { field, location: context });
  }
  switch (err.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new DpError(413, 'payload_too_large', 'The request body is larger than this endpoint accepts');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new DpError(415, 'unsupported_media_type', 'Send the body as application/json');
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new DpError(400, 'invalid_json', 'The body is empty but the content type is JSON');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new DpError(400, 'invalid_content_length', 'The Content-Length header does not match the body');
    case 'FST_ERR_BAD_URL':
      return new DpError(400, 'invalid_url', 'The URL path holds an invalid %-encoding');
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return new DpError(414, 'path_parameter_too_long', `A path parameter is longer than ${MAX_PARAM_LENGTH} characters`, { max_length: MAX_PARAM_LENGTH });
  }
  if (err instanceof SyntaxError || err.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || (/JSON|prototype/.test(err.message ?? '') && err.statusCode === 400)) {
    return new DpError(400, 'invalid_json', 'The request body is not valid JSON');
  }
  if (typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500) {
    return new DpError(err.statusCode, 'bad_request', String(err.message ?? 'Bad request').replace(/^FST_\w+:?\s*/, ''));
  }
  return null;
}

/** Errors Fastify raises before a route is found (`frameworkErrors`), answered like any other. */
export function frameworkErrorHandler(send: (reply: FastifyReply, err: DpError) => unknown) {
  return (err: any, _req: FastifyRequest, reply: FastifyReply) => {
    send(reply, fromFastifyError(err) ?? new DpError(400, 'bad_request', 'The request could not be routed'));
  };
}

/**
 * Node's HTTP parser refuses some requests before Fastify sees them (headers over the size
 * limit, malformed request lines); answer those on the socket in dp's shape and close it.
 */
export function clientErrorHandler(err: NodeJS.ErrnoException & { code?: string }, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const error =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? new DpError(431, 'headers_too_large', `The request headers are larger than ${Math.round(http.maxHeaderSize / 1024)} KiB`, { max_bytes: http.maxHeaderSize })
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? new DpError(408, 'request_timeout', 'The request did not arrive in time')
        : new DpError(400, 'malformed_request', 'The request is not valid HTTP/1.1');
  const body = JSON.stringify(error.toBody());
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${error.status} ${http.STATUS_CODES[error.status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

/**
 * The error with every absolute form of the given folders (the project root) cut to a relative
 * path: a message may quote an engine or file-system error that names a file by its full path.
 */
export function withoutAbsolutePaths(err: DpError, roots: string[]): DpError {
  const folders = [...new Set(roots.filter((r) => r && r !== '/'))].sort((a, b) => b.length - a.length);
  const scrub = (text: string) => folders.reduce((t, root) => t.split(`${root}/`).join('').split(root).join('.'), text);
  const message = scrub(err.message);
  const details = JSON.parse(scrub(JSON.stringify(err.details ?? {})));
  if (message === err.message && JSON.stringify(details) === JSON.stringify(err.details ?? {})) return err;
  return new DpError(err.status, err.code, message, details, err.headers);
}
