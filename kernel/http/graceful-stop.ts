/**
 * `dp serve`'s graceful stop (README: new requests get `503 shutting_down`): the server keeps
 * listening while in-flight requests finish (at most `graceMs`), so a new request gets the 503
 * of `app.close()` (and `Connection: close`) instead of a refused connection; event streams and
 * sockets end at once; then the server closes.
 */
import type { ServerResponse } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

const gracefulStops = new WeakMap<FastifyInstance, (graceMs: number) => Promise<void>>();

/** Call it with `app.close()`, which sets the 503. */
export function closeGracefully(server: FastifyInstance, graceMs: number): Promise<void> {
  const stop = gracefulStops.get(server);
  return stop ? stop(graceMs) : server.close();
}

/**
 * Tracks the requests (event streams included) whose response has not closed, and the event
 * streams still open, for the server's graceful stop and its close. `track` runs first thing on
 * every request; `openStreams` is filled by the SSE routes.
 */
export function gracefulStopOf(server: FastifyInstance): { track(req: FastifyRequest, reply: FastifyReply): void; openStreams: Set<ServerResponse> } {
  let inFlight = 0;
  const whenIdle: Array<() => void> = [];
  const openStreams = new Set<ServerResponse>();
  // Event streams never finish on their own: a close ends them (clients reconnect with
  // Last-Event-ID); @fastify/websocket closes its sockets the same way.
  server.addHook('preClose', async () => {
    for (const res of openStreams) res.end();
  });
  gracefulStops.set(server, async (graceMs) => {
    // Streams and sockets never finish on their own: end them now (clients reconnect later).
    for (const res of openStreams) res.end();
    for (const client of (server as unknown as { websocketServer?: { clients: Set<{ close(code: number, reason: string): void }> } }).websocketServer?.clients ?? []) {
      client.close(1001, 'server shutting down');
    }
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      new Promise<void>((resolve) => (inFlight === 0 ? resolve() : whenIdle.push(resolve))),
      new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs))),
    ]);
    clearTimeout(timer);
    await server.close();
  });
  return {
    openStreams,
    track(req, reply) {
      if (req.headers.upgrade !== undefined) return;
      inFlight++;
      reply.raw.once('close', () => {
        if (--inFlight === 0) for (const idle of whenIdle.splice(0)) idle();
      });
    },
  };
}
