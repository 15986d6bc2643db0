/**
 * The web UI: serves the shell (built by Vite into dist/ui, scripts/build-ui.mjs) at `/` with a
 * single-page-app fallback, lists the pages enabled plugins contribute (`contributes.ui`) for the
 * caller's role, and serves the prebuilt ES-module pages of third-party plugins. docs/ui.md.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DpError, definePlugin, hasPermission, notFound, type EnabledPlugin, type ManifestUiPage } from '../../sdk/index.js';

/** Where `node scripts/build.mjs` puts the built shell (dist/ui, next to dist/plugins). */
const BUILT_UI = fileURLToPath(new URL('../../ui/', import.meta.url));
/** Shown when the shell was never built (a checkout without `npm run build`). */
const UNBUILT_UI = fileURLToPath(new URL('../../../plugins/ui/unbuilt/', import.meta.url));

/** What the UI build records next to the shell (scripts/build-ui.mjs). */
interface UiBuildInfo {
  /** sha256 of the import map script in index.html, for the Content-Security-Policy. */
  importMapHash: string;
  /** `<plugin>:<entry>` of every page module compiled into the shell. */
  builtPages: string[];
}

/** Entries compiled with the shell; anything else is a prebuilt module the plugin ships. */
const SOURCE_ENTRY = /\.(tsx|ts|jsx)$/;
/** Files of a prebuilt page folder the server hands out, with their types. */
const MODULE_TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
};

export interface ListedPage {
  plugin: string;
  path: string;
  title: string;
  icon: string | null;
  order: number;
  permission: ManifestUiPage['permission'];
  /** `built`: compiled into the shell under `key`; `module`: a prebuilt ES module at `url`. */
  module: { kind: 'built'; key: string; available: boolean } | { kind: 'module'; url: string };
}

function readBuildInfo(): UiBuildInfo | null {
  try {
    return JSON.parse(fs.readFileSync(path.join(BUILT_UI, 'ui-build.json'), 'utf8')) as UiBuildInfo;
  } catch {
    return null;
  }
}

/** Folder of a plugin a prebuilt module may be served from: the entry's own folder and below. */
function moduleFolder(plugin: EnabledPlugin, entry: string): string {
  return path.dirname(path.resolve(plugin.dir, entry));
}

function isInside(folder: string, file: string): boolean {
  const rel = path.relative(folder, file);
  return rel !== '' && !rel.startsWith('..') && !path.isAbsolute(rel);
}

export default definePlugin({
  setup(ctx) {
    const build = readBuildInfo();
    if (!build) ctx.log.warn('the web UI is not built (run npm run build); / shows a notice');
    const built = new Set(build?.builtPages ?? []);

    // Pages of every enabled plugin, checked once: a path has one owner, a prebuilt module exists.
    const pages: ListedPage[] = [];
    const moduleFolders = new Map<string, string[]>();
    const owners = new Map<string, string>();
    for (const plugin of ctx.enabledPlugins()) {
      const name = plugin.manifest.name;
      for (const page of plugin.manifest.contributes?.ui?.pages ?? []) {
        const owner = owners.get(page.path);
        if (owner) throw new DpError(500, 'ui_page_conflict', `Plugins '${owner}' and '${name}' both contribute the web UI page ${page.path}`, { path: page.path, plugins: [owner, name] });
        owners.set(page.path, name);
        const base = { plugin: name, path: page.path, title: page.title, icon: page.icon ?? null, order: page.order ?? 100, permission: page.permission };
        if (SOURCE_ENTRY.test(page.entry)) {
          const key = `${name}:${page.entry}`;
          pages.push({ ...base, module: { kind: 'built', key, available: built.has(key) } });
          continue;
        }
        const file = path.resolve(plugin.dir, page.entry);
        const folder = moduleFolder(plugin, page.entry);
        if (!fs.existsSync(file) || !isInside(plugin.dir, file)) {
          throw new DpError(500, 'ui_page_entry_missing', `Plugin '${name}': the web UI page ${page.path} names '${page.entry}', which does not exist in the plugin folder`, { plugin: name, entry: page.entry });
        }
        moduleFolders.set(name, [...(moduleFolders.get(name) ?? []), folder]);
        const rel = path.relative(plugin.dir, file).split(path.sep).map(encodeURIComponent).join('/');
        pages.push({ ...base, module: { kind: 'module', url: `/api/ui/modules/${encodeURIComponent(name)}/${rel}` } });
      }
    }
    pages.sort((a, b) => a.order - b.order || a.title.localeCompare(b.title));

    ctx.route({
      kind: 'static',
      method: 'GET',
      url: '/',
      permission: 'public',
      summary: 'The web UI (client-side routes answer index.html)',
      root: build ? BUILT_UI : UNBUILT_UI,
      spaFallback: true,
      inlineScriptHashes: build ? [build.importMapHash] : [],
    });

    ctx.route({
      method: 'GET',
      url: '/api/ui/pages',
      permission: 'read',
      summary: 'The web UI pages of enabled plugins that the caller’s role may see',
      schema: {
        response: {
          200: {
            type: 'object',
            properties: {
              pages: {
                type: 'array',
                items: {
                  type: 'object',
                  properties: {
                    plugin: { type: 'string' },
                    path: { type: 'string' },
                    title: { type: 'string' },
                    icon: { type: ['string', 'null'] },
                    order: { type: 'number' },
                    permission: { type: 'string' },
                    module: { type: 'object', additionalProperties: true },
                  },
                },
              },
              plugins: { type: 'array', items: { type: 'string' }, description: 'Enabled plugins (pages use it to skip calls to absent ones)' },
            },
          },
        },
      },
      handler: (req) => ({ pages: pages.filter((p) => hasPermission(req.caller, p.permission)), plugins: ctx.enabledPlugins().map((p) => p.manifest.name) }),
    });

    ctx.route({
      method: 'GET',
      url: '/api/ui/modules/:plugin/*',
      permission: 'read',
      summary: 'A file of a third-party plugin’s prebuilt page (ES module, CSS, source map)',
      schema: { params: { type: 'object', properties: { plugin: { type: 'string' }, '*': { type: 'string' } }, required: ['plugin', '*'] } },
      handler: async (req, reply) => {
        const { plugin, '*': rest } = req.params as { plugin: string; '*': string };
        const missing = () => notFound('ui_module_not_found', `No web UI module '${rest}' of plugin '${plugin}'`, { plugin, path: rest });
        const owner = ctx.enabledPlugins().find((p) => p.manifest.name === plugin);
        const folders = moduleFolders.get(plugin);
        if (!owner || !folders) throw missing();
        const type = MODULE_TYPES[path.extname(rest).toLowerCase()];
        if (!type || rest.split('/').some((s) => s === '' || s === '.' || s === '..' || s.startsWith('.'))) throw missing();
        let file: string;
        try {
          file = fs.realpathSync(path.resolve(owner.dir, rest));
        } catch {
          throw missing();
        }
        // Only below a page entry's folder, after symlinks: nothing else of the plugin leaks.
        if (!folders.some((f) => isInside(fs.realpathSync(f), file)) || !fs.statSync(file).isFile()) throw missing();
        return reply.type(type).header('cache-control', 'no-cache').send(fs.createReadStream(file));
      },
    });
  },
});
