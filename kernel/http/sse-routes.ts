/**
 * Server-sent-event routes: replay from Last-Event-ID then live events with no gap, a heartbeat,
 * a client that stops reading dropped, every open stream ended by a graceful close.
 */
import type { ServerResponse } from 'node:http';
import { formatSseEvent, type SseEvent, type SseRouteDefinition } from '../../sdk/routes.js';
import { streamOwner } from '../http-guards.js';
import { describeRoute, logRequest, routeRequest, type ServerParts } from './request-checks.js';
import { tokenFromQuery } from './socket-routes.js';

/** Unsent bytes an SSE client may fall behind by before the server drops it. */
const SSE_MAX_PENDING_BYTES = 4 * 1024 * 1024;

/** Registers SSE routes on `parts.server`; `openStreams` holds the responses still streaming (a close ends them). */
export function sseRegistrar({ server, checks, streams }: ServerParts, heartbeatMs: number, openStreams: Set<ServerResponse>): (route: SseRouteDefinition, tag: string) => void {
  return (route, tag) => {
    server.route({
      method: 'GET',
      url: route.url,
      schema: { ...describeRoute(route.summary, route.permission, 'Server-sent events (text/event-stream); send Last-Event-ID to resume.'), tags: [tag] },
      preValidation: async (req) => {
        tokenFromQuery(req);
        const refused = checks.originRefusal(req, 'stream');
        if (refused) throw refused;
        await checks.checkCaller(req, route.permission, `GET ${route.url}`);
      },
      handler: async (req, reply) => {
        const source = await route.source(routeRequest(req));
        const release = streams.acquire(streamOwner(req));
        const header = req.headers['last-event-id'];
        const lastEventId = (Array.isArray(header) ? header[0] : header) ?? null;
        const res = reply.raw;
        // A client that stops reading is dropped rather than buffered without bound; it
        // reconnects with Last-Event-ID and gets what it missed from the source's buffer.
        const send = (text: string) => {
          if (res.destroyed) return;
          if (res.writableLength > SSE_MAX_PENDING_BYTES) res.destroy();
          else res.write(text);
        };
        // since() and subscribe() in one synchronous step (and before anything is sent, so a
        // throwing source still gets a JSON error): no event falls between replay and live.
        let replay: SseEvent[];
        const live: string[] = [];
        let streaming = false;
        let unsubscribe: () => void;
        try {
          replay = source.since(lastEventId);
          unsubscribe = source.subscribe((e) => (streaming ? send(formatSseEvent(e)) : live.push(formatSseEvent(e))));
        } catch (e) {
          release();
          throw e;
        }
        reply.hijack();
        res.writeHead(200, {
          ...(reply.getHeaders() as Record<string, string>),
          'content-type': 'text/event-stream; charset=utf-8',
          'cache-control': 'no-cache, no-transform',
          connection: 'keep-alive',
          'x-accel-buffering': 'no',
        });
        // Headers out now, not with the first event or heartbeat: the client knows it is subscribed.
        res.flushHeaders();
        for (const e of replay) send(formatSseEvent(e));
        for (const text of live) send(text);
        streaming = true;
        const heartbeat = setInterval(() => send(': keepalive\n\n'), heartbeatMs);
        openStreams.add(res);
        req.raw.on('close', () => {
          release();
          openStreams.delete(res);
          clearInterval(heartbeat);
          unsubscribe();
          logRequest(req, 200, reply.elapsedTime);
        });
      },
    });
  };
}
