/** The service registry behind ctx.services. */
import { DpError } from '../../sdk/errors.js';
import type { PluginManifest } from '../../sdk/plugin.js';
import { declaredDependencies } from '../plugins.js';

/** A ref, or its id string (plain JavaScript plugins). */
export type RefLike = { id: string } | string;
export const refId = (ref: RefLike): string => (typeof ref === 'string' ? ref : ref.id);

/**
 * Services by ref. Each service has one provider, the plugin that declares it; a plugin may look
 * up only its own services and those of plugins it lists under `requires` or `optional`.
 */
export class Services {
  private readonly map = new Map<string, unknown>();
  /** Service id → the installed plugin that declares it (enabled or disabled). */
  private readonly owners = new Map<string, { plugin: string; enabled: boolean }>();
  /**
   * Activation on demand: loads an enabled plugin this process has not loaded yet (App.boot sets
   * it for a one-shot command); `isLoaded` tells which are. Absent, every enabled plugin is loaded.
   */
  private onDemand: { load: (plugin: string) => Promise<void>; isLoaded: (plugin: string) => boolean } | null = null;

  /** Records who declares each service; two enabled plugins declaring one service is refused (a disabled one may be replaced). */
  declare(manifests: PluginManifest[], enabled: boolean): void {
    for (const m of manifests) {
      for (const s of m.contributes?.services ?? []) {
        const prior = this.owners.get(s);
        if (enabled && prior?.enabled && prior.plugin !== m.name) {
          throw new DpError(500, 'duplicate_service', `Service '${s}' is declared by two enabled plugins: '${prior.plugin}' and '${m.name}'`, { service: s, plugins: [prior.plugin, m.name] });
        }
        this.owners.set(s, { plugin: m.name, enabled });
      }
    }
  }

  loadPluginsWith(load: (plugin: string) => Promise<void>, isLoaded: (plugin: string) => boolean): void {
    this.onDemand = { load, isLoaded };
  }

  /** The enabled plugin that declares a service and is not loaded in this process, if any. */
  private notLoadedOwner(name: string): string | undefined {
    const owner = this.owners.get(name);
    return owner?.enabled && this.onDemand && !this.onDemand.isLoaded(owner.plugin) ? owner.plugin : undefined;
  }

  /**
   * A synchronous lookup of a service whose plugin loads on demand and has not yet: refused, so
   * a caller cannot take "not loaded" for "not installed" (masking would skip its derived policies).
   */
  private refuseNotLoaded(name: string): void {
    const plugin = this.notLoadedOwner(name);
    if (!plugin) return;
    throw new DpError(500, 'service_not_loaded', `Service '${name}' of plugin '${plugin}' is not loaded in this command: look it up with await ctx.services.load(...)`, {
      service: name,
      plugin,
    });
  }

  provideFor(plugin: PluginManifest, ref: RefLike, service: unknown): void {
    const name = refId(ref);
    if (!(plugin.contributes?.services ?? []).includes(name)) {
      throw new DpError(500, 'undeclared_service', `Plugin '${plugin.name}' provides service '${name}' without declaring it in contributes.services`);
    }
    if (this.map.has(name)) throw new DpError(500, 'duplicate_service', `Service '${name}' is provided twice`);
    this.map.set(name, service);
  }

  /** Refuses a lookup of a service whose plugin the caller does not declare as a dependency. */
  private checkDependency(caller: PluginManifest, name: string): void {
    const owner = this.owners.get(name);
    if (!owner || owner.plugin === caller.name) return;
    if (declaredDependencies(caller).has(owner.plugin)) return;
    throw new DpError(500, 'undeclared_dependency', `Plugin '${caller.name}' uses service '${name}' of plugin '${owner.plugin}' without listing '${owner.plugin}' under requires or optional`, {
      plugin: caller.name,
      service: name,
      owner: owner.plugin,
    });
  }

  get<T>(ref: RefLike, caller?: PluginManifest): T {
    const name = refId(ref);
    if (caller) this.checkDependency(caller, name);
    const s = this.map.get(name);
    if (s === undefined) this.refuseNotLoaded(name);
    if (s === undefined) {
      const owner = this.owners.get(name);
      const by = owner && !owner.enabled ? owner.plugin : undefined;
      throw new DpError(404, 'service_unavailable', by ? `Service '${name}' is unavailable: plugin '${by}' is disabled` : `Service '${name}' is not provided by any enabled plugin`, {
        service: name,
      });
    }
    return s as T;
  }

  find<T>(ref: RefLike, caller?: PluginManifest): T | undefined {
    const name = refId(ref);
    if (caller) this.checkDependency(caller, name);
    if (!this.map.has(name)) this.refuseNotLoaded(name);
    return this.map.get(name) as T | undefined;
  }

  /** Like find, but first loads the service's enabled plugin when this process has not (activation on demand). */
  async load<T>(ref: RefLike, caller?: PluginManifest): Promise<T | undefined> {
    const name = refId(ref);
    if (caller) this.checkDependency(caller, name);
    const plugin = this.map.has(name) ? undefined : this.notLoadedOwner(name);
    if (plugin) await this.onDemand!.load(plugin);
    return this.find<T>(ref, caller);
  }
}
