/**
 * The HTTP server, split along its seams in kernel/http/: server.ts (createServer), error-reply.ts,
 * security-headers.ts, multipart.ts, tokens.ts. This module keeps the old import path.
 */
export { closeGracefully, createServer, type ServerOptions } from './http/server.js';
export { TOKEN_QUERY_PARAMS } from './http/tokens.js';
