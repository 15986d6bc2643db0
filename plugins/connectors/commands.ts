/** CLI commands: `dp connect <type>`, `dp connectors …`, `dp cdc status|reset`. */
import fs from 'node:fs';
import path from 'node:path';
import { badRequest, LOCAL_ADMIN, VALUES_HIDDEN_FROM, type CliIO, type PluginContext } from '../../sdk/index.js';
import { callerView } from './shown.js';
import type { ConnectorsService, SetupRequest } from './service.js';

/** `--set key=value`: JSON when it parses (numbers, booleans), else the text. */
function parseValue(text: string): unknown {
  try {
    const v = JSON.parse(text);
    return typeof v === 'object' && v !== null ? text : v;
  } catch {
    return text;
  }
}

/** The connector config from `--config` (JSON text or a file), `--set k=v` and the shortcuts. */
export function configFromArgs(args: Record<string, any>, cwd: string): Record<string, unknown> {
  let config: Record<string, unknown> = {};
  if (args.config) {
    const text = String(args.config).trim();
    let source = text;
    if (!/^[[{]/.test(text)) {
      const file = path.resolve(cwd, text);
      if (!fs.existsSync(file)) throw badRequest('invalid_connector_params', '--config is neither a JSON object nor an existing JSON file', { field: 'config' });
      source = fs.readFileSync(file, 'utf8');
    }
    try {
      config = JSON.parse(source);
    } catch (e) {
      throw badRequest('invalid_connector_params', `--config is neither a JSON object nor a file holding one: ${(e as Error).message}`, { field: 'config' });
    }
    if (!config || typeof config !== 'object' || Array.isArray(config)) throw badRequest('invalid_connector_params', '--config must be a JSON object', { field: 'config' });
  }
  for (const pair of ([] as unknown[]).concat(args.set ?? [])) {
    const s = String(pair);
    const eq = s.indexOf('=');
    if (eq <= 0) throw badRequest('invalid_connector_params', `--set ${s}: expected key=value`, { field: 'set' });
    config[s.slice(0, eq)] = parseValue(s.slice(eq + 1));
  }
  const shortcuts: Record<string, string> = { host: 'host', port: 'port', database: 'database', user: 'user', password: 'password', url: 'url', 'api-key': 'api_key', token: 'token', path: 'path' };
  for (const [flag, key] of Object.entries(shortcuts)) {
    if (args[flag] !== undefined) config[key] = flag === 'port' ? Number(args[flag]) : String(args[flag]);
  }
  return config;
}

function printResults(io: CliIO, results: Array<{ table: string; status: string; rows_synced: number; duration_ms: number; cdc_mode: string; watermark_after: string | null; error: string | null }>) {
  io.table(
    results.map((r) => ({ table: r.table, status: r.status, rows: r.rows_synced, ms: r.duration_ms, mode: r.cdc_mode, watermark: r.watermark_after ?? '', error: r.error ?? '' })),
    ['table', 'status', 'rows', 'ms', 'mode', 'watermark', 'error'],
  );
}

export function registerCommands(ctx: PluginContext, service: ConnectorsService): void {
  // The same view as the routes (shown.ts), for the caller of a command relayed through the server.
  const valuesHidden = ctx.hook(VALUES_HIDDEN_FROM);
  const viewOf = (io: CliIO) => callerView(ctx, service.settings, valuesHidden, io.caller ?? LOCAL_ADMIN);
  ctx.command('connect', async (args, io) => {
    const type = String(args.type);
    const config = configFromArgs(args, process.cwd());
    if (args.test) {
      const r = await service.test(type, config);
      if (io.wantsJson) io.json(r);
      else io.out(`${r.ok ? 'ok' : 'failed'}: ${r.message}`);
      return r.ok ? 0 : 1;
    }
    if (args.discover) {
      io.progress(`discovering ${type} resources...`);
      const tables = await service.discover(type, config);
      if (io.wantsJson) io.json(tables);
      else io.table(tables.map((t) => ({ table: t.name, columns: t.columns.map((c) => `${c.name} ${c.type}`).join(', ') })), ['table', 'columns']);
      return 0;
    }
    const tables = args.tables === undefined ? undefined : String(args.tables).split(',').map((t) => t.trim()).filter(Boolean);
    const req: SetupRequest = {
      connector_type: type,
      connection_name: String(args.name ?? type),
      config,
      ...(tables ? { tables } : {}),
      target_schema: args.schema ?? 'landing',
      schedule: args.schedule ?? null,
    };
    io.progress(`testing the connection, discovering ${type} resources...`);
    const r = await service.setup(req);
    if (io.wantsJson) io.json(r);
    else {
      io.out(`Connector ${r.connection_name} (${r.connector_type}) set up: ${r.test.message}`);
      io.out(`  script: ${r.script_path}`);
      io.out(`  stream: ${r.stream} (dp jobs run ${r.stream}); sync now: dp connectors sync ${r.connection_name}`);
      if (r.secrets.length) io.out(`  secrets in .env: ${r.secrets.join(', ')}`);
      io.table(r.tables.map((t) => ({ table: t.name, target: t.target, cdc_mode: t.cdc_mode })), ['table', 'target', 'cdc_mode']);
    }
    return 0;
  });

  ctx.command('connectors available', (_args, io) => {
    const types = service.available();
    if (io.wantsJson) io.json(types);
    else io.table(types.map((t) => ({ type: t.type, label: t.label, secrets: (t.secret_params as string[]).join(', '), cdc: (t.cdc_modes as string[]).join(', ') })), ['type', 'label', 'secrets', 'cdc']);
  });
  ctx.command('connectors list', async (_args, io) => {
    const list = await service.list();
    if (io.wantsJson) io.json(list);
    else if (!list.length) io.out('No connectors (dp connect <type> adds one).');
    else io.table(list.map((c) => ({ name: c.name, type: c.type, tables: c.tables.length, schema: c.target_schema, schedule: c.schedule ?? '', last_sync: c.last_sync ? `${c.last_sync.status} ${c.last_sync.last_sync_at}` : 'never' })), ['name', 'type', 'tables', 'schema', 'schedule', 'last_sync']);
  });
  ctx.command('connectors test', async (args, io) => {
    const r = await service.testConfigured(String(args.name));
    if (io.wantsJson) io.json(r);
    else io.out(`${r.ok ? 'ok' : 'failed'}: ${r.message}`);
    return r.ok ? 0 : 1;
  });
  ctx.command('connectors discover', async (args, io) => {
    const c = service.settings.connector(String(args.name));
    const tables = await service.discover(c.type, service.engine.resolve(c).config);
    if (io.wantsJson) io.json(tables);
    else io.table(tables.map((t) => ({ table: t.name, columns: t.columns.map((x) => `${x.name} ${x.type}`).join(', ') })), ['table', 'columns']);
  });
  ctx.command('connectors sync', async (args, io) => {
    const name = String(args.name);
    const tables = args.table ? ([] as unknown[]).concat(args.table).map(String) : undefined;
    io.progress(`syncing ${name}...`);
    const raw = await service.engine.syncConnector(name, { trigger: 'cli', ...(tables ? { tables } : {}), onTable: (r) => io.progress(`${r.table}: ${r.status}, ${r.rows_synced} rows`) });
    const results = await (await viewOf(io)).syncResults(name, raw);
    if (io.wantsJson) io.json(results);
    else printResults(io, results);
    return results.some((r) => r.status === 'error') ? 1 : 0;
  });
  ctx.command('connectors regenerate', (args, io) => {
    const r = service.regenerate(String(args.name));
    if (io.wantsJson) io.json(r);
    else io.out(`Rewrote ${r.script_path}`);
  });
  ctx.command('connectors remove', async (args, io) => {
    const r = await service.remove(String(args.name));
    if (io.wantsJson) io.json(r);
    else io.out(`Removed connector ${r.removed}${r.script_path ? ` and ${r.script_path}` : ''}${r.secrets_removed.length ? `; secrets removed: ${r.secrets_removed.join(', ')}` : ''} (its tables are kept)`);
  });
  ctx.command('connectors health', async (_args, io) => {
    const h = (await viewOf(io)).fields(await service.health());
    if (io.wantsJson) io.json(h);
    else io.table(h.map((c) => ({ name: c.name, status: c.status, last_sync_at: c.last_sync_at ?? '', ms: c.duration_ms ?? '', rows: c.rows_synced ?? '', error: c.error ?? '' })), ['name', 'status', 'last_sync_at', 'ms', 'rows', 'error']);
  });

  ctx.command('cdc status', async (args, io) => {
    if (args.connector) service.settings.connector(String(args.connector));
    const rows = await (await viewOf(io)).cdcRows(await service.state.all(args.connector ? String(args.connector) : undefined));
    if (io.wantsJson) io.json(rows);
    else if (!rows.length) io.out('No CDC state yet (nothing synced).');
    else io.table(rows.map((r) => ({ connector: r.connector_name, table: r.table_name, mode: r.cdc_mode, watermark: r.watermark_masked ? '*** (masked)' : (r.watermark_value ?? ''), file_mtime: r.file_mtime ?? '', last_sync_at: r.last_sync_at ?? '', rows: r.rows_synced })));
  });
  ctx.command('cdc reset', async (args, io) => {
    const c = service.settings.connector(String(args.connector));
    const table = args.table === undefined ? undefined : String(args.table);
    if (table !== undefined && !c.tables.some((t) => t.name === table)) throw badRequest('invalid_connector_request', `Connector '${c.name}' has no table '${table}'`, { field: 'table' });
    const n = await service.state.reset(c.name, table);
    if (io.wantsJson) io.json({ connector: c.name, table: table ?? null, tables_reset: n });
    else io.out(`Reset ${n} table state${n === 1 ? '' : 's'} of ${c.name}${table ? ` (${table})` : ''}: the next sync re-reads everything.`);
  });
}
