/**
 * The context a plugin sees (sdk PluginContext): everything goes through the sdk's interfaces,
 * each call checked against the plugin's manifest (services, commands, hooks, extension points).
 */
import type { ProjectConfig, ProjectInfo } from '../../sdk/config.js';
import type { DatabasePort, MigrationSet } from '../../sdk/db.js';
import { DpError } from '../../sdk/errors.js';
import type { CommandHandler, PluginContext, PluginManifest, ServiceRef } from '../../sdk/plugin.js';
import type { AuthProvider } from '../auth/index.js';
import type { LoadedProject } from '../config.js';
import type { LiveConfig } from '../config/live.js';
import type { KernelEventBus } from '../events.js';
import type { HookRegistry } from '../hooks.js';
import type { PluginLifecycle } from '../lifecycle.js';
import type { KernelLogger } from '../log.js';
import type { WebhookNotifier } from '../notifier.js';
import type { DiscoveredPlugin } from '../plugins.js';
import type { GuardedQueryRunner } from '../query-runner.js';
import type { Scheduler } from '../scheduler.js';
import type { Clock } from '../../sdk/scheduler.js';
import type { EnvSecretsStore } from '../secrets.js';
import type { ExtensionPoints } from './extension-points.js';
import { refId, type Services } from './services.js';

/** The key of a handler a plugin registers for another plugin's command when `--<option>` is given. */
export function commandKey(command: string, whenOption?: string): string {
  return whenOption ? `${command} --${whenOption}` : command;
}

/** What a plugin context reads from the app, at call time (the project changes on a reload or an environment switch). */
export interface ContextHost {
  readonly project: LoadedProject;
  readonly liveConfig: LiveConfig;
  readonly db: DatabasePort;
  readonly events: KernelEventBus;
  readonly services: Services;
  readonly secrets: EnvSecretsStore;
  readonly queries: GuardedQueryRunner;
  readonly auth: AuthProvider;
  readonly notifier: WebhookNotifier;
  readonly log: KernelLogger;
  readonly serving: boolean;
  readonly scheduling: boolean;
  readonly scheduler: Scheduler;
  readonly clock: Clock;
  readonly plugins: DiscoveredPlugin[];
  readonly commands: Map<string, { plugin: string; handler: CommandHandler }>;
  readonly lifecycle: PluginLifecycle;
  maintenance<T>(reason: string, fn: (file: { path: string }) => Promise<T> | T): Promise<T>;
}

/** The app's registries a context writes to (not part of the app's public face). */
export interface ContextRegistries {
  hooks(): HookRegistry;
  extensionPoints(): ExtensionPoints;
  /** Loads the enabled extenders of an on-demand extension point that this process has not loaded. */
  loadExtenders(point: string): Promise<void>;
  addMigration(set: MigrationSet): void;
  addRoute(plugin: string, def: Parameters<PluginContext['route']>[0]): void;
}

export function pluginContext(app: ContextHost, registries: ContextRegistries, manifest: PluginManifest): PluginContext {
  const declared = manifest.contributes ?? {};
  const log = app.log.child(manifest.name);
  const project: ProjectInfo = {
    get root() {
      return app.project.root;
    },
    get env() {
      return app.project.env;
    },
    get config(): ProjectConfig {
      app.liveConfig.refresh();
      // The kernel's keys only: a plugin reads its own part through ctx.config().
      const { raw: _raw, ...kernelKeys } = app.project.config;
      return kernelKeys;
    },
    resolve: (p: string) => app.project.resolve(p),
    resolveReadable: (p: string) => app.project.resolveReadable(p),
    relative: (p: string) => app.project.relative(p),
    writeFile: (p: string, content: string | Buffer) => app.project.writeFile(p, content),
  };
  return {
    manifest,
    project,
    db: app.db,
    events: app.events,
    services: {
      provide: (ref, service) => app.services.provideFor(manifest, ref, service),
      get: <T>(ref: ServiceRef<T>) => app.services.get<T>(ref, manifest),
      find: <T>(ref: ServiceRef<T>) => app.services.find<T>(ref, manifest),
      load: <T>(ref: ServiceRef<T>) => app.services.load<T>(ref, manifest),
    },
    config: app.liveConfig.forPlugin(manifest),
    secrets: {
      list: () => app.secrets.list(),
      get: (k) => app.secrets.get(k),
      set: (k, v) => app.secrets.set(k, v),
      delete: (k) => app.secrets.delete(k),
    },
    queries: app.queries,
    webhooks: app.auth.webhooks,
    notifier: app.notifier,
    log,
    get env() {
      app.liveConfig.refresh();
      return app.project.envVars;
    },
    serving: app.serving,
    scheduling: app.scheduling,
    scheduler: app.scheduler.forPlugin(manifest.name),
    clock: app.clock,
    localServer: async () => (app.serving ? null : (await import('../remote.js')).localServerFor(app.project.root)),
    enabledPlugins: () => app.plugins.map((p) => ({ manifest: p.manifest, dir: p.dir })),
    route: (def) => registries.addRoute(manifest.name, def),
    command: (path, handler) => {
      const top = path.split(' ')[0];
      if (!(declared.commands ?? []).some((c) => c.command.split(' ')[0] === top)) {
        throw new DpError(500, 'undeclared_command', `Plugin '${manifest.name}' handles command '${path}' without declaring it in contributes.commands`);
      }
      // A handler of another plugin's command, taken only when its option is given (ManifestCommand.whenOption).
      const whenOption = (declared.commands ?? []).find((c) => c.command.split(' ')[0] === top)?.whenOption;
      app.commands.set(whenOption && path === top ? commandKey(top, whenOption) : path, { plugin: manifest.name, handler });
    },
    tap: (hook, fn, options) => registries.hooks().tap(manifest, hook, fn as (...args: unknown[]) => Promise<unknown>, options?.stage ?? 0),
    hook: ((hook) => registries.hooks().fireable(manifest, hook)) as PluginContext['hook'],
    migrate: (steps) => registries.addMigration({ owner: manifest.name, steps }),
    provideExtensionPoint: (ref, accept) => registries.extensionPoints().provide(manifest, ref, accept as (c: unknown, f: string) => void),
    extend: (ref, contribution) => registries.extensionPoints().extend(manifest, ref, contribution),
    loadExtensions: async (ref) => {
      const name = refId(ref);
      if (!(declared.onDemandExtensionPoints ?? []).includes(name)) {
        throw new DpError(500, 'undeclared_extension_point', `Plugin '${manifest.name}' loads the extensions of '${name}', which it does not list under contributes.onDemandExtensionPoints`, { plugin: manifest.name });
      }
      await registries.loadExtenders(name);
    },
    onStart: (fn) => app.lifecycle.register(manifest.name, 'start', fn),
    onBeforeStop: (fn) => app.lifecycle.register(manifest.name, 'beforeStop', fn),
    onStop: (fn) => app.lifecycle.register(manifest.name, 'stop', fn),
    get signal() {
      return app.lifecycle.signal;
    },
    maintenance: (reason, fn) => app.maintenance(reason, fn),
  };
}
