// The Vite configuration of the web UI (run by scripts/build-ui.mjs, not by tsc).
// - The shell (plugins/ui/app) is the HTML entry; every page of a built-in plugin
//   (contributes.ui with a .tsx/.ts entry) is a dynamic import, so each is its own lazy chunk.
// - The shared libraries are extra entries with their exports kept: the import map in index.html
//   points third-party pages' bare imports (`react`, `@dp/ui` …) at these chunks, so there is one
//   copy of each library (one React) whoever imports it.
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import react from '@vitejs/plugin-react';

/** Bare names third-party pages may import, and what each is built from. */
export const SHARED_MODULES = {
  react: { cjs: 'react' },
  'react/jsx-runtime': { cjs: 'react/jsx-runtime' },
  'react-dom': { cjs: 'react-dom' },
  'react-dom/client': { cjs: 'react-dom/client' },
  'react-router-dom': { esm: 'react-router-dom' },
  '@dp/ui': { esm: '@dp/ui' },
  '@dp/ui/editor': { esm: '@dp/ui/editor' },
  '@dp/ui/graph': { esm: '@dp/ui/graph' },
  '@dp/ui/chart': { esm: '@dp/ui/chart' },
};

/** The entry name (and chunk name) of a shared module: `shared-react-jsx-runtime`. */
export const sharedEntryName = (bare) => `shared-${bare.replace(/^@/, '').replace(/[^a-z0-9]+/gi, '-')}`;

/** `<plugin>:<entry>` → absolute source of every built-in page (plugins/<name>/plugin.json). */
export function builtInPages(root) {
  const out = {};
  const pluginsDir = path.join(root, 'plugins');
  for (const name of fs.readdirSync(pluginsDir).sort()) {
    const manifestFile = path.join(pluginsDir, name, 'plugin.json');
    if (!fs.existsSync(manifestFile)) continue;
    const manifest = JSON.parse(fs.readFileSync(manifestFile, 'utf8'));
    for (const page of manifest.contributes?.ui?.pages ?? []) {
      if (!/\.(tsx|ts|jsx)$/.test(page.entry)) continue;
      out[`${manifest.name}:${page.entry}`] = path.join(pluginsDir, name, page.entry);
    }
  }
  return out;
}

const PAGES_ID = 'virtual:dp-pages';
const SHARED_PREFIX = 'virtual:dp-shared/';

/** Generates the page registry and the shared-module entries as virtual modules. */
function dpModules(root) {
  const require = createRequire(path.join(root, 'package.json'));
  return {
    name: 'dp-ui-modules',
    resolveId(id) {
      if (id === PAGES_ID || id.startsWith(SHARED_PREFIX)) return '\0' + id;
      return null;
    },
    load(id) {
      if (id === '\0' + PAGES_ID) {
        const pages = builtInPages(root);
        const lines = Object.entries(pages).map(([key, file]) => `  ${JSON.stringify(key)}: () => import(${JSON.stringify(file)}),`);
        return `export const builtPages = {\n${lines.join('\n')}\n};\n`;
      }
      if (id.startsWith('\0' + SHARED_PREFIX)) {
        const bare = id.slice(1 + SHARED_PREFIX.length);
        const spec = SHARED_MODULES[bare];
        if (spec.esm) return `export * from ${JSON.stringify(spec.esm)};\n`;
        // CommonJS (React): name every export, so `import { useState } from 'react'` links.
        const names = Object.keys(require(spec.cjs)).filter((n) => /^[A-Za-z_$][\w$]*$/.test(n) && n !== 'default');
        return `import * as m from ${JSON.stringify(spec.cjs)};\nconst d = m.default ?? m;\nexport default d;\nexport const { ${names.join(', ')} } = d;\n`;
      }
      return null;
    },
  };
}

export function uiViteConfig(root) {
  const app = path.join(root, 'plugins', 'ui', 'app');
  const client = path.join(root, 'plugins', 'ui', 'client');
  const input = { index: path.join(app, 'index.html') };
  for (const bare of Object.keys(SHARED_MODULES)) input[sharedEntryName(bare)] = SHARED_PREFIX + bare;
  return {
    configFile: false,
    root: app,
    base: '/',
    logLevel: 'warn',
    publicDir: false,
    plugins: [react(), dpModules(root)],
    resolve: {
      alias: [
        { find: /^@dp\/ui$/, replacement: path.join(client, 'index.ts') },
        { find: /^@dp\/ui\/editor$/, replacement: path.join(client, 'editor.tsx') },
        { find: /^@dp\/ui\/graph$/, replacement: path.join(client, 'graph.tsx') },
        { find: /^@dp\/ui\/chart$/, replacement: path.join(client, 'chart.tsx') },
      ],
      dedupe: ['react', 'react-dom', 'react-router-dom'],
    },
    build: {
      outDir: path.join(root, 'dist', 'ui'),
      emptyOutDir: true,
      manifest: false,
      sourcemap: false,
      target: 'es2022',
      modulePreload: { polyfill: false },
      chunkSizeWarningLimit: 2000,
      rollupOptions: {
        input,
        preserveEntrySignatures: 'exports-only',
        // Rolldown's plugin-timing report is noise on a busy machine.
        checks: { pluginTimings: false },
        output: {
          entryFileNames: 'assets/[name]-[hash].js',
          chunkFileNames: 'assets/[name]-[hash].js',
          assetFileNames: 'assets/[name]-[hash][extname]',
        },
      },
    },
  };
}
