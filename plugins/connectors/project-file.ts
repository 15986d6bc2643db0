/**
 * project.yml as the connectors plugin reads and writes it. Reads are fresh on every call (a
 * setup or remove changes the file while the server runs, and the kernel's copy is from boot);
 * writes edit the YAML document (`yaml`'s Document API), so comments, key order and everything
 * the plugin does not own survive, then replace the file atomically.
 */
import fs from 'node:fs';
import { Ajv, type ValidateFunction } from 'ajv';
import { parseDocument, type Document } from 'yaml';
import { ajvFieldError, badRequest, notFound, readYaml, type ProjectInfo } from '../../sdk/index.js';
import { CONNECTORS_CONFIG, type ConnectorConfig, type TableConfig } from './config.js';

export const PROJECT_FILE = 'project.yml';
const VAR = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

let validateConnectors: ValidateFunction | undefined;

export interface ConnectionEntry {
  name: string;
  type: string;
  /** As written: secrets are `${VAR}` references. */
  written: Record<string, unknown>;
}

export class ProjectFile {
  constructor(
    private readonly project: ProjectInfo,
    /** A variable of the project's .env (read fresh: setup writes new ones). */
    private readonly envVar: (name: string) => string | undefined,
  ) {}

  private text(): string {
    // Through the project's resolver, so a project.yml linked from outside the root is refused.
    return fs.readFileSync(this.project.resolve(PROJECT_FILE), 'utf8');
  }

  /** The parsed file (plain values, `${VAR}` unexpanded). */
  read(): Record<string, unknown> {
    const v = readYaml(this.text(), PROJECT_FILE, 'invalid_project_yml').value;
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  }

  /** Every connector under `connectors:`, validated, with defaults; tables as objects. */
  connectors(): Map<string, ConnectorConfig> {
    const raw = structuredClone((this.read().connectors ?? {}) as Record<string, unknown>);
    validateConnectors ??= new Ajv({ useDefaults: true, strict: false }).compile(CONNECTORS_CONFIG.schema as object);
    if (!validateConnectors(raw)) {
      const f = ajvFieldError(validateConnectors.errors![0]!);
      throw badRequest('invalid_project_yml', `${PROJECT_FILE}: connectors.${f.field}: ${f.message}`, { file: PROJECT_FILE, field: `connectors.${f.field}` });
    }
    const out = new Map<string, ConnectorConfig>();
    for (const [name, c] of Object.entries(raw as Record<string, Record<string, unknown>>)) {
      const tables = ((c.tables ?? []) as Array<string | TableConfig>).map((t) =>
        typeof t === 'string' ? { name: t, cdc_mode: 'full_refresh' as const, cdc_column: null, source_query: null } : (Object.assign({ cdc_mode: 'full_refresh', cdc_column: null, source_query: null }, t) as TableConfig),
      );
      out.set(name, {
        name,
        type: String(c.type),
        connection: (c.connection as string | undefined) ?? name,
        target_schema: (c.target_schema as string | undefined) ?? 'landing',
        schedule: (c.schedule as string | null | undefined) ?? null,
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
    const all = (this.read().connections ?? {}) as Record<string, Record<string, unknown>>;
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

  /** Edits the document and writes it back atomically; comments and order of the rest survive. */
  edit(fn: (doc: Document) => void): void {
    const doc = parseDocument(this.text());
    if (doc.errors.length) throw badRequest('invalid_project_yml', `${PROJECT_FILE}: ${doc.errors[0]!.message}`, { file: PROJECT_FILE });
    fn(doc);
    this.project.writeFile(PROJECT_FILE, doc.toString());
  }
}
