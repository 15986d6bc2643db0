/**
 * Static folders (the web UI, a plugin's prebuilt pages) behind their permission, and the
 * not-found handler: a page load of a client-side route gets its SPA's index.html, anything else
 * the JSON 404.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { FastifyRequest } from 'fastify';
import fastifyStatic from '@fastify/static';
import type { RoutePermission } from '../../sdk/auth.js';
import { DpError } from '../../sdk/errors.js';
import type { StaticRouteDefinition } from '../../sdk/routes.js';
import { MAX_PARAM_LENGTH } from '../http-errors.js';
import { errorReply } from './error-reply.js';
import type { ServerParts } from './request-checks.js';
import { allowInlineScripts } from './security-headers.js';

/** Paths the SPA fallback never answers: an API, the API docs, sockets and the MCP endpoint keep their JSON 404. */
const NOT_SPA = /^\/(api|docs|ws|mcp)(\/|$)/;

/** Sets the not-found handler and returns the registrar of static routes (those with `spaFallback` answer it). */
export function staticRegistrar({ server, checks }: ServerParts): (route: StaticRouteDefinition) => Promise<void> {
  const spaRoots: Array<{ prefix: string; root: string; permission: RoutePermission; scriptHashes: string[] }> = [];

  /** The static route whose index.html answers this request, when it is a page load of a client-side route. */
  function spaFallbackFor(req: FastifyRequest, urlPath: string) {
    if ((req.method !== 'GET' && req.method !== 'HEAD') || NOT_SPA.test(urlPath)) return null;
    if (!/text\/html|application\/xhtml\+xml/.test(String(req.headers.accept ?? ''))) return null;
    const matches = spaRoots.filter((s) => s.prefix === '/' || urlPath === s.prefix || urlPath.startsWith(s.prefix + '/'));
    // The longest prefix wins (a UI at / and another at /admin).
    return matches.sort((a, b) => b.prefix.length - a.prefix.length)[0] ?? null;
  }

  server.setNotFoundHandler(async (req, reply) => {
    const urlPath = req.url.split('?')[0];
    const spa = spaFallbackFor(req, urlPath);
    if (spa) {
      await checks.checkCaller(req, spa.permission, `GET ${spa.prefix}`);
      allowInlineScripts(reply, spa.scriptHashes);
      return reply.type('text/html; charset=utf-8').send(fs.createReadStream(path.join(spa.root, 'index.html')));
    }
    return errorReply(reply, new DpError(404, 'not_found', `No endpoint ${req.method} ${urlPath}`, { method: req.method, path: urlPath }));
  });

  return async (route) => {
    const prefix = route.url === '/' ? '/' : route.url.replace(/\/+$/, '');
    const scriptHashes = route.inlineScriptHashes ?? [];
    if (route.spaFallback) spaRoots.push({ prefix, root: route.root, permission: route.permission, scriptHashes });
    await server.register(async (scope) => {
      // A folder at / catches every path the router cannot match, including an API path whose
      // parameter is over the router's limit: answer that as the router would (414), not 404.
      scope.addHook('onRequest', async (req) => {
        const segments = req.url.split('?')[0].split('/');
        if (segments.some((s) => s.length > MAX_PARAM_LENGTH)) {
          throw new DpError(414, 'path_parameter_too_long', `A path parameter is longer than ${MAX_PARAM_LENGTH} characters`, { max_length: MAX_PARAM_LENGTH });
        }
      });
      scope.addHook('preValidation', async (req) => checks.checkCaller(req, route.permission, `GET ${route.url}`));
      if (scriptHashes.length) scope.addHook('onSend', async (_req, reply, payload) => (allowInlineScripts(reply, scriptHashes), payload));
      await scope.register(fastifyStatic, {
        root: route.root,
        prefix,
        // `/assets` answers a redirect to `/assets/` (after the permission check, like every file).
        redirect: true,
        decorateReply: false,
        dotfiles: 'deny',
        schemaHide: true,
      });
    });
  };
}
