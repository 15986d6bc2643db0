/** HTTP routes of the connectors plugin (docs/decisions.md "Connectors, webhook, CDC"). */
import { badRequest, VALUES_HIDDEN_FROM, type Caller, type PluginContext } from '../../sdk/index.js';
import type { ImportService } from './import.js';
import type { ConnectorsService, SetupRequest } from './service.js';
import { callerView } from './shown.js';
import { checkWebhookName, WEBHOOK_BODY_LIMIT, type WebhookInbox } from './webhook.js';

const NAME_PARAMS = (key: string) => ({ type: 'object', properties: { [key]: { type: 'string', minLength: 1, maxLength: 200 } }, required: [key] });
const TYPE_AND_CONFIG = {
  type: 'object',
  properties: {
    connector_type: { type: 'string' },
    config: { type: 'object' },
    connection_name: { type: 'string', description: 'Test or discover a configured connector instead' },
  },
};

export function registerRoutes(ctx: PluginContext, service: ConnectorsService, inbox: WebhookInbox, imports: ImportService): void {
  const valuesHidden = ctx.hook(VALUES_HIDDEN_FROM);
  /** What the caller may read: watermarks of cursor columns masked for them withheld, error texts redacted (shown.ts). */
  const viewOf = (req: { caller: Caller }) => callerView(ctx, service.settings, valuesHidden, req.caller);
  ctx.route({
    method: 'GET',
    url: '/api/connectors/available',
    permission: 'read',
    summary: 'Connector types with their parameters (JSON schema; secret parameters listed)',
    handler: () => service.available(),
  });
  ctx.route({ method: 'GET', url: '/api/connectors', permission: 'read', summary: 'Connectors configured in the project', handler: () => service.list() });
  ctx.route({
    method: 'GET',
    url: '/api/connectors/health',
    permission: 'read',
    summary: 'Last sync status, timestamp and duration per connector',
    handler: async (req) => (await viewOf(req)).fields(await service.health()),
  });

  const typeAndConfig = (body: { connector_type?: string; config?: unknown; connection_name?: string }) => {
    if (body?.connection_name !== undefined) {
      const c = service.settings.connector(String(body.connection_name));
      return { type: c.type, config: service.engine.resolve(c).config };
    }
    if (typeof body?.connector_type !== 'string') throw badRequest('invalid_connector_request', "'connector_type' is required", { field: 'connector_type' });
    if (body.config === undefined) throw badRequest('invalid_connector_params', "'config' is required", { field: 'config' });
    return { type: body.connector_type, config: body.config };
  };
  ctx.route({
    method: 'POST',
    url: '/api/connectors/test',
    permission: 'write',
    summary: 'Tests a connection: {ok, message} (the cause in words when it fails)',
    schema: { body: TYPE_AND_CONFIG },
    handler: async (req) => {
      const { type, config } = typeAndConfig(req.body);
      return (await viewOf(req)).fields(await service.test(type, config));
    },
  });
  ctx.route({
    method: 'POST',
    url: '/api/connectors/discover',
    permission: 'write',
    summary: 'Resources (tables, columns with DuckDB types) the source offers',
    schema: { body: TYPE_AND_CONFIG },
    handler: async (req) => {
      const { type, config } = typeAndConfig(req.body);
      return { connector_type: type, tables: await service.discover(type, config) };
    },
  });
  ctx.route<SetupRequest>({
    method: 'POST',
    url: '/api/connectors/setup',
    permission: 'write',
    summary: 'Tests, discovers, writes ingest/connector_<name>.ts, adds the connection, connector and sync stream to project.yml, secrets to .env',
    schema: {
      body: {
        type: 'object',
        required: ['connector_type', 'connection_name', 'config'],
        properties: {
          connector_type: { type: 'string' },
          connection_name: { type: 'string' },
          config: { type: 'object' },
          tables: { type: 'array' },
          target_schema: { type: 'string' },
          schedule: { type: ['string', 'null'] },
        },
      },
    },
    handler: (req) => service.setup(req.body),
  });
  ctx.route<unknown, unknown, { connection_name: string }>({
    method: 'POST',
    url: '/api/connectors/regenerate/:connection_name',
    permission: 'write',
    summary: "Rewrites the connector's script from project.yml",
    schema: { params: NAME_PARAMS('connection_name') },
    handler: (req) => service.regenerate(req.params.connection_name),
  });
  ctx.route<unknown, unknown, { connection_name: string }>({
    method: 'POST',
    url: '/api/connectors/sync/:connection_name',
    permission: 'execute',
    summary: "Syncs the connector's tables now: one CDCSyncResult per table",
    schema: { params: NAME_PARAMS('connection_name') },
    handler: async (req) => {
      const t0 = performance.now();
      const results = await service.engine.syncConnector(req.params.connection_name, { trigger: 'api' });
      const failed = results.filter((r) => r.status === 'error').length;
      const shown = await (await viewOf(req)).syncResults(req.params.connection_name, results);
      return { connector: req.params.connection_name, status: failed ? 'error' : 'success', duration_ms: Math.round(performance.now() - t0), results: shown };
    },
  });
  ctx.route<unknown, unknown, { connection_name: string }>({
    method: 'DELETE',
    url: '/api/connectors/:connection_name',
    permission: 'write',
    summary: 'Removes the script, the connector, its connection and stream from project.yml and its secrets from .env (tables are kept)',
    schema: { params: NAME_PARAMS('connection_name') },
    handler: (req) => service.remove(req.params.connection_name),
  });

  ctx.route<unknown, unknown, { webhook_name: string }>({
    method: 'POST',
    url: '/api/webhook/:webhook_name',
    permission: 'public',
    summary: 'Stores a JSON payload in landing.<name>_inbox (header X-Service-Webhook-Secret; 5 MB at most)',
    bodyLimit: WEBHOOK_BODY_LIMIT,
    schema: { params: NAME_PARAMS('webhook_name') },
    handler: async (req) => {
      const name = checkWebhookName(req.params.webhook_name);
      ctx.webhooks.verify(name, req.headers[ctx.webhooks.header], req.ip);
      return inbox.receive(name, req.body);
    },
  });

  ctx.route({ method: 'GET', url: '/api/cdc', permission: 'read', summary: 'CDC state of every tracked table', handler: async (req) => (await viewOf(req)).cdcRows(await service.state.all()) });
  ctx.route<unknown, unknown, { connector_name: string }>({
    method: 'GET',
    url: '/api/cdc/:connector_name',
    permission: 'read',
    summary: 'CDC state of one connector',
    schema: { params: NAME_PARAMS('connector_name') },
    handler: async (req) => {
      const c = service.settings.connector(req.params.connector_name);
      return { connector: c.name, tables: await (await viewOf(req)).cdcRows(await service.state.all(c.name)) };
    },
  });
  ctx.route<{ table?: string } | undefined, { table?: string }, { connector_name: string }>({
    method: 'POST',
    url: '/api/cdc/:connector_name/reset',
    permission: 'write',
    summary: 'Forgets watermarks and file times (all tables, or `table` in the body or query): the next sync is a full re-sync',
    schema: { params: NAME_PARAMS('connector_name'), querystring: { type: 'object', properties: { table: { type: 'string' } } } },
    handler: async (req) => {
      const c = service.settings.connector(req.params.connector_name);
      const table = req.body?.table ?? req.query?.table;
      if (table !== undefined && !c.tables.some((t) => t.name === table)) {
        throw badRequest('invalid_connector_request', `Connector '${c.name}' has no table '${table}'`, { field: 'table' });
      }
      const reset = await service.state.reset(c.name, table);
      return { connector: c.name, table: table ?? null, tables_reset: reset };
    },
  });

  imports.registerRoutes(ctx);
}
