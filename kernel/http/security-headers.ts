/** helmet's security headers and the Content-Security-Policy, built once per Host. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';
import helmet, { contentSecurityPolicy as helmetCsp } from 'helmet';

/** A valid CSP source expression for an inline script's hash. */
const SCRIPT_HASH = /^sha(256|384|512)-[A-Za-z0-9+/]+={0,2}$/;

/**
 * Adds a static route's declared inline-script hashes (an import map) to this response's
 * script-src; nothing else of the policy changes.
 */
export function allowInlineScripts(reply: FastifyReply, hashes: string[]): void {
  const policy = reply.getHeader('content-security-policy');
  const valid = hashes.filter((h) => SCRIPT_HASH.test(h)).map((h) => `'${h}'`);
  if (typeof policy !== 'string' || valid.length === 0) return;
  reply.header('content-security-policy', policy.replace(/(^|;)script-src ([^;]*)/, (_m, lead: string, sources: string) => `${lead}script-src ${sources} ${valid.join(' ')}`));
}

/** /docs only: swagger-ui writes style attributes from its bundle, so its pages keep inline styles (the UI's do not). */
export function allowInlineStyles(reply: FastifyReply): void {
  const policy = reply.getHeader('content-security-policy');
  if (typeof policy === 'string') reply.header('content-security-policy', policy.replace(/(^|;)style-src ([^;]*)/, (_m, lead: string, sources: string) => `${lead}style-src ${sources} 'unsafe-inline'`));
}

/**
 * The Content-Security-Policy: the UI's own scripts, styles, images (and data: images), fonts
 * and connections (fetch, EventSource, WebSocket to this host), nothing from elsewhere.
 * No inline styles either: the UI sets styles through the CSSOM (React) and CodeMirror's go to
 * adopted stylesheets (plugins/ui/client/adopted-styles.ts), so an injected style attribute or
 * <style> element (a collaborator's colour, say) is refused like an inline script.
 */
function contentSecurityPolicy(host: string | undefined) {
  // Only a plain host[:port] goes into the header (a crafted Host cannot add directives).
  const sameHostSockets = typeof host === 'string' && /^[A-Za-z0-9.\-]+(:\d+)?$|^\[[0-9A-Fa-f:.]+\](:\d+)?$/.test(host) ? `ws://${host} wss://${host}` : "'self'";
  return {
    useDefaults: false,
    directives: {
      defaultSrc: ["'self'"],
      baseUri: ["'self'"],
      scriptSrc: ["'self'"],
      scriptSrcAttr: ["'none'"],
      styleSrc: ["'self'"],
      imgSrc: ["'self'", 'data:'],
      fontSrc: ["'self'", 'data:'],
      connectSrc: ["'self'", sameHostSockets],
      objectSrc: ["'none'"],
      frameAncestors: ["'self'"],
      formAction: ["'self'"],
    },
  };
}

/** The headers a helmet middleware sets on a response, recorded once (they depend on nothing of the request). */
function recordHeaders(middleware: (req: IncomingMessage, res: ServerResponse, next: (err?: unknown) => void) => void): Record<string, string> {
  const headers: Record<string, string> = {};
  const recorder = {
    setHeader: (name: string, value: string) => void (headers[name.toLowerCase()] = String(value)),
    removeHeader: (name: string) => void delete headers[name.toLowerCase()],
  };
  middleware({} as IncomingMessage, recorder as unknown as ServerResponse, (err) => {
    if (err) throw err;
  });
  return headers;
}

/** Distinct Host headers whose policy is kept (a client sending a new Host per request only costs a rebuild). */
const CSP_HOSTS_MAX = 64;

/**
 * helmet's security headers for every response: all but the CSP are the same for every request,
 * and the CSP differs only by the Host (the WebSocket source), so both are built once (per Host)
 * instead of running helmet per request (about 30 µs of CPU each, measured).
 */
export function securityHeaders(): (host: string | undefined) => Record<string, string> {
  const fixed = recordHeaders(helmet({ contentSecurityPolicy: false, hsts: false }));
  const byHost = new Map<string | undefined, Record<string, string>>();
  return (host) => {
    let headers = byHost.get(host);
    if (!headers) {
      if (byHost.size >= CSP_HOSTS_MAX) byHost.delete(byHost.keys().next().value);
      headers = { ...fixed, ...recordHeaders(helmetCsp(contentSecurityPolicy(host))) };
      byHost.set(host, headers);
    }
    return headers;
  };
}
