/** Extension points behind ctx.provideExtensionPoint and ctx.extend. */
import { DpError } from '../../sdk/errors.js';
import type { PluginManifest } from '../../sdk/plugin.js';
import { refId, type RefLike } from './services.js';

/**
 * Extension points: declared by their owner, extended by plugins that list them under `extends`,
 * closed after setup. A contribution needs no setup order: one that arrives before its owner
 * offers the point waits for it (so a plugin the owner reads, such as models for agents, can
 * still contribute to it without a dependency cycle).
 */
export class ExtensionPoints {
  private readonly accepts = new Map<string, (contribution: unknown, from: string) => void>();
  /** Extension points of disabled plugins: extending one is a no-op. */
  private readonly absent = new Set<string>();
  /** Extension points of enabled plugins this process has not loaded (yet): contributions wait for a load on demand. */
  private readonly held = new Set<string>();
  /** Contributions to points of loaded plugins that have not offered them yet, in arrival order. */
  private readonly waiting = new Map<string, Array<{ contribution: unknown; from: string }>>();
  private closed = false;

  constructor(absent: PluginManifest[], notLoaded: PluginManifest[] = []) {
    for (const m of absent) for (const e of m.contributes?.extensionPoints ?? []) this.absent.add(e);
    for (const m of notLoaded) for (const e of m.contributes?.extensionPoints ?? []) this.held.add(e);
  }

  /** Plugins loaded on demand set up like at boot: extension points take contributions until `close`. */
  reopen(loading: PluginManifest[]): void {
    this.closed = false;
    for (const m of loading) for (const e of m.contributes?.extensionPoints ?? []) this.held.delete(e);
  }

  provide(owner: PluginManifest, ref: RefLike, accept: (contribution: unknown, from: string) => void): void {
    const name = refId(ref);
    if (!(owner.contributes?.extensionPoints ?? []).includes(name)) {
      throw new DpError(500, 'undeclared_extension_point', `Plugin '${owner.name}' offers extension point '${name}' without declaring it`);
    }
    if (this.accepts.has(name)) throw new DpError(500, 'duplicate_extension_point', `Extension point '${name}' is offered twice`);
    this.accepts.set(name, accept);
    for (const { contribution, from } of this.waiting.get(name) ?? []) accept(contribution, from);
    this.waiting.delete(name);
  }

  extend(plugin: PluginManifest, ref: RefLike, contribution: unknown): void {
    const name = refId(ref);
    if (!(plugin.contributes?.extends ?? []).includes(name)) {
      throw new DpError(500, 'undeclared_extension', `Plugin '${plugin.name}' extends '${name}' without declaring it in contributes.extends`, { plugin: plugin.name });
    }
    if (this.closed) {
      throw new DpError(500, 'extension_point_closed', `Plugin '${plugin.name}' extends '${name}' after setup: extension points close when every plugin's setup has run`, {
        plugin: plugin.name,
      });
    }
    const accept = this.accepts.get(name);
    if (accept) return accept(contribution, plugin.name);
    if (this.absent.has(name)) return;
    this.waiting.set(name, [...(this.waiting.get(name) ?? []), { contribution, from: plugin.name }]);
  }

  /** Ends setup: a contribution still waiting names a point its (loaded) owner never offered. */
  close(): void {
    this.closed = true;
    for (const [name, contributions] of this.waiting) {
      if (this.held.has(name)) continue;
      const plugin = contributions[0]!.from;
      throw new DpError(500, 'unknown_extension_point', `Plugin '${plugin}' extends '${name}', which its plugin declares but never offers in setup`, { plugin });
    }
  }
}
