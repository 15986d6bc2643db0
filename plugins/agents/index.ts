/**
 * The agents plugin: the project for AI agents. `dp mcp` serves the MCP tools of tools.ts over
 * stdio as the local user; `POST /mcp` on `dp serve` serves them over streamable HTTP to the
 * authenticated caller, with that caller's role (stateless: no session outlives the request;
 * servers are kept per caller between requests, server-pool.ts, and never cross callers).
 * `dp context` writes the project's description (context.ts). Other plugins reach it through
 * its extension points: `agents.mcp` (tools, resources) and `agents.context` (sections of the
 * description).
 */
import { AGENT_CONTEXT, AGENT_MCP, badRequest, CONFIG_CHANGED, definePlugin, DpError, LOCAL_ADMIN, type AgentContribution, type ContextContribution, type PluginContext } from '../../sdk/index.js';
import type { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { projectContext } from './context.js';
import { McpServerPool } from './server-pool.js';

/**
 * The MCP SDK (transports, server, zod) loads on the first MCP request or `dp mcp`, not when the
 * plugin sets up: `dp serve` and every command that loads this plugin would pay for it otherwise.
 */
const mcp = async () => {
  const [{ StdioServerTransport }, { StreamableHTTPClientTransport }, { StreamableHTTPServerTransport }, { createMcpServer }] = await Promise.all([
    import('@modelcontextprotocol/sdk/server/stdio.js'),
    import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
    import('@modelcontextprotocol/sdk/server/streamableHttp.js'),
    import('./server.js'),
  ]);
  return { StdioServerTransport, StreamableHTTPClientTransport, StreamableHTTPServerTransport, createMcpServer };
};

const VERSION = '1.0.0';
/** Header by which `dp mcp --read-only`, relaying to a running server, asks /mcp for the read-only tool set. */
const READ_ONLY_HEADER = 'x-dp-mcp-read-only';

type StdioMessage = Parameters<StdioServerTransport['send']>[0];

/**
 * The requests read from stdin that are not answered yet. A client may write its requests and
 * close stdin at once: `dp mcp` answers what was asked before it exits (idle()), instead of
 * aborting what is still in flight. Wrap after the transport's onmessage is set.
 */
function answersOwed(stdio: StdioServerTransport): { idle(): Promise<void> } {
  const owed = new Set<string | number>();
  let wake: (() => void) | null = null;
  const receive = stdio.onmessage;
  stdio.onmessage = (message) => {
    const m = message as { id?: string | number; method?: string };
    if (m.method !== undefined && m.id !== undefined) owed.add(m.id);
    receive?.(message);
  };
  const send = stdio.send.bind(stdio);
  stdio.send = async (message: StdioMessage) => {
    try {
      await send(message);
    } finally {
      const m = message as { id?: string | number; method?: string };
      if (m.method === undefined && m.id !== undefined && owed.delete(m.id) && owed.size === 0) wake?.();
    }
  };
  return { idle: () => (owed.size === 0 ? Promise.resolve() : new Promise<void>((resolve) => (wake = resolve))) };
}

/**
 * `dp mcp` while `dp serve` holds the database: every JSON-RPC message from the client on stdin
 * goes to the server's /mcp as this CLI user (their login with --auth), every answer back to
 * stdout. The tools, resources and roles are the server's.
 */
async function relayToServer(ctx: PluginContext, running: { url: string; headers: Record<string, string> }, readOnly: boolean): Promise<number> {
  const { StdioServerTransport, StreamableHTTPClientTransport } = await mcp();
  const stdio = new StdioServerTransport();
  const http = new StreamableHTTPClientTransport(new URL(`${running.url}/mcp`), {
    requestInit: { headers: { ...running.headers, ...(readOnly ? { [READ_ONLY_HEADER]: '1' } : {}) } },
  });
  const closed = new Promise<void>((resolve) => {
    stdio.onclose = () => resolve();
    process.stdin.once('end', () => resolve());
    process.stdin.once('close', () => resolve());
  });
  http.onmessage = (message) => void stdio.send(message);
  stdio.onmessage = (message) => {
    http.send(message).catch((e: unknown) => {
      // A request the server refused (401, 403, the server gone) still gets its answer.
      const id = (message as { id?: string | number }).id;
      if (id !== undefined) void stdio.send({ jsonrpc: '2.0', id, error: { code: -32000, message: `dp serve refused the request: ${e instanceof Error ? e.message : String(e)}` } });
    });
  };
  const owed = answersOwed(stdio);
  await http.start();
  await stdio.start();
  ctx.log.info('mcp: relaying stdio to the running server', { url: running.url, read_only: readOnly });
  await closed;
  await owed.idle();
  await http.close();
  return 0;
}

export default definePlugin({
  setup(ctx) {
    // Tools and resources come from the plugins that own them; a disabled plugin adds none.
    const contributions: AgentContribution[] = [];
    const servers = new McpServerPool(async (caller, readOnly) => (await mcp()).createMcpServer(ctx, contributions, caller, { readOnly }, VERSION));
    ctx.provideExtensionPoint(AGENT_MCP, (contribution) => {
      contributions.push(contribution);
      servers.invalidate();
    });
    // The docs resource's title names the project: a changed project.yml gets new servers.
    ctx.events.on(CONFIG_CHANGED, () => servers.invalidate());
    const contextContributions: ContextContribution[] = [];
    ctx.provideExtensionPoint(AGENT_CONTEXT, (contribution) => contextContributions.push(contribution));

    ctx.route({
      method: 'POST',
      url: '/mcp',
      permission: 'read',
      summary: 'MCP over streamable HTTP (stateless, JSON responses): the tools of `dp mcp` with the caller\'s role',
      bodyLimit: 4 * 1024 * 1024,
      handler: async (req, reply) => {
        // What the transport would refuse with a JSON-RPC body is refused first in dp's error shape.
        const accept = String(req.headers.accept ?? '');
        if (!accept.includes('application/json') || !accept.includes('text/event-stream')) {
          throw new DpError(406, 'mcp_not_acceptable', 'An MCP client must accept both application/json and text/event-stream', { accept });
        }
        const messages = Array.isArray(req.body) ? req.body : [req.body];
        if (!messages.length || !messages.every((m) => m && typeof m === 'object' && (m as { jsonrpc?: unknown }).jsonrpc === '2.0')) {
          throw badRequest('mcp_invalid_message', 'The body must be a JSON-RPC 2.0 message (or a batch of them)', {});
        }
        // `dp mcp --read-only` relaying here while the server runs asks for the read-only tool set.
        const readOnly = req.headers[READ_ONLY_HEADER] === '1';
        const { StreamableHTTPServerTransport } = await mcp();
        // Reading the configuration compares project.yml's stamps first: an edit since the last
        // request is announced now (config.changed), which drops the kept servers before one is lent.
        void ctx.project.config;
        await ctx.loadExtensions(AGENT_MCP);
        const { server, release } = await servers.acquire(req.caller, readOnly);
        const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
        reply.raw.once('close', () => void release());
        await server.connect(transport);
        // The transport writes the response itself (JSON-RPC status codes, headers).
        reply.hijack();
        await transport.handleRequest(req.raw.raw, reply.raw, req.body);
        return reply;
      },
    });

    ctx.command('mcp', async (args) => {
      const running = await ctx.localServer?.();
      // A relay needs none of the tools: their plugins load only when this process serves them.
      if (running) return relayToServer(ctx, running, Boolean(args['read-only']));
      await ctx.loadExtensions(AGENT_MCP);
      const { createMcpServer, StdioServerTransport } = await mcp();
      const server = await createMcpServer(ctx, contributions, LOCAL_ADMIN, { readOnly: Boolean(args['read-only']) }, VERSION);
      const transport = new StdioServerTransport();
      // Runs until the client closes stdin (or the transport closes); then the CLI closes the
      // database as after any command. stdout carries the protocol only: logs go to stderr.
      const closed = new Promise<void>((resolve) => {
        transport.onclose = () => resolve();
        process.stdin.once('end', () => resolve());
        process.stdin.once('close', () => resolve());
      });
      await server.connect(transport);
      const owed = answersOwed(transport);
      ctx.log.info('mcp: serving on stdio', { read_only: Boolean(args['read-only']) });
      await closed;
      await owed.idle();
      await server.close();
      return 0;
    });

    ctx.command('context', async (args, io) => {
      await ctx.loadExtensions(AGENT_CONTEXT);
      const text = await projectContext(ctx, contextContributions);
      if (args.out) {
        const rel = String(args.out);
        ctx.project.resolve(rel); // refuses a path outside the project before anything is written
        ctx.project.writeFile(rel, text);
        io.err(`wrote ${rel}`);
      } else {
        process.stdout.write(text);
      }
      return 0;
    });
  },
});
