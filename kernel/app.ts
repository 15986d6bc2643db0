import { pathToFileURL } from 'node:url';
import type { ConfigRef } from '../sdk/config.js';
import { CATALOG_CHANGED, type DatabasePort, type MigrationSet } from '../sdk/db.js';
import { DpError } from '../sdk/errors.js';
import { HOOK_NAMES, type HookRef, type KernelHooks } from '../sdk/hooks.js';
import type { CommandHandler, PluginContext, PluginDefinition, PluginManifest, RouteDefinition } from '../sdk/plugin.js';
import type { SseRouteDefinition, StaticRouteDefinition, WebSocketRouteDefinition } from '../sdk/routes.js';
import type { Clock } from '../sdk/scheduler.js';
import { createAuth, type AuthProvider } from './auth/index.js';
import { databaseFile, loadProject, writeActiveEnv, type LoadedProject } from './config.js';
import { LiveConfig } from './config/live.js';
import { configuredMemoryLimit, DuckDatabase } from './database.js';
import { KernelEventBus } from './events.js';
import { checkHookDeclarations, createHooks, HookRegistry, type HookPointHandle } from './hooks.js';
import { DEFAULT_PHASE_TIMEOUTS_MS, PluginLifecycle, type PhaseTimeouts } from './lifecycle.js';
import { KernelLogger } from './log.js';
import { runMigrations } from './migrations.js';
import { WebhookNotifier } from './notifier.js';
import { Scheduler, systemClock } from './scheduler.js';
import { checkTopLevelKeys, configurationOwners, configValue, pluginConfiguration } from './plugin-config.js';
import { activationSet, checkExtensionDeclarations, discoverPlugins, extendersSet, onDemandSet, type DiscoveredPlugin } from './plugins.js';
import { GuardedQueryRunner } from './query-runner.js';
import { EnvSecretsStore } from './secrets.js';
import { WriteLock } from './write-lock.js';
import { DatabaseHandle } from './app/database-handle.js';
import { ExtensionPoints } from './app/extension-points.js';
import { Services } from './app/services.js';
import { pluginContext } from './app/plugin-context.js';
import { checkManifestRoutes } from './app/route-checks.js';
import type { DrainHost } from './app/drain.js';
import { runMaintenance, type MaintenanceOptions } from './app/maintenance.js';
import { shutDown, type ShutdownOptions } from './app/shutdown.js';

export { CATALOG_CHANGED };
export { DEFAULT_DRAIN_MS } from './app/drain.js';
export type { MaintenanceOptions } from './app/maintenance.js';

/** The kernel's hooks (the query path, fired by the kernel only): their tappers guard every command. */
const QUERY_GUARD_HOOKS: ReadonlySet<string> = new Set(HOOK_NAMES);

export interface RegisteredRoute extends RouteDefinition {
  plugin: string;
}

/** A WebSocket, SSE or static route (sdk/routes.ts), kept apart so `routes` stays the JSON handlers. */
export type RegisteredNonJsonRoute = (WebSocketRouteDefinition | SseRouteDefinition | StaticRouteDefinition) & { plugin: string };

export interface BootOptions {
  projectRoot: string;
  env?: string | null;
  serving?: boolean;
  auth?: boolean;
  /** Override of the built-in plugins folder (tests). */
  builtInPluginsDir?: string;
  /**
   * Whether plugins may start work on the wall clock (cron schedules, periodic re-reads): true
   * only for `dp serve` without --no-scheduler. Test servers leave it off unless the test is about time.
   */
  scheduler?: boolean;
  /**
   * Activation on demand: the plugins whose command runs (a one-shot CLI command). Only they, the
   * query guards and what they act through or look up are imported and set up (kernel/plugins.ts
   * activationSet); absent, every enabled plugin loads (`dp serve`, tests).
   */
  activate?: string[];
  /** Per-plugin deadline of each lifecycle phase, in ms (defaults: start 30 s, beforeStop and stop 10 s). */
  phaseTimeoutsMs?: Partial<PhaseTimeouts>;
  /** The scheduler's, the query deadlines' and the plugins' clock (ctx.clock; a test about time moves one it owns); the system clock by default. */
  clock?: Clock;
}

export { commandKey } from './app/plugin-context.js';

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
  /** project.yml and .env, live: reads, subscriptions, owners' edits, change announcements. */
  liveConfig!: LiveConfig;
  auth!: AuthProvider;
  readonly routes: RegisteredRoute[] = [];
  readonly nonJsonRoutes: RegisteredNonJsonRoute[] = [];
  readonly commands = new Map<string, { plugin: string; handler: CommandHandler }>();
  /** Every enabled plugin, in setup order (manifests: what the project offers, loaded or not). */
  plugins: DiscoveredPlugin[] = [];
  /** The enabled plugins whose code this process imported and set up (all of them unless BootOptions.activate). */
  loadedPlugins: DiscoveredPlugin[] = [];
  disabledPlugins: DiscoveredPlugin[] = [];
  private readonly migrations: MigrationSet[] = [];
  /** One write lock for every file this app opens, so a queued writer survives an environment switch. */
  private readonly writeLock = new WriteLock();
  readonly lifecycle: PluginLifecycle;
  /** Set while the app refuses new work (maintenance, shutdown): HTTP answers it as a 503. */
  private refusal: DpError | null = null;
  private hookRegistry!: HookRegistry;
  private extensionPoints!: ExtensionPoints;
  /** The config refs each plugin's definePlugin() declared, for revalidation on an environment switch. */
  private readonly configRefs = new Map<string, ReadonlyArray<ConfigRef>>();
  /** Each enabled plugin's validated part of project.yml, by key. */
  private pluginConfig = new Map<string, unknown>();
  /** Top-level key → the installed plugin that declares it. */
  private configOwners = new Map<string, string>();
  readonly serving: boolean;
  /** Whether the scheduler runs: `dp serve` without --no-scheduler (BootOptions.scheduler). */
  readonly scheduling: boolean;
  readonly scheduler: Scheduler;
  /** BootOptions.clock, or the system clock: the scheduler's and the plugins' (ctx.clock). */
  readonly clock: Clock;
  readonly notifier = new WebhookNotifier();
  authEnabled: boolean;

  private constructor(private readonly options: BootOptions) {
    this.serving = options.serving ?? false;
    this.authEnabled = options.auth ?? false;
    // JSON lines for the server (log collectors), readable lines for a person at the CLI.
    this.log = new KernelLogger('kernel', () => Object.values(this.project?.envVars ?? {}), { human: !this.serving });
    this.lifecycle = new PluginLifecycle({ ...DEFAULT_PHASE_TIMEOUTS_MS, ...(options.phaseTimeoutsMs ?? {}) }, this.log.child('lifecycle'));
    this.scheduling = this.serving && (options.scheduler ?? false);
    this.clock = options.clock ?? systemClock;
    this.scheduler = new Scheduler(this.log.child('scheduler'), this.clock);
    // Schedules fire only once every plugin has started, and stop before any plugin stops.
    this.lifecycle.around('afterStart', () => (this.scheduling ? this.scheduler.start() : undefined));
    this.lifecycle.around('beforeStop', () => this.scheduler.stop());
    this.services = new Services();
    this.queries = new GuardedQueryRunner(this.db, this.hooks, () => this.project.config, this.log.child('query'), undefined, this.clock);
  }

  /** Loads the project and every enabled plugin's setup; the database opens on first use. */
  static async boot(options: BootOptions): Promise<App> {
    const app = new App(options);
    app.project = loadProject(options.projectRoot, options.env ?? null);
    for (const v of app.project.unresolvedVars) (app.serving ? app.log.warn : app.log.debug).call(app.log, `project.yml references \${${v}}, which .env does not define`);
    app.liveConfig = new LiveConfig({
      current: () => ({ project: app.project, values: app.pluginConfig }),
      install: (next) => {
        app.project = next.project;
        app.pluginConfig = next.values;
      },
      validate: (project) => app.validatePluginConfig(project),
      ownerOf: (key) => app.configOwners.get(key),
      restartReasonOf: (key) => [...app.configRefs.values()].flat().find((r) => r.key === key)?.restartRequired,
      events: app.events,
      log: app.log.child('config'),
      follow: app.serving,
    });
    app.secrets = new EnvSecretsStore(app.project.root, () => app.liveConfig.reload('secrets'));
    app.liveConfig.watch();
    app.openDatabase();
    app.auth = createAuth(app);
    const { enabled, disabled } = discoverPlugins({
      projectRoot: app.project.root,
      paths: app.project.config.plugins.paths,
      disable: app.project.config.plugins.disable,
      builtInDir: options.builtInPluginsDir,
    });
    app.plugins = enabled;
    app.disabledPlugins = disabled;
    const installed = [...enabled, ...disabled];
    const fileOf = (name: string) => installed.find((p) => p.manifest.name === name)!.manifestPath;
    const owners = configurationOwners(installed.map((p) => p.manifest), fileOf);
    app.configOwners = owners;
    checkTopLevelKeys(app.project, owners);
    checkHookDeclarations(enabled.map((p) => p.manifest), installed.map((p) => p.manifest), fileOf);
    checkExtensionDeclarations(enabled.map((p) => p.manifest), installed.map((p) => p.manifest), fileOf);
    app.services.declare(disabled.map((p) => p.manifest), false);
    app.services.declare(enabled.map((p) => p.manifest), true);
    app.hookRegistry = new HookRegistry(app.hooks, enabled.map((p) => p.manifest), disabled.map((p) => p.manifest));
    const loaded = options.activate ? activationSet(enabled.map((p) => p.manifest), options.activate, QUERY_GUARD_HOOKS) : null;
    app.loadedPlugins = loaded ? enabled.filter((p) => loaded.has(p.manifest.name)) : enabled;
    const notLoaded = enabled.filter((p) => !app.loadedPlugins.includes(p));
    // The extension points of a plugin not loaded keep what they are given until it loads on demand.
    app.extensionPoints = new ExtensionPoints(disabled.map((p) => p.manifest), notLoaded.map((p) => p.manifest));
    if (loaded) app.services.loadPluginsWith((name) => app.loadOnDemand(name), (name) => app.loadedPlugins.some((p) => p.manifest.name === name));
    for (const p of app.loadedPlugins) await app.loadPlugin(p);
    app.extensionPoints.close();
    checkManifestRoutes(app.plugins, app.loadedPlugins, [...app.routes, ...app.nonJsonRoutes]);
    return app;
  }

  /** Loads on demand, one at a time, each plugin (or extension point's extenders) at most once (its failure stays its answer). */
  private readonly onDemandLoads = new Map<string, Promise<void>>();
  private onDemandQueue: Promise<unknown> = Promise.resolve();

  /**
   * Loads an enabled plugin a one-shot command did not load at boot, and what it looks up at
   * once (a first `ctx.services.load` of its service).
   */
  private loadOnDemand(plugin: string): Promise<void> {
    return this.loadLate(`plugin:${plugin}`, (loaded) => onDemandSet(this.plugins.map((p) => p.manifest), plugin, loaded));
  }

  /**
   * Loads the extenders of an on-demand extension point a one-shot command did not load at boot
   * (its owner's `ctx.loadExtensions`), with what they act through and look up.
   */
  private loadExtenders(point: string): Promise<void> {
    if (this.loadedPlugins === this.plugins) return Promise.resolve();
    return this.loadLate(`extends:${point}`, (loaded) => extendersSet(this.plugins.map((p) => p.manifest), point, loaded, QUERY_GUARD_HOOKS));
  }

  /**
   * Loads the plugins `namesOf` picks (given those loaded already) like a boot would have: setup
   * in setup order, then migrations and the start phase right away when the database is open.
   */
  private loadLate(key: string, namesOf: (loaded: ReadonlySet<string>) => Set<string>): Promise<void> {
    let loading = this.onDemandLoads.get(key);
    if (!loading) {
      loading = this.onDemandQueue.then(async () => {
        const names = namesOf(new Set(this.loadedPlugins.map((p) => p.manifest.name)));
        const batch = this.plugins.filter((p) => names.has(p.manifest.name));
        if (!batch.length) return;
        const migrationsBefore = this.migrations.length;
        this.extensionPoints.reopen(batch.map((p) => p.manifest));
        for (const p of batch) {
          await this.loadPlugin(p);
          this.loadedPlugins = this.plugins.filter((q) => q === p || this.loadedPlugins.includes(q));
        }
        this.extensionPoints.close();
        checkManifestRoutes(this.plugins, this.loadedPlugins, [...this.routes, ...this.nonJsonRoutes]);
        if (this.database.isOpen && this.migrations.length > migrationsBefore) await runMigrations(this.db, this.migrations.slice(migrationsBefore));
        await this.lifecycle.startLate(batch.map((p) => p.manifest.name));
      });
      this.onDemandLoads.set(key, loading);
      this.onDemandQueue = loading.catch(() => {});
    }
    return loading;
  }

  /** The file opens lazily; when it does, migrations run and then the plugins' start phase. */
  private openDatabase(): void {
    this.database = new DuckDatabase(databaseFile(this.project), {
      // The engine may touch the project folder only (plus its own file, WAL and temp folder).
      sandbox: { allowedDirectories: [this.project.root], memoryLimit: configuredMemoryLimit() },
      lock: this.writeLock,
      onWrite: (statement) => this.events.emit(CATALOG_CHANGED, { statement }),
    });
    this.database.onOpen = async (db) => {
      await runMigrations(db, this.migrations);
      await this.lifecycle.start();
    };
  }

  /** Connections the database port has lent right now (queries, streams, transforms). */
  lentConnections(): number {
    return this.database.lentCount;
  }

  /**
   * A plugin's hook point by ref or name, to fire or tap from kernel tools and tests (plugins go
   * through ctx.hook and ctx.tap); undefined when no enabled plugin declares it.
   */
  hookPoint<A extends unknown[], R>(point: HookRef<A, R> | string): HookPointHandle<A, R> | undefined {
    return this.hookRegistry.point(typeof point === 'string' ? point : point.id) as HookPointHandle<A, R> | undefined;
  }

  /** The 503 the app answers while it refuses new work, or null. */
  get unavailable(): DpError | null {
    return this.refusal;
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
    this.configRefs.set(p.manifest.name, def.config ?? []);
    for (const [key, value] of pluginConfiguration(p.manifest, def.config ?? [], this.project)) this.pluginConfig.set(key, value);
    await def.setup(this.contextFor(p.manifest));
  }

  /** A plugin's validated part of project.yml, by key (tests and kernel tools; plugins use ctx.config()). */
  configOf(key: string): unknown {
    if (!this.pluginConfig.has(key)) throw new DpError(500, 'unknown_configuration', `No enabled plugin owns project.yml key '${key}'`, { key });
    return configValue(this.pluginConfig.get(key));
  }

  /** Validates every enabled plugin's part of a (re)loaded project before it replaces the current one. */
  private validatePluginConfig(project: LoadedProject): Map<string, unknown> {
    const all = [...this.plugins, ...this.disabledPlugins];
    const owners = configurationOwners(all.map((p) => p.manifest), (name) => all.find((p) => p.manifest.name === name)!.manifestPath);
    checkTopLevelKeys(project, owners);
    const out = new Map<string, unknown>();
    for (const p of this.loadedPlugins) for (const [k, v] of pluginConfiguration(p.manifest, this.configRefs.get(p.manifest.name) ?? [], project)) out.set(k, v);
    return out;
  }

  /** The context a plugin sees: everything goes through the sdk's interfaces (app/plugin-context.ts). */
  contextFor(manifest: PluginManifest): PluginContext {
    return pluginContext(this, {
      hooks: () => this.hookRegistry,
      extensionPoints: () => this.extensionPoints,
      loadExtenders: (point) => this.loadExtenders(point),
      addMigration: (set) => this.migrations.push(set),
      addRoute: (plugin, def) => this.addRoute(plugin, def),
    }, manifest);
  }

  private addRoute(plugin: string, def: Parameters<PluginContext['route']>[0]): void {
    if (def.kind === 'websocket' || def.kind === 'sse' || def.kind === 'static') this.nonJsonRoutes.push({ ...def, plugin });
    else this.routes.push({ ...def, plugin });
  }

  /** Opens the database, which runs the migrations and the plugins' start phase (see openDatabase). */
  async start(): Promise<void> {
    await this.db.value('SELECT 1');
    // Already open (a plugin touched it during setup): the start phase still has to run.
    await this.lifecycle.start();
  }

  /** What maintenance and shutdown act on (app/drain.ts), over the app's private state. */
  private drainHost(): DrainHost {
    const app = this;
    return {
      log: app.log,
      lifecycle: app.lifecycle,
      database: () => app.database,
      get refusal() {
        return app.refusal;
      },
      set refusal(value) {
        app.refusal = value;
      },
    };
  }

  /** Closes the database for `fn` while the app stays up, then reopens it (app/maintenance.ts). */
  async maintenance<T>(reason: string, fn: (file: { path: string }) => Promise<T> | T, options: MaintenanceOptions = {}): Promise<T> {
    const host = Object.assign(this.drainHost(), {
      writeLock: this.writeLock,
      reopen: async () => {
        this.openDatabase();
        await this.start();
      },
    });
    return runMaintenance(host, reason, fn, options);
  }

  /** Switches the active environment through maintenance: the other file opens, migrates and starts. */
  async switchEnvironment(name: string): Promise<void> {
    const next = loadProject(this.project.root, name);
    // Refused before maintenance begins: a bad configuration of the other environment changes nothing.
    const nextConfig = this.validatePluginConfig(next);
    await this.maintenance(`switching to environment '${name}'`, () => {
      this.project = next;
      this.pluginConfig = nextConfig;
      writeActiveEnv(this.project.root, name);
    });
  }

  /** Shuts down: new work refused, plugins stopped around a drain, the database closed (app/shutdown.ts). */
  async close(options: ShutdownOptions = {}): Promise<void> {
    await shutDown(Object.assign(this.drainHost(), { queries: this.queries, liveConfig: this.liveConfig, auth: this.auth }), options);
  }
}
