import { requireBundled } from '../sdk/bundled.js';
import { DpError } from '../sdk/errors.js';
import { HOOK_NAMES, KERNEL_HOOKS, type FireableHook, type HookKind, type HookName, type HookTarget, type KernelHooks } from '../sdk/hooks.js';
import type { PluginManifest } from '../sdk/plugin.js';

// tapable's 15 CommonJS modules as the build's one-file bundle (dist/vendor/tapable.cjs): every process loads them.
const { AsyncSeriesBailHook, AsyncSeriesHook } = requireBundled<typeof import('tapable')>(import.meta.url, '../vendor/tapable.cjs', 'tapable').module;

type AnyHook = {
  tapPromise(options: { name: string; stage?: number }, fn: (...args: unknown[]) => Promise<unknown>): void;
  promise(...args: unknown[]): Promise<unknown>;
  isUsed(): boolean;
};

function newHook(kind: HookKind, args: readonly string[]): AnyHook {
  const Hook = kind === 'bail' ? AsyncSeriesBailHook : AsyncSeriesHook;
  return new Hook([...args] as never) as unknown as AnyHook;
}

/** The kernel's hook points, one tapable object per entry of KERNEL_HOOKS, frozen. */
export function createHooks(): KernelHooks {
  const hooks: Record<string, AnyHook> = {};
  for (const name of HOOK_NAMES) hooks[name] = newHook(KERNEL_HOOKS[name].kind, KERNEL_HOOKS[name].args);
  return Object.freeze(hooks) as unknown as KernelHooks;
}

export function isKernelHook(name: string): name is HookName {
  return Object.prototype.hasOwnProperty.call(KERNEL_HOOKS, name);
}

const idOf = (target: HookTarget): string => (typeof target === 'string' ? target : target.id);

/** The hook point of a disabled plugin, fired by another: nobody can tap it. */
const NOBODY_LISTENS = Object.freeze({ promise: async () => undefined, isUsed: () => false });

/** A hook point as kernel tools and tests hold it: fire it, tap it, ask whether anyone listens. */
export interface HookPointHandle<A extends unknown[] = any[], R = unknown> {
  promise(...args: A): Promise<R | undefined>;
  tapPromise(options: string | { name: string; stage?: number }, fn: (...args: A) => Promise<R | void | undefined>): void;
  isUsed(): boolean;
}

/**
 * Who may tap and fire which hook. Kernel hooks (the query path) come from KERNEL_HOOKS; every
 * other hook point from the manifest of the plugin that owns it (created before any setup runs,
 * so the order plugins set up in does not matter). A plugin taps only what its manifest lists
 * under `hooks` and fires only its own hook points and those it lists under `fires`.
 */
export class HookRegistry {
  private readonly pluginPoints = new Map<string, { owner: string; hook: AnyHook }>();
  /** Hook points of disabled plugins: tapping one is a no-op, like an absent optional service. */
  private readonly absentPoints = new Set<string>();

  constructor(
    readonly kernel: KernelHooks,
    enabled: PluginManifest[],
    disabled: PluginManifest[],
  ) {
    for (const m of enabled) {
      for (const p of m.contributes?.hookPoints ?? []) this.pluginPoints.set(p.name, { owner: m.name, hook: newHook(p.kind, p.args ?? []) });
    }
    for (const m of disabled) for (const p of m.contributes?.hookPoints ?? []) this.absentPoints.add(p.name);
  }

  private lookup(name: string): AnyHook | undefined {
    if (isKernelHook(name)) return this.kernel[name] as unknown as AnyHook;
    return this.pluginPoints.get(name)?.hook;
  }

  /** A plugin's hook point, or undefined when no enabled plugin declares it (kernel tools and tests; plugins go through tap and fireable). */
  point(name: string): HookPointHandle | undefined {
    return this.pluginPoints.get(name)?.hook as unknown as HookPointHandle | undefined;
  }

  tap(manifest: PluginManifest, target: HookTarget, fn: (...args: unknown[]) => Promise<unknown>, stage = 0): void {
    const name = idOf(target);
    if (!(manifest.contributes?.hooks ?? []).includes(name)) {
      throw new DpError(500, 'undeclared_hook', `Plugin '${manifest.name}' taps '${name}' without declaring it in contributes.hooks`, { plugin: manifest.name, hook: name });
    }
    const hook = this.lookup(name);
    if (hook) return hook.tapPromise({ name: manifest.name, stage }, fn);
    if (this.absentPoints.has(name)) return;
    throw new DpError(500, 'unknown_hook', `Plugin '${manifest.name}' taps '${name}', which neither the kernel nor an installed plugin declares`, { plugin: manifest.name, hook: name });
  }

  fireable(manifest: PluginManifest, target: HookTarget): FireableHook<HookTarget> {
    const name = idOf(target);
    const owned = this.pluginPoints.get(name)?.owner === manifest.name;
    if (!owned && !(manifest.contributes?.fires ?? []).includes(name)) {
      throw new DpError(500, 'undeclared_fire', `Plugin '${manifest.name}' fires '${name}' without declaring it in contributes.fires`, { plugin: manifest.name, hook: name });
    }
    const hook = this.lookup(name);
    if (!hook && this.absentPoints.has(name)) return NOBODY_LISTENS as FireableHook<HookTarget>;
    if (!hook) {
      throw new DpError(500, 'unknown_hook', `Plugin '${manifest.name}' fires '${name}', which neither the kernel nor an enabled plugin declares`, { plugin: manifest.name, hook: name });
    }
    return Object.freeze({ promise: (...args: unknown[]) => hook.promise(...args), isUsed: () => hook.isUsed() }) as unknown as FireableHook<HookTarget>;
  }
}

/**
 * Boot-time checks of the hook declarations in the manifests, so a wrong name fails before any
 * plugin code runs: own hook points are named `<plugin>.<point>` and declared once; `hooks` names
 * a kernel hook or an installed plugin's hook point; `fires` names an installed plugin's hook
 * point (only the kernel fires its own hooks). Like an extension point, a hook point needs no
 * dependency on its owner: the hook exists before any setup, and a disabled owner's point
 * reaches nobody.
 */
export function checkHookDeclarations(enabled: PluginManifest[], installed: PluginManifest[], file: (name: string) => string): void {
  const owners = new Map<string, string>();
  for (const m of installed) {
    for (const p of m.contributes?.hookPoints ?? []) {
      if (!p.name.startsWith(`${m.name}.`)) {
        throw new DpError(500, 'invalid_plugin_manifest', `${file(m.name)}: hook point '${p.name}' must be named '${m.name}.<point>'`, { field: 'contributes.hookPoints' });
      }
      const prior = owners.get(p.name);
      if (prior) throw new DpError(500, 'invalid_plugin_manifest', `${file(m.name)}: hook point '${p.name}' is already declared by plugin '${prior}'`, { field: 'contributes.hookPoints' });
      owners.set(p.name, m.name);
    }
  }
  for (const m of enabled) {
    const check = (name: string, field: 'hooks' | 'fires') => {
      if (isKernelHook(name)) {
        if (field === 'fires') throw new DpError(500, 'invalid_plugin_manifest', `${file(m.name)}: contributes.fires lists '${name}', which only the kernel fires`, { field: 'contributes.fires' });
        return;
      }
      if (!owners.has(name)) {
        throw new DpError(500, 'invalid_plugin_manifest', `${file(m.name)}: contributes.${field} lists '${name}', which neither the kernel nor an installed plugin declares`, {
          field: `contributes.${field}`,
        });
      }
    };
    for (const h of m.contributes?.hooks ?? []) check(h, 'hooks');
    for (const h of m.contributes?.fires ?? []) check(h, 'fires');
  }
}
