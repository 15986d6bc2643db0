/**
 * MCP servers kept between the stateless requests of `POST /mcp`. Building one (every plugin's
 * tools with their zod schemas, registered on a new McpServer) cost more main-thread time than
 * most calls it answered (issue 34 item 5: about 15% of the engine's main thread under mixed
 * load). A server is built for one caller, and its tools close over that caller (its role picks
 * the tools, its identity goes into every query, the masking runner reads it), so servers are
 * kept per caller: the same username, role, display name and auth state, on a read-only relay or
 * not. A request takes an idle server of its caller (or builds one), connects its own transport,
 * and gives the server back once the transport has closed; one server never serves two requests
 * at once, so a response always goes to its own client.
 *
 * What a server offers depends only on the plugins' contributions, fixed at start, and the
 * project's configuration (the docs resource's title names the project): `invalidate()` on a
 * configuration change drops every kept server, and a server taken before it is not given back.
 * Masking and role checks run in the tools' handlers on every call, as on a new server.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { Caller } from '../../sdk/index.js';

/** Callers whose servers are kept (least recently used dropped first). */
export const POOLED_CALLERS = 32;
/** Idle servers kept per caller: as many as the caller's requests that ran at once, up to this. */
export const IDLE_PER_CALLER = 4;

/** The server a request uses, and how it gives it back when its transport has closed. */
export interface LentServer {
  server: McpServer;
  /** Closes the server's transport and keeps the server for the caller's next request. */
  release(): Promise<void>;
}

export class McpServerPool {
  private readonly idle = new Map<string, McpServer[]>();
  private generation = 0;

  constructor(private readonly build: (caller: Caller, readOnly: boolean) => Promise<McpServer>) {}

  /** A server for this caller, not serving any other request until released. */
  async acquire(caller: Caller, readOnly: boolean): Promise<LentServer> {
    const key = JSON.stringify([caller.username, caller.role, caller.display_name ?? null, caller.authenticated, readOnly]);
    const generation = this.generation;
    const kept = this.idle.get(key);
    const server = kept?.pop() ?? (await this.build(caller, readOnly));
    return {
      server,
      release: async () => {
        // Closing the transport detaches it (the SDK refuses a second transport while one is connected).
        await server.close();
        if (generation !== this.generation) return;
        const list = this.idle.get(key) ?? [];
        // Most recently used last: the first key of the map is the one to drop.
        this.idle.delete(key);
        if (list.length < IDLE_PER_CALLER) list.push(server);
        this.idle.set(key, list);
        while (this.idle.size > POOLED_CALLERS) this.idle.delete(this.idle.keys().next().value as string);
      },
    };
  }

  /** Forgets every kept server: the next requests build new ones. */
  invalidate(): void {
    this.generation++;
    this.idle.clear();
  }

  /** Idle servers kept now (tests). */
  get size(): number {
    let n = 0;
    for (const list of this.idle.values()) n += list.length;
    return n;
  }
}
