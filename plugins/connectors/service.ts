/**
 * Setup and management of connectors (docs/decisions.md "Connector"): test, discover, setup
 * (script + project.yml + .env), list, regenerate, remove, health. HTTP routes and CLI commands
 * both call these, so they answer the same.
 */
import fs from 'node:fs';
import {
  badRequest,
  conflict,
  cronProblem,
  errorMessage,
  SAFE_NAME,
  type ConnectorTestResult,
  type DiscoveredTable,
  type PluginContext,
  type StreamsService,
} from '../../sdk/index.js';
import { CDC_MODES, CONNECTORS_CONFIG, type TableConfig } from './config.js';
import type { ConnectorSettings } from './settings.js';
import type { RegisteredType, TypeRegistry } from './registry.js';
import type { CdcStateStore } from './state.js';
import { targetTableName, type SyncEngine } from './sync.js';
import { withTimeout } from './types/connection-errors.js';

/** How long a test or discover may take before it is answered as timed out. */
export const SOURCE_TIMEOUT_MS = 30_000;

export interface SetupRequest {
  connector_type: string;
  connection_name: string;
  config: Record<string, unknown>;
  tables?: Array<string | Partial<TableConfig>>;
  target_schema?: string;
  schedule?: string | null;
}

export const scriptPathOf = (name: string) => `ingest/connector_${name}.ts`;
export const streamNameOf = (name: string) => `sync_${name}`;

/** `.env` variable of a secret parameter: `<CONNECTION_NAME>_<PARAM>`, or the type's own `x-env` (`{NAME}` = upper-cased name). */
export function secretVarOf(registered: RegisteredType, connection: string, param: string): string {
  const props = ((registered.type.params as { properties?: Record<string, Record<string, unknown>> }).properties ?? {}) as Record<string, Record<string, unknown>>;
  const upper = connection.toUpperCase().replace(/[^A-Z0-9]/g, '_');
  const custom = props[param]?.['x-env'];
  if (typeof custom === 'string') return custom.replace('{NAME}', upper);
  return `${upper}_${param.toUpperCase().replace(/[^A-Z0-9]/g, '_')}`;
}

export function validateSchedule(schedule: unknown, field = 'schedule'): string | null {
  if (schedule === null || schedule === undefined || schedule === '') return null;
  if (typeof schedule !== 'string' || schedule.trim().split(/\s+/).length !== 5) {
    throw badRequest('invalid_connector_request', `'${field}' must be a 5-field cron expression`, { field });
  }
  // The sdk's check: cron-parser and its date library load on the first schedule read, not with the plugin.
  const problem = cronProblem(schedule);
  if (problem) throw badRequest('invalid_connector_request', `'${field}': ${problem}`, { field });
  return schedule.trim();
}

/** Secret values in text shown as their `${VAR}` (a type must never echo one; this is the safety net). */
function withoutSecrets(text: string, secrets: Record<string, string>): string {
  let out = text;
  for (const [name, value] of Object.entries(secrets).sort((a, b) => b[1].length - a[1].length)) {
    if (value.length >= 1) out = out.split(value).join(`\${${name}}`);
  }
  return out;
}

export class ConnectorsService {
  constructor(
    private readonly ctx: Pick<PluginContext, 'project' | 'secrets' | 'db' | 'log' | 'signal' | 'config'>,
    readonly registry: TypeRegistry,
    readonly settings: ConnectorSettings,
    readonly state: CdcStateStore,
    readonly engine: SyncEngine,
    private readonly afterSetup: (connector: { name: string; type: string; targetSchema: string }) => Promise<void>,
    /** The streams service, when its plugin is enabled: a connector's sync stream is defined through it. */
    private readonly streams: () => StreamsService | undefined = () => undefined,
  ) {}

  available() {
    return this.registry.all().map((t) => this.registry.describe(t));
  }

  async test(connectorType: string, config: unknown): Promise<ConnectorTestResult> {
    const t = this.registry.get(connectorType);
    const valid = this.registry.validate(connectorType, config);
    const ac = new AbortController();
    try {
      return await withTimeout(t.type.testConnection(valid, ac.signal, this.engine.runtime()), SOURCE_TIMEOUT_MS, this.ctx.signal, () => ac.abort());
    } catch (e) {
      return { ok: false, message: errorMessage(e) };
    }
  }

  async discover(connectorType: string, config: unknown): Promise<DiscoveredTable[]> {
    const t = this.registry.get(connectorType);
    const valid = this.registry.validate(connectorType, config);
    const ac = new AbortController();
    try {
      return await withTimeout(t.type.discover(valid, ac.signal, this.engine.runtime()), SOURCE_TIMEOUT_MS, this.ctx.signal, () => ac.abort());
    } catch (e) {
      throw badRequest('connection_failed', `Discovering ${connectorType} resources failed: ${errorMessage(e)}`, { connector_type: connectorType });
    }
  }

  /** The body checks of setup, before anything is contacted or written. */
  private checkRequest(req: SetupRequest): { name: string; targetSchema: string; schedule: string | null; tables: TableConfig[] } {
    if (!req || typeof req !== 'object') throw badRequest('invalid_connector_request', 'The body must be an object', { field: 'body' });
    const name = req.connection_name;
    if (typeof name !== 'string' || !SAFE_NAME.test(name)) {
      throw badRequest('invalid_connector_request', "'connection_name' must be letters, digits and underscores, not starting with a digit", { field: 'connection_name' });
    }
    const targetSchema = req.target_schema ?? 'landing';
    if (typeof targetSchema !== 'string' || !SAFE_NAME.test(targetSchema) || targetSchema.startsWith('_')) {
      throw badRequest('invalid_connector_request', "'target_schema' must be a schema name (letters, digits, underscores; not starting with _)", { field: 'target_schema' });
    }
    const schedule = validateSchedule(req.schedule);
    if (req.tables !== undefined && !Array.isArray(req.tables)) throw badRequest('invalid_connector_request', "'tables' must be a list", { field: 'tables' });
    const tables: TableConfig[] = (req.tables ?? []).map((t, i) => {
      const o = typeof t === 'string' ? { name: t } : t;
      if (!o || typeof o !== 'object' || typeof o.name !== 'string' || !o.name.trim()) throw badRequest('invalid_connector_request', `'tables[${i}]' must be a table name`, { field: `tables.${i}` });
      const mode = o.cdc_mode ?? 'full_refresh';
      if (!CDC_MODES.includes(mode)) throw badRequest('invalid_cdc_config', `'tables[${i}].cdc_mode' must be one of ${CDC_MODES.join(', ')}`, { field: `tables.${i}.cdc_mode` });
      if (mode === 'high_watermark' && !o.cdc_column) throw badRequest('invalid_cdc_config', `'tables[${i}]': high_watermark needs cdc_column`, { field: `tables.${i}.cdc_column` });
      return { name: o.name.trim(), cdc_mode: mode, cdc_column: o.cdc_column ?? null, source_query: o.source_query ?? null };
    });
    const targets = new Set<string>();
    for (const t of tables) {
      const target = targetTableName(t.name).toLowerCase();
      if (!SAFE_NAME.test(targetTableName(t.name))) throw badRequest('invalid_connector_request', `Table '${t.name}' would load into '${targetTableName(t.name)}', which is not a plain table name`, { field: 'tables' });
      if (targets.has(target)) throw badRequest('invalid_connector_request', `Two tables would load into ${targetSchema}.${target}`, { field: 'tables' });
      targets.add(target);
    }
    return { name, targetSchema, schedule, tables };
  }

  async setup(req: SetupRequest) {
    const registered = this.registry.get(req?.connector_type);
    const { name, targetSchema, schedule, tables: requested } = this.checkRequest(req);
    const config = this.registry.validate(req.connector_type, req.config);
    if (this.settings.connection(name) || this.settings.connectors().has(name)) {
      throw conflict('connector_exists', `project.yml already has a connection or connector named '${name}'`, { connection_name: name });
    }
    const modes = registered.type.cdcModes ?? ['full_refresh'];
    for (const t of requested) {
      if (!modes.includes(t.cdc_mode)) throw badRequest('invalid_cdc_config', `Table '${t.name}': type '${registered.type.type}' supports ${modes.join(', ')}`, { field: 'tables' });
    }

    // 1. test, 2. discover
    const test = await this.test(req.connector_type, config);
    if (!test.ok) throw badRequest('connection_failed', `Cannot connect: ${test.message}`, { connector_type: req.connector_type, cause: test.message });
    const discovered = await this.discover(req.connector_type, config);
    const defaultSchema = typeof config.schema === 'string' ? config.schema : undefined;
    const known = new Map<string, string>();
    for (const t of discovered) {
      known.set(t.name, t.name);
      if (t.schema && t.name.startsWith(t.schema + '.') && t.schema === defaultSchema) known.set(t.name.slice(t.schema.length + 1), t.name);
    }
    let tables = requested;
    if (tables.length === 0) tables = discovered.map((t) => ({ name: t.name, cdc_mode: 'full_refresh' as const, cdc_column: null, source_query: null }));
    for (const t of tables) {
      if (discovered.length && !t.source_query && !known.has(t.name)) {
        throw badRequest('connector_table_not_found', `The source has no table '${t.name}' (discover lists ${discovered.slice(0, 20).map((d) => d.name).join(', ')})`, { table: t.name });
      }
    }

    // 3. secrets to .env, referenced as ${VAR}
    const written: Record<string, unknown> = {};
    const secretValues: Record<string, string> = {};
    // What the caller gave is written (the schema's defaults stay implicit); secrets as ${VAR}.
    for (const [param, value] of Object.entries(config).filter(([k]) => Object.prototype.hasOwnProperty.call(req.config, k))) {
      if (registered.secrets.includes(param) && value !== undefined && value !== '') {
        const variable = secretVarOf(registered, name, param);
        secretValues[variable] = String(value);
        written[param] = `\${${variable}}`;
      } else written[param] = value;
    }
    for (const [variable, value] of Object.entries(secretValues)) await this.ctx.secrets.set(variable, value);

    // 4. the script
    const script = withoutSecrets(
      registered.type.generateScript({ name, type: registered.type.type, config: written }, tables.map((t) => t.name), targetSchema),
      secretValues,
    );
    const scriptPath = scriptPathOf(name);
    this.ctx.project.writeFile(scriptPath, script);

    // 5. project.yml through the live config: the connection (the kernel's key), the connector
    // (this plugin's) and its sync stream (the streams service's); each edit validated and atomic.
    const stream = streamNameOf(name);
    const connector: Record<string, unknown> = { type: registered.type.type, connection: name, target_schema: targetSchema };
    if (schedule) connector.schedule = schedule;
    connector.tables = tables.map((t) => {
      const o: Record<string, unknown> = { name: t.name, cdc_mode: t.cdc_mode };
      if (t.cdc_column) o.cdc_column = t.cdc_column;
      if (t.source_query) o.source_query = t.source_query;
      return o;
    });
    this.ctx.config.setConnection(name, { type: registered.type.type, ...written });
    try {
      this.ctx.config.edit(CONNECTORS_CONFIG, (connectors) => connectors.set([name], connector));
    } catch (e) {
      this.ctx.config.setConnection(name, null);
      throw e;
    }
    const streams = this.streams();
    if (streams && !streams.list().some((d) => d.name === stream)) {
      streams.define(stream, { description: `Sync connector ${name} (${registered.type.type})`, steps: [{ action: 'ingest', targets: [`connector_${name}`] }] });
    }
    await this.afterSetup({ name, type: registered.type.type, targetSchema });
    this.ctx.log.info(`connector ${name} (${registered.type.type}) set up: ${tables.length} tables into ${targetSchema}`);
    return {
      connection_name: name,
      connector_type: registered.type.type,
      test,
      tables: tables.map((t) => ({ name: t.name, cdc_mode: t.cdc_mode, cdc_column: t.cdc_column, target: `${targetSchema}.${targetTableName(t.name)}` })),
      target_schema: targetSchema,
      schedule,
      script_path: scriptPath,
      stream,
      secrets: Object.keys(secretValues),
    };
  }

  /** Connection parameters as shown: secret parameters only as their `${VAR}` reference or masked. */
  private shownParams(type: string, written: Record<string, unknown>): Record<string, unknown> {
    const secrets = this.registry.has(type) ? this.registry.get(type).secrets : [];
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(written)) {
      out[k] = secrets.includes(k) && !(typeof v === 'string' && /^\$\{[A-Za-z_][A-Za-z0-9_]*\}$/.test(v)) ? '********' : v;
    }
    return out;
  }

  async list() {
    const last = await this.state.lastSyncs();
    return [...this.settings.connectors().values()].map((c) => {
      const connection = this.settings.connection(c.connection);
      return {
        name: c.name,
        type: c.type,
        connection: c.connection,
        params: connection ? this.shownParams(c.type, connection.written) : null,
        target_schema: c.target_schema,
        schedule: c.schedule,
        tables: c.tables.map((t) => ({ name: t.name, cdc_mode: t.cdc_mode, cdc_column: t.cdc_column, target: `${c.target_schema}.${targetTableName(t.name)}` })),
        script_path: scriptPathOf(c.name),
        script_exists: fs.existsSync(this.ctx.project.resolve(scriptPathOf(c.name))),
        type_available: this.registry.has(c.type),
        last_sync: last.get(c.name) ?? null,
      };
    });
  }

  /** Tests the connection a configured connector uses. */
  async testConfigured(name: string): Promise<ConnectorTestResult> {
    const c = this.settings.connector(name);
    const { config } = this.engine.resolve(c);
    return this.test(c.type, config);
  }

  regenerate(name: string) {
    const c = this.settings.connector(name);
    const registered = this.registry.get(c.type);
    const connection = this.settings.connection(c.connection);
    const written = connection?.written ?? {};
    const script = registered.type.generateScript({ name, type: c.type, config: written }, c.tables.map((t) => t.name), c.target_schema);
    const scriptPath = scriptPathOf(name);
    // Values of secret parameters never reach the script, even if project.yml holds one in plaintext.
    const secretValues = Object.fromEntries(registered.secrets.filter((p) => typeof written[p] === 'string' && !String(written[p]).startsWith('${')).map((p) => [secretVarOf(registered, name, p), String(written[p])]));
    this.ctx.project.writeFile(scriptPath, withoutSecrets(script, secretValues));
    return { connection_name: name, script_path: scriptPath, tables: c.tables.map((t) => t.name) };
  }

  async remove(name: string) {
    const c = this.settings.connector(name);
    const connection = this.settings.connection(c.connection);
    const scriptPath = scriptPathOf(name);
    const scriptFile = this.ctx.project.resolve(scriptPath);
    const scriptRemoved = fs.existsSync(scriptFile);
    // Secrets this connection references by the setup's naming (<NAME>_<PARAM>); other variables stay.
    const prefix = name.toUpperCase().replace(/[^A-Z0-9]/g, '_') + '_';
    const referenced = connection ? [...JSON.stringify(connection.written).matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g)].map((m) => m[1]!) : [];
    this.streams()?.remove(streamNameOf(name));
    this.ctx.config.edit(CONNECTORS_CONFIG, (connectors) => connectors.delete([name]));
    const stillUsed = [...this.settings.connectors().values()].some((other) => other.connection === c.connection);
    if (!stillUsed && connection) this.ctx.config.setConnection(c.connection, null);
    const written = JSON.stringify(this.ctx.config.asWritten());
    const toDelete = referenced.filter((v) => v.startsWith(prefix) && !written.includes(`\${${v}}`));
    for (const v of toDelete) await this.ctx.secrets.delete(v);
    if (scriptRemoved) fs.rmSync(scriptFile);
    await this.state.forget(name);
    return { removed: name, script_path: scriptRemoved ? scriptPath : null, secrets_removed: toDelete, tables_kept: true };
  }

  async health() {
    const last = await this.state.lastSyncs();
    return [...this.settings.connectors().values()].map((c) => {
      const l = last.get(c.name);
      return {
        name: c.name,
        type: c.type,
        status: l?.status ?? 'never_synced',
        last_sync_at: l?.last_sync_at ?? null,
        duration_ms: l?.duration_ms ?? null,
        rows_synced: l?.rows_synced ?? null,
        error: l?.error ?? null,
        schedule: c.schedule,
      };
    });
  }
}
