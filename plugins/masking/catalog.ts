/**
 * The live catalog of masking methods: the built-ins plus whatever plugins contribute through
 * the `masking.methods` extension point. It validates a policy's method_config against the
 * method's JSON schema (ajv, defaults filled in) and compiles the masking expression.
 */
import { createRequire } from 'node:module';
import type { Ajv, ValidateFunction } from 'ajv';
import { ajvFieldError, badRequest, DpError, hasPermission, type Caller, type MaskingColumnInfo, type MaskingMethod } from '../../sdk/index.js';
import type { MaskingPolicy } from './api-types.js';
import { MaskKeys } from './keys.js';
import { builtinMethods } from './methods.js';

const METHOD_NAME = /^[a-z][a-z0-9_]*$/;

interface Entry {
  method: MaskingMethod;
  /** The compiled configSchema; built-in methods' schemas compile on first use (a command that sets no policy compiles none). */
  validate(): ValidateFunction;
  /** Plugin that contributed the method (`masking` for built-ins). */
  plugin: string;
}

export class MethodCatalog {
  /** ajv, required and set up on the first schema compiled: a command that sets no policy needs none. */
  private ajvInstance: Ajv | undefined;
  private get ajv(): Ajv {
    return (this.ajvInstance ??= new (createRequire(import.meta.url)('ajv') as typeof import('ajv')).Ajv({ allErrors: false, strict: false, useDefaults: true }));
  }
  private readonly entries = new Map<string, Entry>();

  /** `keys`: the project's masking keys (a random, unsaved key when omitted). */
  constructor(readonly keys: MaskKeys = new MaskKeys()) {
    for (const m of builtinMethods(keys)) this.register(m, 'masking');
  }

  /** Adds a method; refuses malformed contributions and duplicate names with an error naming the plugin. */
  register(method: MaskingMethod, plugin: string): void {
    const problem = (what: string) => new DpError(500, 'invalid_masking_method', `Plugin '${plugin}' contributes a masking method with ${what}`, { plugin });
    if (!method || typeof method !== 'object') throw problem('no definition (expected an object)');
    if (typeof method.name !== 'string' || !METHOD_NAME.test(method.name)) throw problem(`an invalid name '${String(method?.name)}' (lower-case letters, digits, _)`);
    if (typeof method.expression !== 'function') throw problem(`no expression(column, config) function ('${method.name}')`);
    if (typeof method.description !== 'string') throw problem(`no description ('${method.name}')`);
    const schema = method.configSchema ?? { type: 'object', additionalProperties: false, properties: {} };
    if (typeof schema !== 'object' || (schema as { type?: unknown }).type !== 'object') throw problem(`a configSchema that is not an object schema ('${method.name}')`);
    const prior = this.entries.get(method.name);
    if (prior) throw new DpError(500, 'duplicate_masking_method', `Masking method '${method.name}' from plugin '${plugin}' is already defined by plugin '${prior.plugin}'`, { plugin, method: method.name });
    let compiled: ValidateFunction | undefined;
    const compile = () => {
      try {
        return (compiled ??= this.ajv.compile(schema));
      } catch (e) {
        throw problem(`a configSchema ajv cannot compile ('${method.name}': ${(e as Error).message})`);
      }
    };
    // Another plugin's schema is checked as it arrives, so a bad contribution fails the boot naming it.
    if (plugin !== 'masking') compile();
    this.entries.set(method.name, { method: { ...method, configSchema: schema }, validate: compile, plugin });
  }

  /** Whether a method is one of this plugin's own (not contributed by another plugin). */
  builtin(name: string): boolean {
    return this.entries.get(name)?.plugin === 'masking';
  }

  has(name: string): boolean {
    return this.entries.has(name);
  }

  names(): string[] {
    return [...this.entries.keys()];
  }

  /** The catalog as GET /api/masking/methods returns it. */
  list(): Array<{ name: string; description: string; config_schema: Record<string, unknown>; plugin: string }> {
    return [...this.entries.values()].map((e) => ({
      name: e.method.name,
      description: e.method.description,
      config_schema: e.method.configSchema,
      plugin: e.plugin,
    }));
  }

  private entry(name: string): Entry {
    const e = this.entries.get(name);
    if (!e) throw badRequest('unknown_masking_method', `Unknown masking method '${name}'; known methods: ${this.names().join(', ')}`, { field: 'method', known: this.names() });
    return e;
  }

  /**
   * Validates method_config for a method and returns it with defaults filled in.
   * A bad value answers 400 naming the field (`method_config.show_last`).
   */
  normalizeConfig(name: string, config: unknown): Record<string, unknown> {
    const e = this.entry(name);
    const copy = config == null ? {} : structuredCloneJson(config);
    const validate = e.validate();
    if (!validate(copy)) {
      const err = validate.errors![0];
      const params = err.params as Record<string, unknown>;
      const { field } = ajvFieldError(err);
      const path = field ? `method_config.${field}` : 'method_config';
      const reason = params.additionalProperty ? `is not a setting of method '${name}'` : String(err.message);
      throw badRequest('invalid_method_config', `${path} ${reason}`, { field: path, method: name });
    }
    return copy as Record<string, unknown>;
  }

  /** The masking SQL expression of a method on a column expression (config already normalized). */
  expression(name: string, column: string, config: Record<string, unknown>, info: MaskingColumnInfo): string {
    const sql = this.entry(name).method.expression(column, config, info);
    if (typeof sql !== 'string' || sql.trim() === '') throw new DpError(500, 'invalid_masking_method', `Masking method '${name}' returned no SQL expression`, { method: name });
    return sql;
  }

  /** Masks one value in JavaScript (post-execution fallback); methods without a JavaScript form give NULL. */
  apply(name: string, value: unknown, config: Record<string, unknown>, info: MaskingColumnInfo): unknown {
    return this.twin(name, config, info)(value);
  }

  /**
   * A method's JavaScript form for one column, looked up once (a row transform masks every value
   * of a page with it); a method without one gives NULL, as apply() does.
   */
  twin(name: string, config: Record<string, unknown>, info: MaskingColumnInfo): (value: unknown) => unknown {
    const m = this.entries.get(name)?.method;
    if (!m?.apply) return () => null;
    return (value) => m.apply!(value, config, info);
  }
}

function structuredCloneJson(value: unknown): unknown {
  if (typeof value !== 'object' || Array.isArray(value)) return value;
  return JSON.parse(JSON.stringify(value));
}

/**
 * A policy as `caller` may read it, on every outlet (the policies route, `dp mask list` local or
 * through `POST /api/cli/run`, `SHOW MASKING POLICIES`, the derived listing): config settings a
 * method marks `writeOnly` (the seed_key of noise and date_shift) would let a reader undo the
 * masking, so only callers who may write policies see them; others read `***`.
 */
export function shownPolicy<P extends MaskingPolicy>(policy: P, caller: Caller, catalog: MethodCatalog): P {
  if (hasPermission(caller, 'write')) return policy;
  const schema = catalog.list().find((m) => m.name === policy.method)?.config_schema as { properties?: Record<string, { writeOnly?: boolean }> } | undefined;
  const config = { ...policy.method_config };
  for (const [k, spec] of Object.entries(schema?.properties ?? {})) {
    if (spec?.writeOnly && config[k] !== undefined && config[k] !== '') config[k] = '***';
  }
  return { ...policy, method_config: config };
}
