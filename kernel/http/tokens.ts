/** Tokens in query parameters (EventSource and WebSocket cannot send headers), kept out of the request log. */

/**
 * The query parameters a browser's EventSource or WebSocket sends its token in (they cannot set
 * headers): `access_token` (OAuth's name) and `token`, the name the SPEC's clients use.
 */
export const TOKEN_QUERY_PARAMS = ['access_token', 'token'] as const;

/** How long a socket that sends its token as the first message has to send it. */
export const FIRST_MESSAGE_TIMEOUT_MS = 10_000;

/** A URL as logged: the path, and the query with the token parameter blanked. */
export function loggedUrl(url: string): string {
  const q = url.indexOf('?');
  if (q < 0) return url;
  const params = new URLSearchParams(url.slice(q + 1));
  for (const name of TOKEN_QUERY_PARAMS) if (params.has(name)) params.set(name, '***');
  return `${url.slice(0, q)}?${params.toString()}`;
}
