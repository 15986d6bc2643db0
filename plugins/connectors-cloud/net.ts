/**
 * HTTP for the remote connector types: undici with timeouts, and errors that name the cause
 * in words (connection refused, host not found, timed out, authentication failed) without the
 * URL's path or query, which may carry a token.
 */
import type { Dispatcher } from 'undici';
import { DpError, errorMessage, isDpError, undiciRequest, type ConnectorTestResult } from '../../sdk/index.js';

export const DEFAULT_TIMEOUT_MS = 15_000;

/** `host:port` of a URL: what errors name (never the path or query). */
export function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return 'the configured URL';
  }
}

/** The cause of a network-level failure in words, or undefined when it is not one. */
export function networkCause(e: unknown, timeoutMs: number): string | undefined {
  const err = e as { name?: string; code?: string; cause?: { code?: string; name?: string } } | undefined;
  const code = err?.code ?? err?.cause?.code;
  if (err?.name === 'TimeoutError' || err?.cause?.name === 'TimeoutError') return `timed out after ${timeoutMs} ms`;
  switch (code) {
    case 'ECONNREFUSED':
      return 'connection refused';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
    case 'EAI_NONAME':
    case 'EAI_FAIL':
      return 'host not found';
    case 'ETIMEDOUT':
    case 'UND_ERR_CONNECT_TIMEOUT':
    case 'UND_ERR_HEADERS_TIMEOUT':
    case 'UND_ERR_BODY_TIMEOUT':
      return `timed out after ${timeoutMs} ms`;
    case 'ECONNRESET':
    case 'EPIPE':
    case 'UND_ERR_SOCKET':
    case 'UND_ERR_CLOSED':
      return 'connection closed by the server';
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return 'host unreachable';
    default:
      if (code && /^(ERR_TLS|CERT_|DEPTH_ZERO|SELF_SIGNED|UNABLE_TO_VERIFY)/.test(code)) return 'TLS handshake failed';
      return undefined;
  }
}

export function unreachable(where: string, cause: string): DpError {
  return new DpError(502, 'remote_unreachable', `${where}: ${cause}`, { host: where, cause });
}

export function authFailed(where: string, detail?: string): DpError {
  return new DpError(502, 'remote_auth_failed', `${where}: authentication failed${detail ? ` (${detail})` : ''}`, { host: where, cause: 'authentication failed' });
}

export function requestFailed(where: string, status: number, message: string): DpError {
  return new DpError(502, 'remote_request_failed', `${where}: HTTP ${status}${message ? `: ${message}` : ''}`, { host: where, status });
}

export function invalidResponse(where: string, message: string): DpError {
  return new DpError(502, 'remote_response_invalid', `${where}: ${message}`, { host: where });
}

export function paramInvalid(field: string, message: string): DpError {
  return new DpError(400, 'connector_param_invalid', `${field}: ${message}`, { field });
}

/** Aborted when the caller aborts or after `timeoutMs`. */
export function withTimeout(signal: AbortSignal, timeoutMs: number): AbortSignal {
  return AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]);
}

export interface HttpCall {
  method?: 'GET' | 'POST' | 'HEAD';
  headers?: Record<string, string>;
  body?: string | Buffer;
  signal: AbortSignal;
  /** Waiting for the headers, and for each body chunk (an idle limit: long downloads are fine). */
  timeoutMs: number;
  /**
   * Headers that authenticate (a token, an API key, configured headers): sent only to `origin`,
   * the connection's configured base origin, never to a URL or redirect elsewhere.
   */
  credentials?: { origin: string; headers: Record<string, string> };
}

/** Redirects a GET or HEAD follows (each hop judged again for credentials). */
export const MAX_REDIRECTS = 5;
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

/** The headers for one hop: the credentials only when `url` is on their origin (scheme, host and port alike). */
function headersFor(url: URL, call: HttpCall): Record<string, string> | undefined {
  if (!call.credentials || url.origin !== new URL(call.credentials.origin).origin) return call.headers;
  return { ...(call.headers ?? {}), ...call.credentials.headers };
}

/**
 * One HTTP request. Network failures become `remote_unreachable` with the cause; 401/403 become
 * `remote_auth_failed`; other statuses are answered to the caller (it decides what 404 means).
 */
export async function httpRequest(url: string, call: HttpCall): Promise<Dispatcher.ResponseData> {
  const where = hostOf(url);
  try {
    let target = new URL(url);
    let res: Dispatcher.ResponseData;
    // Redirects are followed here, hop by hop, so that each hop's origin decides whether the
    // credentials go with it (undici would forward them to any host).
    for (let hop = 0; ; hop++) {
      // undici loads on the first request (sdk/undici.ts): a server that calls no remote connector does without it.
      res = await undiciRequest(target, {
        method: call.method ?? 'GET',
        headers: headersFor(target, call),
        body: call.body,
        signal: call.signal,
        headersTimeout: call.timeoutMs,
        bodyTimeout: call.timeoutMs,
        maxRedirections: 0,
      });
      const location = res.headers.location;
      const followable = (call.method ?? 'GET') !== 'POST' && REDIRECT_STATUSES.has(res.statusCode) && typeof location === 'string' && hop < MAX_REDIRECTS;
      if (!followable) break;
      await res.body.dump();
      target = new URL(location, target);
      if (target.protocol !== 'http:' && target.protocol !== 'https:') throw unreachable(where, `redirected to a ${target.protocol} URL`);
    }
    if (res.statusCode === 401 || res.statusCode === 403) {
      const text = await readText(res, 2000).catch(() => '');
      throw authFailed(where, shortMessage(text));
    }
    return res;
  } catch (e) {
    if (isDpError(e)) throw e;
    if (call.signal.aborted && !(call.signal.reason instanceof Error && call.signal.reason.name === 'TimeoutError')) throw e;
    const cause = networkCause(e, call.timeoutMs) ?? (call.signal.aborted ? `timed out after ${call.timeoutMs} ms` : undefined);
    if (cause) throw unreachable(where, cause);
    throw unreachable(where, errorMessage(e));
  }
}

/** The body as text, at most `limit` characters (the rest is drained). */
export async function readText(res: Dispatcher.ResponseData, limit = Infinity): Promise<string> {
  let text = '';
  for await (const chunk of res.body) {
    if (text.length < limit) text += chunk.toString('utf8');
  }
  return text.length > limit ? text.slice(0, limit) : text;
}

/** A short, single-line message from an error body (JSON `message`/`error` fields when present). */
export function shortMessage(text: string): string {
  let message = text;
  try {
    const body = JSON.parse(text) as Record<string, unknown>;
    const m = body.message ?? (body.error as Record<string, unknown> | undefined)?.message ?? body.error ?? body.detail;
    if (typeof m === 'string') message = m;
  } catch {
    const xml = /<Message>([^<]*)<\/Message>/.exec(text);
    if (xml) message = xml[1]!;
  }
  return message.replace(/\s+/g, ' ').trim().slice(0, 200);
}

/** Throws for a status outside 2xx (after reading a short message from the body). */
export async function expectOk(res: Dispatcher.ResponseData, where: string): Promise<void> {
  if (res.statusCode >= 200 && res.statusCode < 300) return;
  const text = await readText(res, 4000).catch(() => '');
  throw requestFailed(where, res.statusCode, shortMessage(text));
}

/**
 * testConnection's frame: answers `{ok:false, message}` for any failure, and never waits past
 * `timeoutMs` even when the probe ignores its signal.
 */
export async function probe(signal: AbortSignal, timeoutMs: number, fn: (signal: AbortSignal) => Promise<string>): Promise<ConnectorTestResult> {
  const bounded = withTimeout(signal, timeoutMs);
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<ConnectorTestResult>((resolve) => {
    timer = setTimeout(() => resolve({ ok: false, message: `timed out after ${timeoutMs} ms` }), timeoutMs + 250);
  });
  try {
    return await Promise.race([
      fn(bounded).then(
        (message): ConnectorTestResult => ({ ok: true, message }),
        (e: unknown): ConnectorTestResult => {
          if (isDpError(e)) return { ok: false, message: e.message };
          const cause = networkCause(e, timeoutMs) ?? (bounded.aborted ? `timed out after ${timeoutMs} ms` : errorMessage(e));
          return { ok: false, message: cause };
        },
      ),
      deadline,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

export function timeoutOf(config: Record<string, unknown>): number {
  const t = config.timeout_ms;
  return typeof t === 'number' && t > 0 ? t : DEFAULT_TIMEOUT_MS;
}

/** The common `timeout_ms` parameter. */
export const TIMEOUT_PARAM = {
  type: 'integer',
  minimum: 100,
  maximum: 600_000,
  default: DEFAULT_TIMEOUT_MS,
  description: 'Milliseconds to wait for a connection, an answer, or the next chunk of one',
} as const;
