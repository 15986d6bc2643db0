/**
 * Routes that are not JSON: WebSocket, server-sent events and static files. Each is declared
 * in plugin.json with a `kind` and a permission like any route, and registered by the kernel,
 * which checks the caller before the upgrade, the event stream or the file is served
 * (docs/decisions.md "Live events", docs/auth.md "WebSocket and SSE").
 */
import type { FastifyRequest } from 'fastify';
import type { Caller, RoutePermission } from './auth.js';

export interface RouteRequest<B = any, Q = any, P = any> {
  body: B;
  query: Q;
  params: P;
  caller: Caller;
  headers: Record<string, string | string[] | undefined>;
  ip: string;
  raw: FastifyRequest;
}

/**
 * What stops a query before its deadline: an AbortSignal, or `clientGone(reply)` (sdk/routes.ts),
 * which the query routes use because an AbortSignal per request costs about 20 µs of the main
 * thread's CPU (measured on POST /api/query), a tenth of what the whole request costs it.
 */
export interface QueryStopSignal {
  readonly aborted: boolean;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

export type RouteKind = 'json' | 'websocket' | 'sse' | 'static';

/** The server side of an open WebSocket (the `ws` library's socket, reduced to what routes use). */
export interface RouteSocket {
  readonly readyState: number;
  /** Bytes sent but not yet handed to the network (the client reads slower than it is sent to). */
  readonly bufferedAmount?: number;
  send(data: string | Buffer): void;
  close(code?: number, reason?: string): void;
  on(event: 'message', listener: (data: Buffer, isBinary: boolean) => void): this;
  on(event: 'close', listener: (code: number, reason: Buffer) => void): this;
  on(event: 'error', listener: (err: Error) => void): this;
}

export interface WebSocketRouteDefinition {
  kind: 'websocket';
  method: 'GET';
  /** Fastify path syntax under `/ws/`: `/ws/collaborate`. */
  url: string;
  permission: RoutePermission;
  summary?: string;
  /**
   * Checks the request once the caller is known (the `doc` a socket names, say); a DpError it
   * throws refuses the socket with that status (before the upgrade: a plain 4xx response).
   */
  accept?(req: RouteRequest): void | Promise<void>;
  /**
   * Lets a client that presented no credential upgrade and send its token as the first message,
   * a text frame `{"token": "..."}` (auth on only). The kernel resolves it and checks the
   * permission and `accept` before `handler` runs; messages that arrive meanwhile are handed to
   * the handler in order. A refusal is a text frame `{"error": {code, message, details}}` and a
   * close with code 4000 + the HTTP status (4401, 4403, 4400, 4404); no first message within
   * 10 s closes with 4401.
   */
  tokenInFirstMessage?: boolean;
  /** Runs once the caller passed the permission check (and `accept`) and the connection is upgraded. */
  handler(socket: RouteSocket, req: RouteRequest): void | Promise<void>;
}

/** One server-sent event. `id` is assigned by the buffer that holds it. */
export interface SseEvent {
  id: string;
  /** The `event:` field (absent: the browser's default `message`). */
  event?: string;
  /** Sent as `data:` lines; objects are JSON-encoded. */
  data: unknown;
}

/** What an SSE route streams from: the events after an id (for `Last-Event-ID`), then live ones. */
export interface SseSource {
  /**
   * Events after `lastEventId`, oldest first; every held event when it is null. An id the
   * source no longer holds (fell out of the buffer) or never issued returns every held event.
   */
  since(lastEventId: string | null): SseEvent[];
  /** Calls `listener` for each new event until the returned function is called. */
  subscribe(listener: (event: SseEvent) => void): () => void;
}

export interface SseRouteDefinition {
  kind: 'sse';
  method: 'GET';
  url: string;
  permission: RoutePermission;
  summary?: string;
  /** The source of this request's events (for example one run's buffer). Throw a DpError to refuse. */
  source(req: RouteRequest): SseSource | Promise<SseSource>;
}

export interface StaticRouteDefinition {
  kind: 'static';
  method: 'GET';
  /** The URL prefix the folder is served under: `/` or `/assets`. */
  url: string;
  permission: RoutePermission;
  summary?: string;
  /** Absolute folder to serve (files outside it, dotfiles and symlinks out are refused by @fastify/static). */
  root: string;
  /**
   * Single-page-app fallback: a GET for an unknown path under `url` that accepts HTML and is not
   * under /api, /docs or /ws answers `index.html` from `root`, so client-side routes load.
   */
  spaFallback?: boolean;
  /**
   * Inline scripts the folder's HTML carries (an import map cannot be a separate file), as
   * `sha256-<base64>`: the Content-Security-Policy of this route's responses allows exactly these.
   */
  inlineScriptHashes?: string[];
}

/**
 * A bounded, in-memory event buffer with increasing ids: an SSE route's replay window.
 * Keeps the last `capacity` events; a client reconnecting with `Last-Event-ID` gets what it missed
 * if that is still held, else everything held (it cannot tell what fell out, so it gets the most
 * the server can give).
 */
export class SseBuffer implements SseSource {
  private readonly events: Array<SseEvent & { seq: number }> = [];
  private readonly listeners = new Set<(event: SseEvent) => void>();
  private seq = 0;

  constructor(readonly capacity = 1000) {
    if (!(capacity >= 1)) throw new RangeError('SseBuffer capacity must be at least 1');
  }

  /** Appends an event, drops the oldest past capacity, and delivers it to live subscribers. */
  push(data: unknown, event?: string): SseEvent {
    const seq = ++this.seq;
    const e: SseEvent = { id: String(seq), data, ...(event ? { event } : {}) };
    this.events.push({ ...e, seq });
    if (this.events.length > this.capacity) this.events.splice(0, this.events.length - this.capacity);
    for (const l of [...this.listeners]) l(e);
    return e;
  }

  since(lastEventId: string | null): SseEvent[] {
    const strip = ({ seq: _seq, ...e }: SseEvent & { seq: number }): SseEvent => e;
    const last = lastEventId === null ? NaN : Number(lastEventId);
    const first = this.events[0]?.seq ?? this.seq + 1;
    // Held, or the very event before the oldest held one: the client missed nothing that fell out.
    if (Number.isInteger(last) && last >= first - 1 && last <= this.seq) return this.events.filter((e) => e.seq > last).map(strip);
    return this.events.map(strip);
  }

  subscribe(listener: (event: SseEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

/** Formats one event in the `text/event-stream` wire format. */
export function formatSseEvent(e: SseEvent): string {
  const data = typeof e.data === 'string' ? e.data : JSON.stringify(e.data ?? null);
  let out = `id: ${e.id.replace(/[\r\n]/g, '')}\n`;
  if (e.event) out += `event: ${e.event.replace(/[\r\n]/g, '')}\n`;
  for (const line of data.split(/\r\n|\r|\n/)) out += `data: ${line}\n`;
  return out + '\n';
}

/** The part of Node's ServerResponse that tells whether the client left before the end. */
type ClosingResponse = { once(event: 'close', listener: () => void): unknown; readonly writableFinished: boolean };

/**
 * Stops a query (`UserQueryRequest.signal`) when the client closes its connection before the
 * response is complete: the query is interrupted, or never started if it still waits for a slot.
 * A plain listener list instead of an AbortController, whose signal costs about 20 µs of the main
 * thread per request.
 */
export function clientGone(reply: { raw: ClosingResponse }): QueryStopSignal {
  return new ClientGone(reply.raw);
}

class ClientGone implements QueryStopSignal {
  aborted = false;
  private readonly listeners = new Set<() => void>();

  constructor(raw: ClosingResponse) {
    raw.once('close', () => {
      if (raw.writableFinished || this.aborted) return;
      this.aborted = true;
      for (const listener of [...this.listeners]) listener();
      this.listeners.clear();
    });
  }

  /** Listeners are called once at most whatever `options` say: the connection closes once. */
  addEventListener(_type: 'abort', listener: () => void): void {
    if (!this.aborted) this.listeners.add(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    this.listeners.delete(listener);
  }
}
