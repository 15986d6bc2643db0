// Compiles the TypeScript sources into dist/ (tsc, strict), regenerates the files derived from
// the kernel's hook declaration (scripts/generate.mjs: the manifest schema's hook enums and the
// hook table of docs/architecture.md), then generates the JSON-schema validators the CLI needs
// at start-up (ajv standalone code, see kernel/validators.generated.d.ts and
// sdk/json-schema-check.generated.d.ts), and builds the web UI
// with Vite into dist/ui (scripts/build-ui.mjs; skipped when its inputs did not change).
// Run by `npm install` (prepare) and before tests.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
const started = Date.now();
// --build: when nothing changed since dist/.tsbuildinfo, tsc answers from it without parsing a file
// (0.4 s against 5.6 s for -p, which parses every file before it finds nothing to emit).
const r = spawnSync(process.execPath, [tsc, '--build', join(root, 'tsconfig.json')], { stdio: 'inherit', cwd: root });
if (r.status !== 0) {
  process.stderr.write('build failed\n');
  process.exit(r.status ?? 1);
}

// Packages every command loads, made of many small modules, bundled into one file each: TypeBox's
// 200 ES modules alone cost a fifth of `dp tables`' start (bench/cli-start, docs/plugins.md
// "Activation on demand"). sdk/config.ts loads the bundle, or the package when there is none.
const esbuild = await import('esbuild');
const vendor = join(root, 'dist', 'vendor');
// yaml is 80 CommonJS modules and every command reads project.yml: sdk/yaml.ts loads the bundle, or the package.
// tapable's 15 are the kernel's hooks (kernel/hooks.ts), in every process.
// @duckdb/node-api's JavaScript is some 50 modules every command that opens the database loads
// (kernel/database/duckdb-api.ts): bundled without its native bindings, which stay the package's.
const commonJsBundles = [
  ['@sinclair/typebox', 'typebox.cjs', []],
  ['yaml', 'yaml.cjs', []],
  ['tapable', 'tapable.cjs', []],
  ['@duckdb/node-api', 'duckdb-node-api.cjs', ['@duckdb/node-bindings']],
];
for (const [pkg, file, external] of commonJsBundles) {
  await esbuild.build({
    entryPoints: [createRequire(import.meta.url).resolve(pkg)],
    bundle: true,
    format: 'cjs',
    platform: 'node',
    target: 'node20',
    logLevel: 'warning',
    external,
    outfile: join(vendor, file),
  });
}
// string-width (three copies, under cliui and wrap-ansi) builds Intl segmenters and Unicode-property
// regular expressions when its module loads: about 45 ms of every command's start for a width only
// help and usage text ask for. Each import of it gets a stand-in that loads it on the first call.
const lazyStringWidth = {
  name: 'lazy-string-width',
  setup(build) {
    build.onResolve({ filter: /^string-width$/ }, async (args) => {
      if (args.namespace === 'lazy-string-width') return undefined;
      const real = await build.resolve(args.path, { kind: args.kind, resolveDir: args.resolveDir, namespace: 'lazy-string-width' });
      if (real.errors.length) return { errors: real.errors };
      return { path: real.path, namespace: 'lazy-string-width' };
    });
    // require() of an ES module in a bundle: esbuild initializes it on that call, not at load.
    build.onLoad({ filter: /.*/, namespace: 'lazy-string-width' }, (args) => ({
      contents: `export default function stringWidth(...args) { return require(${JSON.stringify(args.path)}).default(...args); }`,
      resolveDir: root,
      loader: 'js',
    }));
  },
};
// yargs finds its translations next to its own module: point the bundle at the package's folder.
const yargsBundle = await esbuild.build({
  stdin: { contents: "export { default as yargs } from 'yargs'; export { hideBin } from 'yargs/helpers';", resolveDir: root, loader: 'js' },
  bundle: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  logLevel: 'warning',
  write: false,
  outfile: join(vendor, 'yargs.mjs'),
  plugins: [lazyStringWidth],
});
const yargsCode = yargsBundle.outputFiles[0].text;
const localesAt = /resolve\d*\(__dirname, "\.\.\/\.\.\/\.\.\/locales"\)/;
if (!localesAt.test(yargsCode)) throw new Error('build: the yargs bundle no longer names its locales folder as expected (scripts/build.mjs)');
if (/^var \w+ = new Intl\.Segmenter\(/m.test(yargsCode)) throw new Error('build: string-width is no longer loaded on first use in the yargs bundle (scripts/build.mjs)');
fs.writeFileSync(join(vendor, 'yargs.mjs'), yargsCode.replace(localesAt, 'fileURLToPath(new URL("../../node_modules/yargs/locales/", import.meta.url))'));

// JSON Schema's draft-07 meta-schema as a standalone validator (sdk/json-schema-check.generated.d.ts):
// the sdk's jsonSchemaProblem checks a connector type's params schema at every server start, and
// compiling the meta-schema there cost about 55 ms. Written before anything below imports the sdk.
const { Ajv } = await import('ajv');
const standalone = (await import('ajv/dist/standalone/index.js')).default;
// ajv's ESM output still calls require() for its runtime helpers.
const requireHeader = "import { createRequire } from 'node:module';\nconst require = createRequire(import.meta.url);\n";
fs.writeFileSync(
  join(root, 'dist', 'sdk', 'json-schema-check.generated.js'),
  requireHeader + standalone(new Ajv({ strict: false, code: { source: true, esm: true } }), { validateJsonSchema: 'http://json-schema.org/draft-07/schema' }),
);

// Locally the build rewrites them; on CI (CI set) it only checks, so a stale checked-in file fails the build.
const generateArgs = process.env.CI ? ['--check'] : [];
const generated = spawnSync(process.execPath, [join(root, 'scripts', 'generate.mjs'), ...generateArgs], { stdio: 'inherit', cwd: root });
if (generated.status !== 0) {
  process.stderr.write(process.env.CI ? 'generated files are out of date (run node scripts/build.mjs locally and commit them)\n' : 'generating the hook enums and table failed\n');
  process.exit(generated.status ?? 1);
}

const { projectSchema } = await import(pathToFileURL(join(root, 'dist', 'kernel', 'project-schema.js')).href);
const manifestSchema = JSON.parse(fs.readFileSync(join(root, 'plugin-manifest.schema.json'), 'utf8'));
const ajv = new Ajv({ allErrors: false, strict: false, code: { source: true, esm: true } });
ajv.addSchema(projectSchema, 'project');
ajv.addSchema(manifestSchema, 'manifest');
const code = standalone(ajv, { validateProject: 'project', validateManifest: 'manifest' });
fs.writeFileSync(join(root, 'dist', 'kernel', 'validators.generated.js'), requireHeader + code);

// The built-in plugins' project.yml schemas, compiled the same way (kernel/config-validators.generated.d.ts).
const configValidatorsFile = join(root, 'dist', 'kernel', 'config-validators.generated.js');
fs.writeFileSync(configValidatorsFile, 'export const configValidators = {};\n'); // plugin-config.js imports it
const { CONFIG_AJV_OPTIONS, configSchemaId } = await import(pathToFileURL(join(root, 'dist', 'kernel', 'plugin-config.js')).href);
const configAjv = new Ajv({ ...CONFIG_AJV_OPTIONS, code: { source: true, esm: true } });
const configIds = new Set();
for (const name of fs.readdirSync(join(root, 'plugins')).sort()) {
  const manifestFile = join(root, 'plugins', name, 'plugin.json');
  if (!fs.existsSync(manifestFile)) continue;
  const entry = join(root, 'dist', 'plugins', name, JSON.parse(fs.readFileSync(manifestFile, 'utf8')).entry.replace(/\.ts$/, '.js'));
  for (const ref of (await import(pathToFileURL(entry).href)).default?.config ?? []) {
    const id = configSchemaId(ref.schema);
    if (configIds.has(id)) continue;
    configIds.add(id);
    configAjv.addSchema(ref.schema, id);
  }
}
const configCode = configIds.size ? standalone(configAjv, Object.fromEntries([...configIds].map((id) => [id, id]))) : '';
fs.writeFileSync(configValidatorsFile, requireHeader + configCode + `\nexport const configValidators = { ${[...configIds].join(', ')} };\n`);

// DuckDB's own function names, for the read-only check (kernel/readonly.ts): reading them from the
// database cost every `dp query` about 70 ms of CPU. Valid for the library version read here.
{
  const { DuckDBInstance, version: duckdbVersion } = await import('@duckdb/node-api');
  const { BUILTIN_FUNCTIONS_SQL, BUILTIN_FUNCTIONS_FILE } = await import(pathToFileURL(join(root, 'dist', 'kernel', 'readonly.js')).href);
  const duck = await DuckDBInstance.create(':memory:', { autoload_known_extensions: 'false', autoinstall_known_extensions: 'false' });
  const conn = await duck.connect();
  const functions = (await conn.runAndReadAll(BUILTIN_FUNCTIONS_SQL)).getRows().map((r) => String(r[0])).sort();
  conn.closeSync();
  duck.closeSync();
  fs.writeFileSync(BUILTIN_FUNCTIONS_FILE, JSON.stringify({ version: duckdbVersion(), functions }) + '\n');
}

// docs/errors.md from the error catalogues (kernel/errors.ts, sdk/error-codes.ts, plugins/*/errors.ts).
const { writeErrorsDoc } = await import(pathToFileURL(join(root, 'dist', 'kernel', 'error-catalogue.js')).href);
await writeErrorsDoc();
// The wiki's CLI reference from the commands themselves (plugins/catalog/wiki/cli-reference.md).
const cliReference = spawnSync(process.execPath, [join(root, 'scripts', 'generate-cli-reference.mjs')], { stdio: 'inherit', cwd: root });
if (cliReference.status !== 0) {
  process.stderr.write('generating the CLI reference failed\n');
  process.exit(cliReference.status ?? 1);
}
// V8's code cache of each CommonJS bundle (sdk/bundled.ts): written by a plain `node`, as a dp
// command runs, after the bundle ran once, so a command compiles none of it again.
const bundles = commonJsBundles.map(([, file]) => join(vendor, file));
const codeCache = spawnSync(
  process.execPath,
  ['--input-type=module', '-e', `const { writeCodeCache } = await import(${JSON.stringify(pathToFileURL(join(root, 'dist', 'sdk', 'bundled.js')).href)}); for (const file of ${JSON.stringify(bundles)}) writeCodeCache(file);`],
  { stdio: 'inherit', cwd: root },
);
if (codeCache.status !== 0) {
  process.stderr.write('writing the bundles\' code caches failed\n');
  process.exit(codeCache.status ?? 1);
}
// The web UI (Vite; skipped when nothing it reads changed): scripts/build-ui.mjs.
const ui = spawnSync(process.execPath, [join(root, 'scripts', 'build-ui.mjs')], { stdio: 'inherit', cwd: root });
if (ui.status !== 0) {
  process.stderr.write('web UI build failed\n');
  process.exit(ui.status ?? 1);
}
process.stderr.write(`built dist/ in ${((Date.now() - started) / 1000).toFixed(1)} s\n`);
