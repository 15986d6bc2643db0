import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { badRequest, DpError } from '../sdk/errors.js';
import { ajvFieldError } from '../sdk/project-files.js';
import type { PluginManifest } from '../sdk/plugin.js';
import { validateManifest } from './validators.generated.js';

/** The repository root (kernel/ compiles to dist/kernel/, so two levels up from there). */
export const REPO_ROOT = (() => {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const up = path.resolve(here, '..');
  return path.basename(up) === 'dist' ? path.resolve(up, '..') : up;
})();
export const BUILTIN_PLUGINS_DIR = path.join(REPO_ROOT, 'plugins');
const DIST = path.join(REPO_ROOT, 'dist');

export interface DiscoveredPlugin {
  manifest: PluginManifest;
  dir: string;
  manifestPath: string;
  /** The module to import (compiled .js). */
  entryFile: string;
}

function manifestError(file: string, message: string, details: Record<string, unknown> = {}): DpError {
  return new DpError(500, 'invalid_plugin_manifest', `${file}: ${message}`, { file, ...details });
}

/**
 * Manifest texts this process has validated already: a CLI command discovers the plugins twice
 * (for its commands, then in App.boot), and a text that passed once passes again. Each read
 * still parses its own copy, so no caller shares a manifest object with another.
 */
const validatedManifests = new Set<string>();

/** Reads and validates one plugin.json; errors name the file and the field. */
export function readManifest(manifestPath: string): PluginManifest {
  let text: string;
  let data: unknown;
  try {
    text = fs.readFileSync(manifestPath, 'utf8');
    data = JSON.parse(text);
  } catch (e) {
    throw manifestError(manifestPath, `not valid JSON (${(e as Error).message})`);
  }
  if (validatedManifests.has(text)) return data as PluginManifest;
  const validate = validateManifest;
  if (!validate(data)) {
    const err = validate.errors![0];
    const params = err.params as Record<string, string>;
    const { field } = ajvFieldError(err);
    const extra = params.allowedValues ? ` (one of: ${(params.allowedValues as unknown as string[]).join(', ')})` : '';
    throw manifestError(manifestPath, `field '${field || '(root)'}' ${err.message}${extra}`, { field: field || null });
  }
  validatedManifests.add(text);
  return data as PluginManifest;
}

/** Maps a manifest entry to the module that runs: compiled .js under dist/ for TypeScript sources. */
function resolveEntry(dir: string, entry: string, manifestPath: string): string {
  const asJs = entry.replace(/\.ts$/, '.js');
  const direct = path.resolve(dir, asJs);
  const rel = path.relative(REPO_ROOT, dir);
  const compiled = !rel.startsWith('..') && !path.isAbsolute(rel) ? path.join(DIST, rel, asJs) : null;
  if (compiled && fs.existsSync(compiled)) return compiled;
  if (fs.existsSync(direct)) return direct;
  throw manifestError(manifestPath, `field 'entry' names '${entry}', which does not exist${compiled ? ` (looked for ${compiled} too: run 'npm run build')` : ''}`, {
    field: 'entry',
  });
}

function discoverIn(folder: string, out: DiscoveredPlugin[], single = false): void {
  if (!fs.existsSync(folder)) throw badRequest('plugin_path_not_found', `Plugin path '${folder}' does not exist`, { path: folder });
  const dirs = single || fs.existsSync(path.join(folder, 'plugin.json')) ? [folder] : fs.readdirSync(folder).map((d) => path.join(folder, d)).sort();
  for (const dir of dirs) {
    const manifestPath = path.join(dir, 'plugin.json');
    if (!fs.existsSync(manifestPath)) continue;
    const manifest = readManifest(manifestPath);
    out.push({ manifest, dir, manifestPath, entryFile: resolveEntry(dir, manifest.entry, manifestPath) });
  }
}

/**
 * Discovers built-in plugins and those under `plugins.paths`, drops disabled ones, and orders
 * the rest so each plugin loads after the plugins it requires.
 */
export function discoverPlugins(options: { projectRoot: string; paths: string[]; disable: string[]; builtInDir?: string }): {
  enabled: DiscoveredPlugin[];
  disabled: DiscoveredPlugin[];
} {
  const all: DiscoveredPlugin[] = [];
  discoverIn(options.builtInDir ?? BUILTIN_PLUGINS_DIR, all);
  for (const p of options.paths) discoverIn(path.resolve(options.projectRoot, p), all);

  const byName = new Map<string, DiscoveredPlugin>();
  for (const p of all) {
    const prior = byName.get(p.manifest.name);
    if (prior) {
      throw manifestError(p.manifestPath, `field 'name': plugin '${p.manifest.name}' is already defined by ${prior.manifestPath}`, { field: 'name' });
    }
    byName.set(p.manifest.name, p);
  }
  const disabledNames = new Set(options.disable);
  for (const name of disabledNames) {
    if (!byName.has(name)) throw badRequest('unknown_plugin', `project.yml plugins.disable names '${name}', which is not an installed plugin`, { plugin: name });
  }
  const enabled = all.filter((p) => !disabledNames.has(p.manifest.name));
  const disabled = all.filter((p) => disabledNames.has(p.manifest.name));

  for (const p of enabled) {
    const dependencies = declaredDependencies(p.manifest);
    for (const name of p.manifest.onDemand ?? []) {
      if (!dependencies.has(name)) throw manifestError(p.manifestPath, `field 'onDemand' lists '${name}', which is under neither requires nor optional`, { field: 'onDemand' });
    }
    for (const req of p.manifest.requires ?? []) {
      if (!byName.has(req)) {
        throw new DpError(500, 'missing_plugin', `Plugin '${p.manifest.name}' requires plugin '${req}', which is not installed`, { plugin: p.manifest.name, requires: req });
      }
      if (disabledNames.has(req)) {
        throw new DpError(500, 'missing_plugin', `Plugin '${p.manifest.name}' requires plugin '${req}', which project.yml disables: disable '${p.manifest.name}' too or enable '${req}'`, {
          plugin: p.manifest.name,
          requires: req,
        });
      }
    }
  }

  // Topological order (stable: alphabetical among ready plugins); an enabled optional
  // dependency sets up first too, so its extension points and services exist.
  const enabledNames = new Set(enabled.map((p) => p.manifest.name));
  const dependencies = (p: DiscoveredPlugin) => [...(p.manifest.requires ?? []), ...(p.manifest.optional ?? []).filter((o) => enabledNames.has(o))];
  const ordered: DiscoveredPlugin[] = [];
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (p: DiscoveredPlugin, trail: string[]) => {
    const s = state.get(p.manifest.name);
    if (s === 'done') return;
    if (s === 'visiting') {
      throw new DpError(500, 'plugin_cycle', `Plugins depend on each other (requires/optional) in a cycle: ${[...trail, p.manifest.name].join(' -> ')}`, { cycle: [...trail, p.manifest.name] });
    }
    state.set(p.manifest.name, 'visiting');
    for (const dep of dependencies(p)) visit(byName.get(dep)!, [...trail, p.manifest.name]);
    state.set(p.manifest.name, 'done');
    ordered.push(p);
  };
  // Code-unit order: for names of the manifest's alphabet (a-z, 0-9, '-') it is localeCompare's,
  // without the ICU collation data the first localeCompare of a process loads (about 11 ms).
  const nameOrder = (a: DiscoveredPlugin, b: DiscoveredPlugin) => (a.manifest.name < b.manifest.name ? -1 : a.manifest.name > b.manifest.name ? 1 : 0);
  for (const p of [...enabled].sort(nameOrder)) visit(p, []);
  return { enabled: ordered, disabled };
}

/** The plugins a manifest may look up services of: `requires` and `optional` (hook and extension points need no dependency). */
export function declaredDependencies(m: PluginManifest): Set<string> {
  return new Set([...(m.requires ?? []), ...(m.optional ?? [])]);
}

/**
 * Boot-time checks of `extends`: each names an extension point an installed plugin declares. The
 * extender needs no dependency on the owner: a contribution waits until its owner offers the
 * point (kernel/app/extension-points.ts), so the owner may read the extender's services.
 */
export function checkExtensionDeclarations(enabled: PluginManifest[], installed: PluginManifest[], file: (name: string) => string): void {
  const owners = new Set<string>();
  for (const m of installed) {
    for (const e of m.contributes?.extensionPoints ?? []) {
      if (!e.startsWith(`${m.name}.`)) {
        throw manifestError(file(m.name), `extension point '${e}' must be named '${m.name}.<name>'`, { field: 'contributes.extensionPoints' });
      }
      owners.add(e);
    }
  }
  for (const m of enabled) {
    for (const e of m.contributes?.extends ?? []) {
      if (!owners.has(e)) throw manifestError(file(m.name), `contributes.extends lists '${e}', which no installed plugin declares`, { field: 'contributes.extends' });
    }
  }
  for (const m of installed) {
    for (const e of m.contributes?.onDemandExtensionPoints ?? []) {
      if (!(m.contributes?.extensionPoints ?? []).includes(e)) {
        throw manifestError(file(m.name), `contributes.onDemandExtensionPoints lists '${e}', which is not under contributes.extensionPoints`, { field: 'contributes.onDemandExtensionPoints' });
      }
    }
  }
}

/**
 * The plugins a one-shot command loads (activation on demand, docs/plugins.md "Activation"):
 *
 * - the command's owner, and the plugins that guard every query: those tapping a kernel hook (the
 *   query path's, `guardHooks`, e.g. masking on interceptQuery), so nothing a command runs skips them;
 * - what these act through: the plugins they `require`, the plugins that contribute to their
 *   extension points, and the plugins that tap the hooks they fire or own (a transform runs
 *   quality's checks, masking applies a third-party method); each of those acts too;
 * - what any loaded plugin may look up: its `requires` and enabled `optional` plugins, loaded for
 *   their services (lineage reads models), with their own requirements; except those it lists
 *   under `onDemand`, which load on its first `ctx.services.load` (`onDemandSet`: masking reads
 *   lineage only when a policy exists).
 *
 * Returns them in `enabled`'s (setup) order. Plugins outside the set are still checked from their
 * manifests (configuration keys, hooks, extension points, routes' permissions) but their code is
 * never imported.
 */
export function activationSet(enabled: PluginManifest[], owners: string[], guardHooks: ReadonlySet<string>): Set<string> {
  const byName = new Map(enabled.map((m) => [m.name, m]));
  const extenders = new Map<string, string[]>();
  const tappers = new Map<string, string[]>();
  for (const m of enabled) {
    for (const e of m.contributes?.extends ?? []) extenders.set(e, [...(extenders.get(e) ?? []), m.name]);
    for (const h of m.contributes?.hooks ?? []) tappers.set(h, [...(tappers.get(h) ?? []), m.name]);
  }
  const acting = new Set<string>();
  const loaded = new Set<string>();
  const act = (name: string) => {
    const m = byName.get(name);
    if (!m || acting.has(name)) return;
    acting.add(name);
    provide(name);
    const later = new Set(m.onDemand ?? []);
    for (const r of m.requires ?? []) if (!later.has(r)) act(r);
    const readLater = new Set(m.contributes?.onDemandExtensionPoints ?? []);
    for (const e of m.contributes?.extensionPoints ?? []) if (!readLater.has(e)) for (const x of extenders.get(e) ?? []) act(x);
    const fired = [...(m.contributes?.fires ?? []), ...(m.contributes?.hookPoints ?? []).map((p) => p.name)];
    for (const h of fired) for (const x of tappers.get(h) ?? []) act(x);
  };
  const provide = (name: string) => provideClosure(byName, name, loaded);
  for (const o of owners) act(o);
  for (const h of guardHooks) for (const x of tappers.get(h) ?? []) act(x);
  return loaded;
}

/**
 * The plugins a first read of the on-demand extension point `point` loads in a process that has
 * `loaded` already: each enabled plugin that extends it, with what it acts through and looks up
 * (as activationSet gives them for a command it owned), so a contributor works as at boot.
 */
export function extendersSet(enabled: PluginManifest[], point: string, loaded: ReadonlySet<string>, guardHooks: ReadonlySet<string>): Set<string> {
  const extenders = enabled.filter((m) => (m.contributes?.extends ?? []).includes(point) && !loaded.has(m.name)).map((m) => m.name);
  const closure = extenders.length ? activationSet(enabled, extenders, guardHooks) : new Set<string>();
  for (const name of loaded) closure.delete(name);
  return closure;
}

/** Adds `name` and what it may look up at once (requires and optional, not its onDemand ones) to `loaded`. */
function provideClosure(byName: Map<string, PluginManifest>, name: string, loaded: Set<string>): void {
  const m = byName.get(name);
  if (!m || loaded.has(name)) return;
  loaded.add(name);
  const later = new Set(m.onDemand ?? []);
  for (const d of [...(m.requires ?? []), ...(m.optional ?? [])]) if (!later.has(d)) provideClosure(byName, d, loaded);
}

/**
 * The plugins a first `ctx.services.load` of `plugin`'s service loads in a process that has
 * `loaded` already: `plugin` and what it may look up at once, as activationSet provides them.
 */
export function onDemandSet(enabled: PluginManifest[], plugin: string, loaded: ReadonlySet<string>): Set<string> {
  const closure = new Set<string>();
  provideClosure(new Map(enabled.map((m) => [m.name, m])), plugin, closure);
  for (const name of loaded) closure.delete(name);
  return closure;
}
