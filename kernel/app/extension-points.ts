/** Extension points behind ctx.provideExtensionPoint and ctx.extend. */
import { DpError } from '../../sdk/errors.js';
import type { PluginManifest } from '../../sdk/plugin.js';
import { refId, type RefLike } from './services.js';

/** Extension points: declared by their owner, extended by plugins that list them under `extends`, closed after setup. */
export class ExtensionPoints {
  private readonly accepts = new Map<string, (contribution: unknown, from: string) => void>();
  /** Extension points of disabled plugins: extending one is a no-op. */
  private readonly absent = new Set<string>();
  private closed = false;

  constructor(absent: PluginManifest[]) {
    for (const m of absent) for (const e of m.contributes?.extensionPoints ?? []) this.absent.add(e);
  }

  provide(owner: PluginManifest, ref: RefLike, accept: (contribution: unknown, from: string) => void): void {
    const name = refId(ref);
    if (!(owner.contributes?.extensionPoints ?? []).includes(name)) {
      throw new DpError(500, 'undeclared_extension_point', `Plugin '${owner.name}' offers extension point '${name}' without declaring it`);
    }
    if (this.accepts.has(name)) throw new DpError(500, 'duplicate_extension_point', `Extension point '${name}' is offered twice`);
    this.accepts.set(name, accept);
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
    throw new DpError(500, 'unknown_extension_point', `Plugin '${plugin.name}' extends '${name}', which no enabled plugin offers (add its plugin to 'requires')`);
  }

  close(): void {
    this.closed = true;
  }
}
