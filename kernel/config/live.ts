/**
 * The live configuration: one service holds project.yml and .env for the whole process (the
 * kernel's keys, every loaded plugin's validated part, the values as written, line numbers),
 * follows the files while the server runs, edits project.yml for its owners and announces every
 * change. Backstage's `Config.subscribe` and VS Code's `contributes.configuration` are the models;
 * docs/architecture.md "Live configuration" says what a running server applies.
 *
 * A running server learns of a change two ways, both ending in one reload: the project folder
 * is watched (an editor, `dp connect` or `dp secrets set` in another process), and a read through
 * the service compares the files' stamps first, so a request right after an edit sees it. A
 * reload that fails validation keeps the configuration in force and says why in the log.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Document } from 'yaml';
import { CONFIG_CHANGED, type ConfigChange, type ConfigEditor, type ConfigRef, type PluginConfig } from '../../sdk/config.js';
import { badRequest, DpError, errorMessage, forbidden, isDpError } from '../../sdk/errors.js';
import type { EventBus, PluginManifest } from '../../sdk/plugin.js';
import { ENV_FILE, loadProject, PROJECT_FILE, readEnvFile, type LoadedProject } from '../config.js';
import type { KernelLogger } from '../log.js';
import { yaml } from '../../sdk/yaml.js';
import { writeFileAtomic } from '../paths.js';
import { configValue } from '../plugin-config.js';

/**
 * The kernel's keys a running server applies only at its next start, and why. Every other
 * kernel key (`name`, `query`, `connections`) applies at once.
 */
export const KERNEL_RESTART_REQUIRED: Readonly<Record<string, string>> = {
  database: 'the database file opens at start (dp env use switches files on a running server)',
  environments: 'the active environment\'s database file opens at start (dp env use switches files on a running server)',
  plugins: 'plugins are discovered and set up at start',
  server: 'the HTTP server takes its origins, limits and timeouts when it starts listening',
  auth: 'the auth settings are read when the server starts',
};

/** The state the service installs: the loaded project and each loaded plugin's validated keys. */
export interface ConfigState {
  project: LoadedProject;
  values: Map<string, unknown>;
}

export interface LiveConfigOptions {
  /** The state in force (the app holds it; the service replaces it through `install`). */
  current(): ConfigState;
  install(state: ConfigState): void;
  /** Every loaded plugin's keys validated (with defaults) against a candidate project; throws a DpError naming the line. */
  validate(project: LoadedProject): Map<string, unknown>;
  /** The plugin that owns a top-level key (undefined: the kernel's or nobody's). */
  ownerOf(key: string): string | undefined;
  /** Why a plugin's key needs a restart (its ConfigRef.restartRequired), if it does. */
  restartReasonOf(key: string): string | undefined;
  events: EventBus;
  log: KernelLogger;
  /** A serving process follows the files (watch, stamps on read); a CLI process reads them once. */
  follow: boolean;
}

type Listener = (change: ConfigChange) => void;
type YamlPath = ReadonlyArray<string | number>;

/** What identifies one version of a file on disk (an atomic rewrite is a new inode). */
function stampOf(file: string): string {
  try {
    const st = fs.statSync(file);
    return `${st.ino}:${st.size}:${st.mtimeMs}`;
  } catch {
    return 'absent';
  }
}

const sameJson = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** An editor of one top-level key of a YAML document (paths relative to it). */
function editorOf(doc: Document, key: string): ConfigEditor {
  const full = (p: YamlPath) => [key, ...p];
  return {
    get(p) {
      const node = doc.getIn(full(p), true);
      return yaml.isNode(node) ? node.toJS(doc) : node;
    },
    has: (p) => doc.hasIn(full(p)),
    set: (p, value) => doc.setIn(full(p), doc.createNode(value)),
    delete(p) {
      doc.deleteIn(full(p));
      // Mappings the removal left empty go too, up to the key itself.
      for (let n = p.length - 1; n >= 0; n--) {
        const at = full(p.slice(0, n));
        const node = doc.getIn(at, true);
        if (!yaml.isMap(node) || node.items.length > 0) break;
        doc.deleteIn(at);
      }
    },
  };
}

export class LiveConfig {
  private readonly listeners = new Map<string, Set<Listener>>();
  /** The files' stamps at the last load (a CLI process, which never reloads, does not read them). */
  private stamps: string;
  /** Set while the current run of JavaScript has compared the stamps: its other reads do not stat again. */
  private comparedThisTick = false;
  private watcher: fs.FSWatcher | null = null;

  constructor(private readonly options: LiveConfigOptions) {
    this.stamps = options.follow ? this.readStamps() : '';
  }

  private get root(): string {
    return this.options.current().project.root;
  }

  private readStamps(): string {
    return `${stampOf(path.join(this.root, PROJECT_FILE))}|${stampOf(path.join(this.root, ENV_FILE))}`;
  }

  /**
   * Reloads when project.yml or .env changed on disk since the last load (a stat of each; serving
   * processes only). One comparison per tick: the reads of one run of JavaScript, up to Node's
   * next pass over its tick queue, share it (nothing from another process, no request and no
   * file event, can arrive between them); the first read after that compares again, so a request
   * that follows an edit sees it even before the watcher reports it.
   */
  refresh(): void {
    if (!this.options.follow || this.comparedThisTick) return;
    this.comparedThisTick = true;
    process.nextTick(() => (this.comparedThisTick = false));
    if (this.readStamps() !== this.stamps) this.reload('file');
  }

  /**
   * Re-reads project.yml and .env and installs them when they validate; otherwise the
   * configuration in force stays (a changed .env still applies: secrets do not depend on the
   * file's validity). Returns what changed.
   */
  reload(source: ConfigChange['source']): ConfigChange {
    const stamps = this.readStamps();
    const before = this.options.current();
    let next: ConfigState;
    try {
      const project = loadProject(before.project.root, before.project.env);
      next = { project, values: this.options.validate(project) };
    } catch (e) {
      this.stamps = stamps;
      this.options.log.warn(`project.yml changed but was not applied (the configuration in force stays): ${errorMessage(e)}`);
      const envVars = loadProjectEnv(before.project);
      if (sameJson(envVars, before.project.envVars)) return { keys: [], env: false, restartRequired: [], source };
      (before.project as { envVars: Record<string, string> }).envVars = envVars;
      return this.announce({ keys: [], env: true, restartRequired: [], source });
    }
    this.stamps = stamps;
    return this.install(before, next, source);
  }

  /** Installs a validated state and announces the keys whose value changed. */
  private install(before: ConfigState, next: ConfigState, source: ConfigChange['source']): ConfigChange {
    const keys = new Set([...Object.keys(before.project.config.raw), ...Object.keys(next.project.config.raw)]);
    const changed = [...keys].filter((k) => !sameJson(before.project.config.raw[k], next.project.config.raw[k])).sort();
    const env = !sameJson(before.project.envVars, next.project.envVars);
    this.options.install(next);
    const restartRequired = changed.filter((k) => KERNEL_RESTART_REQUIRED[k] !== undefined || this.options.restartReasonOf(k) !== undefined);
    return this.announce({ keys: changed, env, restartRequired, source });
  }

  private announce(change: ConfigChange): ConfigChange {
    if (change.keys.length === 0 && !change.env) return change;
    const log = this.options.log;
    log.info('configuration changed', { keys: change.keys, env: change.env, source: change.source });
    for (const key of change.restartRequired) {
      log.warn(`project.yml '${key}' changed: it applies at the next start of the server (${KERNEL_RESTART_REQUIRED[key] ?? this.options.restartReasonOf(key)})`);
    }
    for (const [target, listeners] of this.listeners) {
      const concerned = target === '*' || change.keys.some((k) => k === target || this.options.ownerOf(k) === target);
      if (!concerned) continue;
      for (const listener of listeners) {
        try {
          listener(change);
        } catch (e) {
          log.error(`a listener of configuration '${target}' failed: ${errorMessage(e)}`);
        }
      }
    }
    this.options.events.emit(CONFIG_CHANGED, { ...change });
    return change;
  }

  /** `listener` after a change of a key, of any key of a plugin (its name), or of anything ('*'). */
  subscribe(target: string, listener: Listener): () => void {
    let set = this.listeners.get(target);
    if (!set) this.listeners.set(target, (set = new Set()));
    set.add(listener);
    return () => set.delete(listener);
  }

  /**
   * Edits one top-level key of project.yml on its YAML document (comments and order kept),
   * validates the whole result as a load would (DpError 400 `config_edit_invalid`, nothing
   * written), writes it atomically and installs it. The caller has checked ownership.
   */
  edit(key: string, fn: (editor: ConfigEditor) => void): ConfigChange {
    this.refresh();
    const before = this.options.current();
    // Through the project's resolver, so a project.yml linked from outside the root is refused.
    const file = before.project.resolve(PROJECT_FILE);
    const doc = yaml.parseDocument(fs.readFileSync(file, 'utf8'));
    if (doc.errors.length) throw badRequest('invalid_project_yml', `${PROJECT_FILE}: ${doc.errors[0]!.message.split('\n')[0]}`, { file: PROJECT_FILE });
    fn(editorOf(doc, key));
    const text = doc.toString();
    let next: ConfigState;
    try {
      const project = loadProject(before.project.root, before.project.env, text);
      next = { project, values: this.options.validate(project) };
    } catch (e) {
      if (!isDpError(e) || e.status >= 500) throw e;
      throw badRequest('config_edit_invalid', `The edit of '${key}' was refused and project.yml is unchanged: ${e.message}`, { key, cause: e.code, ...('field' in e.details ? { field: e.details.field } : {}) });
    }
    writeFileAtomic(file, text);
    this.stamps = this.readStamps();
    return this.install(before, next, 'edit');
  }

  /** The plugin-facing service (ctx.config): reads, subscriptions and edits of the keys `manifest` declares. */
  forPlugin(manifest: PluginManifest): PluginConfig {
    const declared = manifest.contributes?.configuration ?? [];
    const current = () => {
      this.refresh();
      return this.options.current();
    };
    const read = (ref: ConfigRef) => {
      if (!declared.includes(ref.key)) {
        throw new DpError(500, 'undeclared_configuration', `Plugin '${manifest.name}' reads project.yml key '${ref.key}', which its manifest does not list in contributes.configuration`, {
          plugin: manifest.name,
        });
      }
      return configValue(current().values.get(ref.key));
    };
    const service = {
      subscribe: (target: ConfigRef | string, listener: Listener) => this.subscribe(typeof target === 'string' ? target : target.key, listener),
      edit: (ref: ConfigRef, fn: (editor: ConfigEditor) => void) => {
        if (!declared.includes(ref.key)) {
          throw forbidden('config_key_not_owned', `Plugin '${manifest.name}' may not edit project.yml key '${ref.key}': only the key's owner edits it`, { plugin: manifest.name, key: ref.key });
        }
        return this.edit(ref.key, fn);
      },
      setConnection: (name: string, value: Record<string, unknown> | null) =>
        this.edit('connections', (editor) => (value === null ? editor.delete([name]) : editor.set([name], value))),
      asWritten: () => structuredClone(current().project.written),
      lineOf: (p: YamlPath) => current().project.lineOf([...p]),
    };
    return Object.assign(read, service) as PluginConfig;
  }

  /** Follows project.yml and .env (serving processes): the folder is watched, since an atomic write replaces the file itself. */
  watch(): void {
    if (!this.options.follow) return;
    try {
      this.watcher = fs.watch(this.root, (_event, name) => {
        if (name === PROJECT_FILE || name === ENV_FILE) this.refresh();
      });
      this.watcher.on('error', (e) => this.options.log.warn('project.yml and .env are no longer watched', { error: e.message }));
      this.watcher.unref();
    } catch (e) {
      this.options.log.warn('project.yml and .env cannot be watched: edits apply when the configuration is next read', { error: errorMessage(e) });
    }
  }

  close(): void {
    this.watcher?.close();
    this.watcher = null;
  }
}

/** .env as it is now (a project.yml that does not validate must not hold back a rotated secret). */
function loadProjectEnv(project: LoadedProject): Record<string, string> {
  try {
    return readEnvFile(project.root);
  } catch {
    return project.envVars;
  }
}
