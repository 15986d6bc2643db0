/** Shared by the collaboration tests and benchmark: real Yjs clients over the `ws` package. */
import WebSocket from 'ws';
import { CollaborationClient, type CollaborationClientOptions, type SocketLike } from '../../../plugins/notebooks/collaboration/client.js';

/** The built-in plugins a collaboration server needs (notebooks carries it; files saves). */
export const COLLAB_PLUGINS = ['notebooks', 'scripts', 'streams', 'models', 'files'];

export const wsUrl = (httpUrl: string, doc: string, query = '') => `${httpUrl.replace(/^http/, 'ws')}/ws/collaborate?doc=${encodeURIComponent(doc)}${query}`;

export function connect(httpUrl: string, doc: string, options: CollaborationClientOptions & { query?: string; headers?: Record<string, string> } = {}): CollaborationClient {
  return new CollaborationClient(wsUrl(httpUrl, doc, options.query), {
    ...options,
    socket: (u) => new WebSocket(u, { headers: options.headers }) as unknown as SocketLike,
  });
}

/** The HTTP status of a refused upgrade, or 101 when the socket opened. */
export function upgradeStatus(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    ws.on('unexpected-response', (_req, res) => {
      resolve(res.statusCode ?? 0);
      ws.terminate();
    });
    ws.on('open', () => {
      resolve(101);
      ws.close();
    });
    ws.on('error', (e) => reject(e));
  });
}

/** Polls a client-side state with a generous deadline (a loaded CI machine is slow). */
export async function waitFor(condition: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
