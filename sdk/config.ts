/**
 * project.yml: the kernel's keys (ProjectConfig) and each plugin's own part, declared with
 * `defineConfig()` and read through `ctx.config()` (docs/configuration.md).
 */
import type { Static, TSchema } from '@sinclair/typebox';
import { requireBundled } from './bundled.js';
import { createEventRef } from './refs.js';

/**
 * TypeBox's builder, from its bundle (dist/vendor/typebox.cjs; see bundled.ts): the package is
 * 200 ES modules, and every plugin's module needs it at load. TypeBox marks its schemas with
 * global symbols (Symbol.for), so schemas from the bundle and from the package are alike.
 */
const Type: typeof import('@sinclair/typebox').Type = requireBundled<typeof import('@sinclair/typebox')>(import.meta.url, '../vendor/typebox.cjs', '@sinclair/typebox').module.Type;

export { Type, type Static, type TSchema };

/**
 * A plugin's top-level key of project.yml and its schema: one TypeBox source gives both the JSON
 * schema the kernel validates at boot (line-numbered errors, defaults filled in) and the type
 * `ctx.config(ref)` returns. The plugin lists the key in its manifest's
 * `contributes.configuration` and the ref in `definePlugin({ config: [ref] })`.
 */
export interface ConfigRef<S extends TSchema = TSchema> {
  readonly key: string;
  readonly schema: S;
  /**
   * Set when a running server cannot apply a change of this key (the plugin reads it once, at
   * setup): why. A change is then announced with the key under `restartRequired`.
   */
  readonly restartRequired?: string;
  /** Type carrier only (never set). */
  readonly __type?: Static<S>;
}

export function defineConfig<S extends TSchema>(key: string, schema: S, options: { restartRequired?: string } = {}): ConfigRef<S> {
  return Object.freeze({ key, schema, ...(options.restartRequired ? { restartRequired: options.restartRequired } : {}) });
}

/** A plugin's validated part of project.yml with its defaults (after ${VAR} expansion and the environment overlay). */
export type ConfigOf<R> = R extends ConfigRef<infer S> ? Static<S> : never;

/**
 * What changed in the live configuration (announced to `ctx.config.subscribe` listeners and on
 * the event bus as CONFIG_CHANGED): the top-level keys whose value changed (after `${VAR}`
 * expansion, so a secret set in `.env` changes the keys that reference it), and those among them
 * a running server applies only at its next start.
 */
export interface ConfigChange {
  /** Top-level keys of project.yml whose validated value changed. */
  keys: string[];
  /** Whether `.env` changed (secrets: ctx.env and ctx.secrets read the new values). */
  env: boolean;
  /** Changed keys the running server does not apply until it restarts (docs/architecture.md "Live configuration"). */
  restartRequired: string[];
  /** `file`: project.yml or .env changed on disk (an editor, another process); `edit`: through ctx.config.edit / setConnection; `secrets`: ctx.secrets. */
  source: 'file' | 'edit' | 'secrets';
}

/** The kernel's event of a configuration change on the bus (`config.changed`). */
export const CONFIG_CHANGED = createEventRef<ConfigChange>('config.changed');

/**
 * An edit of one top-level key of project.yml, paths relative to that key. It works on the YAML
 * document, so comments and the order of everything else survive.
 */
export interface ConfigEditor {
  /** The value as written at `path` (`${VAR}` unexpanded), or undefined. */
  get(path: ReadonlyArray<string | number>): unknown;
  has(path: ReadonlyArray<string | number>): boolean;
  set(path: ReadonlyArray<string | number>, value: unknown): void;
  /** Removes the entry; a mapping left empty by it is removed too. */
  delete(path: ReadonlyArray<string | number>): void;
}

/**
 * The live configuration (Backstage's `Config` with `subscribe`, VS Code's
 * `contributes.configuration`): `ctx.config(ref)` is the plugin's validated part with defaults,
 * current at every call; a running server follows edits of project.yml and .env.
 */
export interface PluginConfig {
  /** This plugin's part of project.yml: the key of `ref`, validated, defaults filled in, `${VAR}` expanded. Only keys the plugin declares. */
  <S extends TSchema>(ref: ConfigRef<S>): Static<S>;
  /**
   * Calls `listener` after a change of a key (a ref or key name), of every key of a plugin (its
   * name), or of anything (`'*'`). Returns the unsubscribe function.
   */
  subscribe(target: ConfigRef | string, listener: (change: ConfigChange) => void): () => void;
  /**
   * Edits this plugin's key in project.yml: comments kept, the result validated against the
   * key's schema (DpError 400 `config_edit_invalid`, the file unchanged), written atomically,
   * then announced. DpError 403 `config_key_not_owned` for a key the plugin does not declare.
   */
  edit(ref: ConfigRef, fn: (editor: ConfigEditor) => void): ConfigChange;
  /**
   * The kernel's `connections:` entry `name` set to `value` (as written: secrets as `${VAR}`), or
   * removed with null. Same guarantees as `edit`.
   */
  setConnection(name: string, value: Record<string, unknown> | null): ConfigChange;
  /** Every top-level key as written (`${VAR}` unexpanded): what may be shown. */
  asWritten(): Readonly<Record<string, unknown>>;
  /** The line of a path in project.yml (the nearest existing ancestor's), for problems `dp validate` lists. */
  lineOf(path: ReadonlyArray<string | number>): number | undefined;
}

/**
 * The kernel's keys. `connections` is reserved: the specification names it (docs/decisions.md "Project configuration")
 * but no plugin owns it yet, so the kernel validates and holds it until its plugin lands
 * (docs/configuration.md). Every other key belongs to the plugin that declares it.
 */
export interface ProjectConfig {
  name: string;
  database: { path: string };
  environments: Record<string, { database?: { path?: string }; target?: import('./targets.js').TargetConfig }>;
  plugins: { disable: string[]; paths: string[] };
  query: {
    timeout_seconds: { admin: number; editor: number; viewer: number };
    default_limit: number;
    max_limit: number;
    /** User queries of each role that run at once; the rest wait, their timeout running. */
    max_concurrent: { admin: number; editor: number; viewer: number };
    /** Queries of one role that may wait for a slot; more are answered 503 `query_queue_full`. */
    max_queued: number;
  };
  /** Reserved until the connectors plugin lands. */
  connections: Record<string, Record<string, unknown>>;
}

export interface ProjectInfo {
  /** Absolute project root. */
  readonly root: string;
  /** Active environment name, or null. */
  readonly env: string | null;
  readonly config: ProjectConfig;
  /**
   * Resolves a project-relative path and refuses (DpError 400 `path_outside_project`) anything that
   * escapes the root: `..`, absolute paths, or symlinks pointing outside.
   */
  resolve(relativePath: string): string;
  /**
   * `resolve`, for a file a feature reads (connectors, import, script and notebook helpers): also
   * refuses (DpError 400 `project_file_protected`) hidden and service paths (`.env*`, `.dp/`,
   * `.git`, databases, temp files) by name and by their real target, symlinks followed, as the
   * files API does. Every feature that reads project files goes through this one check.
   */
  resolveReadable(relativePath: string): string;
  /** Project-relative form of an absolute path inside the project (forward slashes). */
  relative(absolutePath: string): string;
  /**
   * Writes a project file atomically (temp file in the same folder, then rename), creating its
   * folder; refuses paths outside the project like `resolve`. Returns the absolute path.
   */
  writeFile(relativePath: string, content: string | Buffer): string;
}

/** `.env` values shorter than this are not replaced: they would match ordinary text. */
export const MIN_SECRET_LENGTH = 4;

/**
 * `text` with every `.env` value (MIN_SECRET_LENGTH characters or more) shown as its `${NAME}`
 * reference: the one rule for any route that shows project text a value may have reached (the
 * full DAG, served files). Longer values first, so a value that contains another is replaced whole.
 */
export function withEnvReferences(text: string, env: Readonly<Record<string, string>>): string {
  const secrets = Object.entries(env)
    .filter(([, value]) => value.length >= MIN_SECRET_LENGTH)
    .sort((a, b) => b[1].length - a[1].length);
  let out = text;
  for (const [name, value] of secrets) if (out.includes(value)) out = out.split(value).join(`\${${name}}`);
  return out;
}
