/** Helpers for the seam tests: third-party plugins in plain JavaScript, loaded from plugins.paths. */
import { App } from '../../kernel/app.js';
import { makeProject, tempDir } from '../helpers.js';

export interface TestPlugin {
  name: string;
  manifest?: Record<string, unknown>;
  /** Body of `setup(ctx)`. */
  setup: string;
  /** Extra module-level code (e.g. `export const config = ...`). */
  module?: string;
  /** The `config` of definePlugin, as JavaScript source. */
  config?: string;
}

export function pluginFiles(plugins: TestPlugin[]): Record<string, string> {
  const files: Record<string, string> = {};
  for (const p of plugins) {
    files[`plugins/${p.name}/plugin.json`] = JSON.stringify({ name: p.name, version: '1.0.0', entry: './index.mjs', ...(p.manifest ?? {}) });
    files[`plugins/${p.name}/index.mjs`] = `${p.module ?? ''}\nexport default { ${p.config ? `config: ${p.config},` : ''} setup(ctx) { ${p.setup} } };\n`;
  }
  return files;
}

/** A project with these plugins under plugins.paths; `yml` is appended to project.yml. */
export function projectWith(plugins: TestPlugin[], yml = ''): string {
  return makeProject({ 'project.yml': `name: seams\ndatabase:\n  path: s.duckdb\nplugins:\n  paths: [plugins]\n${yml}`, ...pluginFiles(plugins) });
}

const EMPTY = tempDir('dp-no-builtins-');

/** Boots with only the given plugins (no built-ins) unless `builtIns` is true. */
export function boot(root: string, builtIns = false): Promise<App> {
  return App.boot({ projectRoot: root, builtInPluginsDir: builtIns ? undefined : EMPTY });
}
