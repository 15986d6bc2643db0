/**
 * The API client every page uses: JSON in and out, the login cookie (or a bearer token set with
 * setToken), and errors as ApiError carrying the server's `{error: {code, message, details}}`.
 */

/** An API call that failed: the server's code and message (never a blank or a stack). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

let bearer: string | null = null;
const unauthorizedListeners = new Set<() => void>();

/**
 * A token for the Authorization header. The web UI itself relies on the HttpOnly `dp_token`
 * cookie that login and setup set; a token is for pages embedded where cookies are not sent.
 */
export function setToken(token: string | null): void {
  bearer = token;
}

/** Called when any call answers 401 (the session ended): the shell shows the login form. */
export function onUnauthorized(listener: () => void): () => void {
  unauthorizedListeners.add(listener);
  return () => unauthorizedListeners.delete(listener);
}

/**
 * Sent on every call: the server accepts a state-changing request authenticated by the login
 * cookie only from dp's own pages, and a page of another origin cannot add a custom header
 * (docs/security.md "Cross-origin requests"). Use `apiHeaders()` for a fetch of your own.
 */
export const SAME_ORIGIN_HEADER = { 'x-dp-request': '1' } as const;

/** The headers every call of the UI sends: the same-origin marker and the bearer token if one is set. */
export function apiHeaders(extra: Record<string, string> = {}): Record<string, string> {
  return { ...SAME_ORIGIN_HEADER, ...(bearer ? { authorization: `Bearer ${bearer}` } : {}), ...extra };
}

export interface RequestOptions {
  signal?: AbortSignal;
  /** Extra query parameters (undefined values are left out). */
  query?: Record<string, string | number | boolean | undefined | null>;
  headers?: Record<string, string>;
}

export function withQuery(path: string, query?: RequestOptions['query']): string {
  if (!query) return path;
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null) q.set(k, String(v));
  const s = q.toString();
  return s ? `${path}${path.includes('?') ? '&' : '?'}${s}` : path;
}

/** Turns a failed response into an ApiError with the server's message (or a readable stand-in). */
export async function errorFromResponse(res: Response): Promise<ApiError> {
  const text = await res.text().catch(() => '');
  try {
    const body = JSON.parse(text) as { error?: { code?: string; message?: string; details?: Record<string, unknown> } };
    if (body.error?.message) return new ApiError(res.status, body.error.code ?? 'error', body.error.message, body.error.details ?? {});
  } catch {
    // Not JSON: fall through.
  }
  return new ApiError(res.status, 'http_error', `The server answered ${res.status} ${res.statusText || ''}`.trim());
}

/** One HTTP call; returns the parsed JSON body (or the text for non-JSON answers). */
export function request<T = unknown>(method: string, path: string, body?: unknown, options: RequestOptions = {}): Promise<T> {
  return send<T>(method, path, body, options, 0);
}

/** Reads retried after a 503 (maintenance, environment switch), at most this many times. */
const RETRIES_503 = 3;

async function send<T>(method: string, path: string, body: unknown, options: RequestOptions, attempt: number): Promise<T> {
  const headers = apiHeaders({ accept: 'application/json', ...(options.headers ?? {}) });
  if (body !== undefined) headers['content-type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(withQuery(path, options.query), {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: options.signal,
      credentials: 'same-origin',
    });
  } catch (e) {
    if ((e as Error).name === 'AbortError') throw e;
    throw new ApiError(0, 'network_error', 'The server cannot be reached. Is dp serve running?');
  }
  // Maintenance or an environment switch: the server asks to come back shortly. A read retries.
  if (res.status === 503 && method === 'GET' && attempt < RETRIES_503) {
    const wait = Math.min(5, Number(res.headers.get('retry-after')) || 1);
    await new Promise((r) => setTimeout(r, wait * 1000));
    return send<T>(method, path, body, options, attempt + 1);
  }
  if (!res.ok) {
    const err = await errorFromResponse(res);
    if (res.status === 401) for (const l of unauthorizedListeners) l();
    throw err;
  }
  if (res.status === 204) return undefined as T;
  const type = res.headers.get('content-type') ?? '';
  return (type.includes('json') ? await res.json() : await res.text()) as T;
}

/** Fetches a file (CSV export …) and hands it to the browser as a download. */
export async function download(method: string, path: string, body: unknown, filename: string): Promise<void> {
  const headers = apiHeaders({ 'content-type': 'application/json' });
  const res = await fetch(path, { method, headers, body: JSON.stringify(body), credentials: 'same-origin' });
  if (!res.ok) throw await errorFromResponse(res);
  const blob = await res.blob();
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

export const api = {
  get: <T = unknown>(path: string, options?: RequestOptions) => request<T>('GET', path, undefined, options),
  post: <T = unknown>(path: string, body?: unknown, options?: RequestOptions) => request<T>('POST', path, body ?? {}, options),
  put: <T = unknown>(path: string, body?: unknown, options?: RequestOptions) => request<T>('PUT', path, body ?? {}, options),
  patch: <T = unknown>(path: string, body?: unknown, options?: RequestOptions) => request<T>('PATCH', path, body ?? {}, options),
  del: <T = unknown>(path: string, options?: RequestOptions) => request<T>('DELETE', path, undefined, options),
};

/** A path segment, encoded (`api.get(`/api/tables/${seg(schema)}/${seg(table)}`)`). */
export const seg = (s: string) => encodeURIComponent(s);
