/**
 * The connectors plugin's view of the live configuration: its `connectors:` key (validated, with
 * defaults, current at every read) and the kernel's `connections:` as written (secrets as
 * `${VAR}`), expanded from .env only when a sync needs the values. Edits go through the live
 * config: `connectors:` as its owner, `connections:` through the kernel (ctx.config.setConnection),
 * a sync stream through the streams service; never by writing project.yml here.
 */
import { badRequest, notFound, type PluginConfig } from '../../sdk/index.js';
import { CONNECTORS_CONFIG, type ConnectorConfig, type TableConfig } from './config.js';

const VAR = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

export interface ConnectionEntry {
  name: string;
  type: string;
  /** As written: secrets are `${VAR}` references. */
  written: Record<string, unknown>;
}

export class ConnectorSettings {
  constructor(
    private readonly config: PluginConfig,
    /** A variable of the project's .env (read fresh: setup writes new ones). */
    private readonly envVar: (name: string) => string | undefined,
  ) {}

  /** Every connector under `connectors:`, validated, with defaults; tables as objects. */
  connectors(): Map<string, ConnectorConfig> {
    const out = new Map<string, ConnectorConfig>();
    for (const [name, c] of Object.entries(this.config(CONNECTORS_CONFIG))) {
      const tables = (c.tables ?? []).map((t): TableConfig =>
        typeof t === 'string' ? { name: t, cdc_mode: 'full_refresh', cdc_column: null, source_query: null } : { cdc_mode: 'full_refresh', cdc_column: null, source_query: null, ...t } as TableConfig,
      );
      out.set(name, {
        name,
        type: String(c.type),
        connection: c.connection ?? name,
        target_schema: c.target_schema ?? 'landing',
        schedule: c.schedule ?? null,
        tables,
      });
    }
    return out;
  }

  connector(name: string): ConnectorConfig {
    const c = this.connectors().get(name);
    if (!c) throw notFound('connector_not_found', `project.yml has no connector '${name}' (dp connectors list shows them)`, { connector: name });
    return c;
  }

  /** A connection as written (secrets as `${VAR}`), or undefined. */
  connection(name: string): ConnectionEntry | undefined {
    const all = (this.config.asWritten().connections ?? {}) as Record<string, Record<string, unknown>>;
    const c = all[name];
    if (!c || typeof c !== 'object') return undefined;
    const { type, ...rest } = c;
    return { name, type: String(type ?? ''), written: rest };
  }

  /** `${VAR}` references replaced from .env; an undefined variable is a 400 naming it. */
  expand(written: Record<string, unknown>): Record<string, unknown> {
    const walk = (v: unknown): unknown => {
      if (typeof v === 'string') {
        return v.replace(VAR, (_m, name: string) => {
          const value = this.envVar(name);
          if (value === undefined) throw badRequest('unresolved_variable', `Connection parameter references \${${name}}, which .env does not define (dp secrets set ${name} <value>)`, { variable: name });
          return value;
        });
      }
      if (Array.isArray(v)) return v.map(walk);
      if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
      return v;
    };
    return walk(written) as Record<string, unknown>;
  }
}
