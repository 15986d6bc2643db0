/**
 * Each plugin's part of project.yml (docs/configuration.md): a plugin lists its top-level keys
 * under `contributes.configuration` and hands their TypeBox schemas to definePlugin({ config }).
 * At boot the kernel refuses a key nobody owns (naming its line), validates each enabled
 * plugin's keys against its schemas with the same line-numbered errors as the kernel's keys,
 * fills in the schemas' defaults, and ignores the keys of disabled plugins.
 */
import crypto from 'node:crypto';
import { createRequire } from 'node:module';
import type { Ajv, ValidateFunction } from 'ajv';
import type { ConfigRef } from '../sdk/config.js';
import { badRequest, DpError } from '../sdk/errors.js';
import type { PluginManifest } from '../sdk/plugin.js';
import { configValidators } from './config-validators.generated.js';
import { PROJECT_FILE, schemaError, type LoadedProject } from './config.js';
import { KERNEL_KEYS, RESERVED_KEYS } from './project-schema.js';

const KERNEL_OWNED = new Set<string>([...KERNEL_KEYS, ...RESERVED_KEYS]);

/** Each declared key names one owner, and no plugin claims a kernel or reserved key. */
export function configurationOwners(installed: PluginManifest[], file: (name: string) => string): Map<string, string> {
  const owners = new Map<string, string>();
  for (const m of installed) {
    for (const key of m.contributes?.configuration ?? []) {
      if (KERNEL_OWNED.has(key)) {
        throw new DpError(500, 'invalid_plugin_manifest', `${file(m.name)}: contributes.configuration lists '${key}', which the kernel owns (see docs/configuration.md)`, {
          field: 'contributes.configuration',
        });
      }
      const prior = owners.get(key);
      if (prior) throw new DpError(500, 'invalid_plugin_manifest', `${file(m.name)}: project.yml key '${key}' is already owned by plugin '${prior}'`, { field: 'contributes.configuration' });
      owners.set(key, m.name);
    }
  }
  return owners;
}

/** Refuses a top-level key that neither the kernel nor an installed plugin (enabled or disabled) declares. */
export function checkTopLevelKeys(project: LoadedProject, owners: Map<string, string>): void {
  for (const key of Object.keys(project.config.raw)) {
    if (KERNEL_OWNED.has(key) || owners.has(key)) continue;
    const line = project.lineOf([key]);
    throw badRequest(
      'invalid_project_yml',
      `${PROJECT_FILE}${line ? ` line ${line}` : ''}: unknown key '${key}': neither the kernel nor an installed plugin declares it (plugins' keys: ${[...owners.keys()].sort().join(', ') || 'none'})`,
      { file: PROJECT_FILE, line: line ?? null, field: key },
    );
  }
}

/** The options every plugin config schema compiles with, at build time (scripts/build.mjs) and here. */
export const CONFIG_AJV_OPTIONS = { useDefaults: true, allErrors: false, strict: false, validateSchema: false } as const;

/** The name a config schema's build-time validator goes by: a digest of its JSON. */
export function configSchemaId(schema: unknown): string {
  return 'c' + crypto.createHash('sha256').update(JSON.stringify(schema)).digest('hex').slice(0, 24);
}

let ajv: Ajv | undefined;
const compiled = new WeakMap<object, ValidateFunction>();

function validatorOf(ref: ConfigRef): ValidateFunction {
  let v = compiled.get(ref.schema) ?? configValidators[configSchemaId(ref.schema)];
  if (!v) {
    // The schemas are the plugins' own code (TypeBox), not input: checking them against the
    // JSON Schema meta-schema on every command's start cost more than validating project.yml.
    // Loaded on the first schema a process compiles: a command whose plugins' keys are all absent never loads ajv.
    ajv ??= new (createRequire(import.meta.url)('ajv') as typeof import('ajv')).Ajv({ ...CONFIG_AJV_OPTIONS, code: { optimize: false } });
    v = ajv.compile(ref.schema as object);
  }
  compiled.set(ref.schema, v);
  return v;
}

/** The value of an absent key: the schema's `default`, else an empty object or list. */
function absentValue(ref: ConfigRef): unknown {
  const schema = ref.schema as { default?: unknown; type?: unknown };
  if (schema.default !== undefined) return structuredClone(schema.default);
  if (schema.type === 'array') return [];
  if (schema.type === 'object') return {};
  return undefined;
}

/**
 * The value of a key project.yml does not hold: its schema's defaults, computed (and the schema
 * compiled) on the first read, so a command never pays for the schemas of keys the file leaves
 * out and the plugin does not read. Defaults are the plugin's code, not input: they cannot fail.
 */
class AbsentKey {
  private value: { v: unknown } | null = null;
  constructor(private readonly ref: ConfigRef) {}
  resolve(): unknown {
    if (!this.value) {
      const v = absentValue(this.ref);
      const validate = validatorOf(this.ref);
      if (!validate(v)) throw new DpError(500, 'invalid_plugin_manifest', `The defaults of project.yml key '${this.ref.key}' fail its own schema: ${validate.errors![0]!.message}`, { key: this.ref.key });
      this.value = { v };
    }
    return this.value.v;
  }
}

/** A plugin's key's value as pluginConfiguration stored it (an absent key's defaults on first read). */
export function configValue(stored: unknown): unknown {
  return stored instanceof AbsentKey ? stored.resolve() : stored;
}

/**
 * Validates one plugin's keys (after ${VAR} expansion) and returns them with defaults, by key
 * (read each through configValue).
 * The manifest's keys and the code's refs must match both ways.
 */
export function pluginConfiguration(manifest: PluginManifest, refs: ReadonlyArray<ConfigRef>, project: LoadedProject): Map<string, unknown> {
  const declared = manifest.contributes?.configuration ?? [];
  const byKey = new Map(refs.map((r) => [r.key, r]));
  for (const key of declared) {
    if (!byKey.has(key)) {
      throw new DpError(500, 'undeclared_configuration', `Plugin '${manifest.name}' lists project.yml key '${key}' in contributes.configuration but its definePlugin() has no config schema for it`, {
        plugin: manifest.name,
      });
    }
  }
  const out = new Map<string, unknown>();
  for (const ref of refs) {
    if (!declared.includes(ref.key)) {
      throw new DpError(500, 'undeclared_configuration', `Plugin '${manifest.name}' has a config schema for '${ref.key}' without listing it in contributes.configuration`, {
        plugin: manifest.name,
      });
    }
    const raw = project.config.raw[ref.key];
    if (raw === undefined || raw === null) {
      out.set(ref.key, new AbsentKey(ref));
      continue;
    }
    const value = structuredClone(raw);
    const validate = validatorOf(ref);
    if (!validate(value)) throw schemaError(validate.errors![0], [ref.key], project.lineOf);
    out.set(ref.key, value);
  }
  return out;
}
