import { pathToFileURL } from 'node:url';
import type { ProjectConfig, ProjectInfo } from '../sdk/config.js';
import type { DatabasePort, DbConnection, MigrationSet, Row, SerializedSql, SqlParams } from '../sdk/db.js';
import { DpError } from '../sdk/errors.js';
import type { HookName, KernelHooks } from '../sdk/hooks.js';
import type { CommandHandler, PluginContext, PluginDefinition, PluginManifest, RouteDefinition, ServiceRegistry } from '../sdk/plugin.js';
import { AUTH_MIGRATION_OWNER, createAuth, type AuthProvider } from './auth/index.js';
import { databaseFile, loadProject, writeActiveEnv, type LoadedProject } from './config.js';
import { DuckDatabase, runMigrations } from './database.js';
import { KernelEventBus } from './events.js';
import { createHooks } from './hooks.js';
import { KernelLogger } from './log.js';
import { discoverPlugins, type DiscoveredPlugin } from './plugins.js';
import { GuardedQueryRunner } from './query-runner.js';
import { EnvSecretsStore } from './secrets.js';

export interface RegisteredRoute extends RouteDefinition {
  plugin: string;
}

export interface BootOptions {
  projectRoot: string;
  env?: string | null;
  serving?: boolean;
  auth?: boolean;
  /** Override of the built-in plugins folder (tests). */
  builtInPluginsDir?: string;
}

/** Forwards to whichever DuckDB file is open now, so plugins keep one handle across environment switches. */
class DatabaseHandle implements DatabasePort {
  constructor(private readonly current: () => DuckDatabase) {}
  get path() {
    return this.current().path;
  }
  withConnection<T>(fn: (c: DbConnection) => Promise<T>) {
    return this.current().withConnection(fn);
  }
  connect() {
    return this.current().connect();
  }
  all<T = Row>(sql: string, params?: SqlParams) {
    return this.current().all<T>(sql, params);
  }
  query(sql: string, params?: SqlParams) {
    return this.current().query(sql, params);
  }
  run(sql: string, params?: SqlParams) {
    return this.current().run(sql, params);
  }
  value<T = unknown>(sql: string, params?: SqlParams) {
    return this.current().value<T>(sql, params);
  }
  parse(sql: string) {
    return this.current().parse(sql);
  }
  deparse(tree: SerializedSql) {
    return this.current().deparse(tree);
  }
  checkpoint() {
    return this.current().checkpoint();
  }
  ident(name: string) {
    return this.current().ident(name);
  }
  literal(value: string) {
    return this.current().literal(value);
  }
}

class Services implements ServiceRegistry {
  private readonly map = new Map<string, unknown>();
  constructor(private readonly disabled: () => Map<string, string>) {}

  provideFor(plugin: PluginManifest, name: string, service: unknown): void {
    if (!(plugin.contributes?.services ?? []).includes(name)) {
      throw new DpError(500, 'undeclared_service', `Plugin '${plugin.name}' provides service '${name}' without declaring it in contributes.services`);
    }
    if (this.map.has(name)) throw new DpError(500, 'duplicate_service', `Service '${name}' is provided twice`);
    this.map.set(name, service);
  }
  provide<T>(): void {
    throw new Error('use the plugin context');
  }
  get<T>(name: string): T {
    const s = this.map.get(name);
    if (s === undefined) {
      const by = this.disabled().get(name);
      throw new DpError(404, 'service_unavailable', by ? `Service '${name}' is unavailable: plugin '${by}' is disabled` : `Service '${name}' is not provided by any enabled plugin`, {
        service: name,
      });
    }
    return s as T;
  }
  find<T>(name: string): T | undefined {
    return this.map.get(name) as T | undefined;
  }
}

/** The kernel: configuration, database, hooks, services, plugins. Knows no feature. */
export class App {
  project!: LoadedProject;
  private database!: DuckDatabase;
  readonly db: DatabasePort = new DatabaseHandle(() => this.database);
  readonly hooks: KernelHooks = createHooks();
  readonly events = new KernelEventBus();
  readonly log: KernelLogger;
  readonly services: Services;
  readonly queries: GuardedQueryRunner;
  secrets!: EnvSecretsStore;
  auth!: AuthProvider;
  readonly routes: RegisteredRoute[] = [];
  readonly commands = new Map<string, { plugin: string; handler: CommandHandler }>();
  plugins: DiscoveredPlugin[] = [];
  disabledPlugins: DiscoveredPlugin[] = [];
  private readonly migrations: MigrationSet[] = [];
  private readonly startFns: Array<() => Promise<void> | void> = [];
  private readonly stopFns: Array<() => Promise<void> | void> = [];
  private readonly extensionPoints = new Map<string, (contribution: unknown, from: string) => void>();
  readonly serving: boolean;
  authEnabled: boolean;

  private constructor(private readonly options: BootOptions) {
    this.serving = options.serving ?? false;
    this.authEnabled = options.auth ?? false;
    this.log = new KernelLogger('kernel', () => Object.values(this.project?.envVars ?? {}));
    const disabledServices = () => {
      const m = new Map<string, string>();
      for (const p of this.disabledPlugins) for (const s of p.manifest.contributes?.services ?? []) m.set(s, p.manifest.name);
      return m;
    };
    this.services = new Services(disabledServices);
    this.queries = new GuardedQueryRunner(this.db, this.hooks, () => this.project.config, this.log.child('query'));
  }

  /** Loads the project and every enabled plugin's setup; the database opens on first use. */
  static async boot(options: BootOptions): Promise<App> {
    const app = new App(options);
    app.project = loadProject(options.projectRoot, options.env ?? null);
    for (const v of app.project.unresolvedVars) (app.serving ? app.log.warn : app.log.debug).call(app.log, `project.yml references \${${v}}, which .env does not define`);
    app.secrets = new EnvSecretsStore(app.project.root, (vars) => app.reloadEnv(vars));
    app.openDatabase();
    app.auth = createAuth(app);
    app.migrations.push({ owner: AUTH_MIGRATION_OWNER, steps: app.auth.migrations });
    const { enabled, disabled } = discoverPlugins({
      projectRoot: app.project.root,
      paths: app.project.config.plugins.paths,
      disable: app.project.config.plugins.disable,
      builtInDir: options.builtInPluginsDir,
    });
    app.plugins = enabled;
    app.disabledPlugins = disabled;
    for (const p of enabled) await app.loadPlugin(p);
    app.checkManifestRoutes();
    return app;
  }

  private reloadEnv(vars: Record<string, string>): void {
    (this.project as { envVars: Record<string, string> }).envVars = vars;
  }

  private openDatabase(): void {
    this.database = new DuckDatabase(databaseFile(this.project));
    this.database.onOpen = (db) => runMigrations(db, this.migrations);
  }

  private async loadPlugin(p: DiscoveredPlugin): Promise<void> {
    let mod: { default?: PluginDefinition };
    try {
      mod = await import(pathToFileURL(p.entryFile).href);
    } catch (e) {
      throw new DpError(500, 'plugin_load_failed', `Plugin '${p.manifest.name}' (${p.entryFile}) failed to load: ${(e as Error).message}`, { plugin: p.manifest.name });
    }
    const def = mod.default;
    if (!def || typeof def.setup !== 'function') {
      throw new DpError(500, 'plugin_load_failed', `Plugin '${p.manifest.name}': ${p.entryFile} must default-export definePlugin({ setup })`, { plugin: p.manifest.name });
    }
    await def.setup(this.contextFor(p.manifest));
  }

  /** The context a plugin sees: everything goes through the sdk's interfaces. */
  contextFor(manifest: PluginManifest): PluginContext {
    const app = this;
    const declared = manifest.contributes ?? {};
    const log = this.log.child(manifest.name);
    const project: ProjectInfo = {
      get root() {
        return app.project.root;
      },
      get env() {
        return app.project.env;
      },
      get config(): ProjectConfig {
        return app.project.config;
      },
      resolve: (p: string) => app.project.resolve(p),
      relative: (p: string) => app.project.relative(p),
      writeFile: (p: string, content: string | Buffer) => app.project.writeFile(p, content),
    };
    return {
      manifest,
      project,
      db: this.db,
      hooks: this.hooks,
      events: this.events,
      services: {
        provide: (name, service) => app.services.provideFor(manifest, name, service),
        get: (name) => app.services.get(name),
        find: (name) => app.services.find(name),
      },
      secrets: {
        list: () => app.secrets.list(),
        get: (k) => app.secrets.get(k),
        set: (k, v) => app.secrets.set(k, v),
        delete: (k) => app.secrets.delete(k),
      },
      queries: this.queries,
      webhooks: app.auth.webhooks,
      log,
      get env() {
        return app.project.envVars;
      },
      serving: this.serving,
      route: (def) => {
        app.routes.push({ ...def, plugin: manifest.name });
      },
      command: (path, handler) => {
        const top = path.split(' ')[0];
        if (!(declared.commands ?? []).some((c) => c.command.split(' ')[0] === top)) {
          throw new DpError(500, 'undeclared_command', `Plugin '${manifest.name}' handles command '${path}' without declaring it in contributes.commands`);
        }
        app.commands.set(path, { plugin: manifest.name, handler });
      },
      tap: (hook, fn, options) => {
        if (!(declared.hooks ?? []).includes(hook)) {
          throw new DpError(500, 'undeclared_hook', `Plugin '${manifest.name}' taps '${hook}' without declaring it in contributes.hooks`);
        }
        const h = app.hooks[hook as HookName] as unknown as { tapPromise: (o: unknown, f: unknown) => void };
        h.tapPromise({ name: manifest.name, stage: options?.stage ?? 0 }, fn);
      },
      migrate: (steps) => {
        app.migrations.push({ owner: manifest.name, steps });
      },
      provideExtensionPoint: (name, accept) => {
        if (!(declared.extensionPoints ?? []).includes(name)) {
          throw new DpError(500, 'undeclared_extension_point', `Plugin '${manifest.name}' offers extension point '${name}' without declaring it`);
        }
        app.extensionPoints.set(name, accept as (c: unknown, f: string) => void);
      },
      extend: (name, contribution) => {
        const accept = app.extensionPoints.get(name);
        if (!accept) {
          throw new DpError(500, 'unknown_extension_point', `Plugin '${manifest.name}' extends '${name}', which no enabled plugin offers (add its plugin to 'requires')`);
        }
        accept(contribution, manifest.name);
      },
      onStart: (fn) => app.startFns.push(fn),
      onStop: (fn) => app.stopFns.push(fn),
    };
  }

  /** Every registered route must be declared in its plugin's manifest with the same permission, and vice versa. */
  private checkManifestRoutes(): void {
    const key = (m: string, u: string) => `${m} ${u}`;
    for (const p of this.plugins) {
      const declared = new Map((p.manifest.contributes?.routes ?? []).map((r) => [key(r.method, r.url), r.permission]));
      const registered = this.routes.filter((r) => r.plugin === p.manifest.name);
      for (const r of registered) {
        if (!r.permission) throw new DpError(500, 'route_without_permission', `Route ${r.method} ${r.url} of plugin '${p.manifest.name}' declares no permission`);
        const d = declared.get(key(r.method, r.url));
        if (!d) throw new DpError(500, 'undeclared_route', `Plugin '${p.manifest.name}' registers ${r.method} ${r.url}, which its plugin.json does not declare`);
        if (d !== r.permission) {
          throw new DpError(500, 'route_permission_mismatch', `Route ${r.method} ${r.url}: plugin.json says '${d}', the code says '${r.permission}'`);
        }
        declared.delete(key(r.method, r.url));
      }
      if (declared.size > 0) {
        throw new DpError(500, 'unregistered_route', `Plugin '${p.manifest.name}' declares ${[...declared.keys()].join(', ')} in plugin.json but never registers it`);
      }
    }
  }

  /** Opens the database (running migrations) and runs the plugins' start callbacks. */
  async start(): Promise<void> {
    await this.db.value('SELECT 1');
    for (const fn of this.startFns) await fn();
  }

  async stop(): Promise<void> {
    for (const fn of [...this.stopFns].reverse()) {
      try {
        await fn();
      } catch (e) {
        this.log.error('plugin stop failed', { error: (e as Error).message });
      }
    }
  }

  /** Switches the active environment: stops plugins, reopens the database file, starts again. */
  async switchEnvironment(name: string): Promise<void> {
    const next = loadProject(this.project.root, name);
    await this.stop();
    this.database.close();
    this.project = next;
    writeActiveEnv(this.project.root, name);
    this.openDatabase();
    await this.start();
  }

  async close(): Promise<void> {
    // A DuckDB call still running on a libuv worker keeps the process from exiting: user
    // queries are stopped, and have let go, before anything closes.
    await this.queries.stopAll(new DpError(503, 'shutting_down', 'The server is shutting down'));
    await this.stop();
    this.database?.close();
  }
}
