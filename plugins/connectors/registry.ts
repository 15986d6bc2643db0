/**
 * The CONNECTOR_TYPES extension point: every connector type, built in or from another plugin,
 * with its parameter schema compiled once. Parameters are checked here before a type sees them,
 * so a type never receives a missing or wrong-typed field (400 naming it).
 */
import { Ajv, type ValidateFunction } from 'ajv';
import { ajvFieldError, badRequest, compileOnFirstUse, DpError, jsonSchemaProblem, notFound, type ConnectorType } from '../../sdk/index.js';

export interface RegisteredType {
  type: ConnectorType;
  plugin: string;
  validate: ValidateFunction;
  /** Parameter names marked `"x-secret": true`. */
  secrets: string[];
}

const TYPE_ID = /^[a-z][a-z0-9_]*$/;

/**
 * The shape to write, where a parameter's schema gives one (`examples`, JSON Schema's keyword):
 * a missing `resources` is not guessable from its name alone.
 */
function exampleOf(type: ConnectorType, field: string): string {
  const schema = (type.params as { properties?: Record<string, { examples?: unknown[] }> }).properties?.[field];
  const example = schema?.examples?.[0];
  return example === undefined ? '' : `; e.g. "${field}": ${JSON.stringify(example).replace(/,"/g, ', "').replace(/":/g, '": ')}`;
}

export class TypeRegistry {
  private readonly types = new Map<string, RegisteredType>();
  /** Compiles the types' params schemas, made at the first compile (a process may validate none). */
  private ajv: Ajv | undefined;

  register(type: ConnectorType, plugin: string): void {
    if (!type || typeof type.type !== 'string' || !TYPE_ID.test(type.type) || typeof type.read !== 'function' || typeof type.discover !== 'function' || typeof type.testConnection !== 'function' || typeof type.generateScript !== 'function') {
      throw new DpError(500, 'invalid_connector_type', `Plugin '${plugin}' contributes a connector type without a lower-case identifier or without testConnection, discover, generateScript and read`, { plugin });
    }
    const prior = this.types.get(type.type);
    if (prior) throw new DpError(500, 'duplicate_connector_type', `Connector type '${type.type}' is contributed by both '${prior.plugin}' and '${plugin}'`, { type: type.type });
    const schema = { type: 'object', ...type.params };
    const invalid = (why: string) => new DpError(500, 'invalid_connector_type', `Connector type '${type.type}' (plugin '${plugin}') has an invalid params schema: ${why}`, { type: type.type });
    // Checked against JSON Schema's meta-schema at registration (compiled by the build, not here).
    const problem = jsonSchemaProblem(schema);
    if (problem) throw invalid(problem);
    // Compiled on the type's first use: every App boot registers every type, and compiling them
    // all there was a tenth of a test server's start (issue 29).
    const validate = compileOnFirstUse(() => {
      try {
        this.ajv ??= new Ajv({ allErrors: false, strict: false, useDefaults: true, coerceTypes: false });
        return this.ajv.compile(schema);
      } catch (e) {
        throw invalid((e as Error).message);
      }
    });
    const props = ((type.params as { properties?: Record<string, Record<string, unknown>> }).properties ?? {}) as Record<string, Record<string, unknown>>;
    const secrets = Object.entries(props).filter(([, p]) => p['x-secret'] === true).map(([k]) => k);
    this.types.set(type.type, { type, plugin, validate, secrets });
  }

  get(id: string): RegisteredType {
    const t = typeof id === 'string' ? this.types.get(id) : undefined;
    if (!t) throw notFound('unknown_connector_type', `Unknown connector type '${String(id)}'. Available: ${[...this.types.keys()].sort().join(', ')}`, { connector_type: id, available: [...this.types.keys()].sort() });
    return t;
  }

  has(id: string): boolean {
    return this.types.has(id);
  }

  all(): RegisteredType[] {
    return [...this.types.values()].sort((a, b) => a.type.type.localeCompare(b.type.type));
  }

  /** A copy of `config` with the schema's defaults, or 400 `invalid_connector_params` naming the field. */
  validate(id: string, config: unknown): Record<string, unknown> {
    const t = this.get(id);
    if (!config || typeof config !== 'object' || Array.isArray(config)) throw badRequest('invalid_connector_params', "'config' must be an object of the type's parameters", { field: 'config' });
    const copy = structuredClone(config) as Record<string, unknown>;
    if (!t.validate(copy)) {
      const f = ajvFieldError(t.validate.errors![0]!);
      throw badRequest('invalid_connector_params', `Connector type '${id}': ${f.message}${exampleOf(t.type, f.field)}`, { connector_type: id, field: f.field });
    }
    return copy;
  }

  /** What GET /api/connectors/available answers for one type. */
  describe(t: RegisteredType): Record<string, unknown> {
    return {
      type: t.type.type,
      label: t.type.label,
      description: t.type.description ?? '',
      params: t.type.params,
      secret_params: t.secrets,
      cdc_modes: t.type.cdcModes ?? ['full_refresh'],
      plugin: t.plugin,
    };
  }
}
