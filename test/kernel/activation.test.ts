/**
 * Activation on demand (docs/plugins.md): a CLI command loads the plugin that owns it, what that
 * plugin acts through, and the query guards (masking); `dp serve` loads every enabled plugin; a
 * plugin not loaded is still checked from its manifest; no plugin entry imports a heavy package
 * at its top level.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { App } from '../../kernel/app.js';
import { invokedCommand } from '../../kernel/cli.js';
import { activationSet, discoverPlugins } from '../../kernel/plugins.js';
import { CATALOG_CHANGED } from '../../sdk/db.js';
import { HOOK_NAMES } from '../../sdk/hooks.js';
import { LINEAGE_SERVICE } from '../../sdk/lineage.js';
import { runCommand } from '../../sdk/testing.js';
import { fileDpRelay, makeProject, REPO_ROOT } from '../helpers.js';
import { staticPackages } from '../support/import-graph.js';

/** The file's `dp` process: command lines through the binary's entry, one process start for the file. */
const dp = fileDpRelay();

/**
 * Packages that cost a CLI command's start (or a server's) when imported at a plugin's setup
 * (issue 29): undici about 110 ms of CPU, the yaml package's 80 modules about 40 (plugins use the
 * sdk's bundled copy), cron-parser with its date library and esbuild 10–20 each, aws4 about 7.
 */
const HEAVY = ['pg', 'mysql2', '@modelcontextprotocol/sdk', 'yjs', 'y-protocols', 'exceljs', 'apache-arrow', '@clickhouse/client', '@polyglot-sql/sdk', 'undici', 'yaml', 'cron-parser', 'esbuild', 'aws4'];

/**
 * Packages `dp tables` and `dp query` do without (bench/cli-start): besides the heavy ones, ajv
 * (validators are generated at build time), the HTTP server and its logger.
 */
const NOT_AT_CLI_START = [...HEAVY, 'ajv', 'ajv-formats', 'fastify', 'pino', '@fastify/cookie'];

/**
 * CommonJS packages the CLI loads with require(), never an ES import: for an ES import Node runs
 * its CommonJS export lexer over every file of the package first (@duckdb/node-api: about 270 ms
 * of CPU per command; kernel/database/duckdb-api.ts).
 */
const REQUIRED_NOT_IMPORTED = ['@duckdb/node-api'];

const builtIns = () => discoverPlugins({ projectRoot: REPO_ROOT, paths: [], disable: [] }).enabled.map((p) => p.manifest);
const guards = new Set<string>(HOOK_NAMES);
const sorted = (s: Set<string>) => [...s].sort();

describe('activation on demand', () => {
  const apps: App[] = [];
  after(async () => {
    for (const a of apps) await a.close();
  });

  it('dp tables and dp query load their plugin and the masking guard, nothing else (lineage and models load when a policy needs them)', () => {
    // target-clickhouse is an optional of tables and query (a target's relations and queries); it imports no client until a target is used.
    assert.deepEqual(sorted(activationSet(builtIns(), ['tables'], guards)), ['masking', 'tables', 'target-clickhouse']);
    assert.deepEqual(sorted(activationSet(builtIns(), ['query'], guards)), ['masking', 'query', 'target-clickhouse']);
    assert.deepEqual(builtIns().find((m) => m.name === 'masking')!.onDemand, ['lineage'], 'masking looks lineage up only when it derives policies');
  });

  it('an onDemand plugin must be one the manifest requires or lists as optional', () => {
    const plugins = makeProject({
      'odd/plugin.json': JSON.stringify({ name: 'odd', version: '1.0.0', entry: './index.mjs', onDemand: ['lineage'] }),
      'odd/index.mjs': 'export default { setup() {} };\n',
    });
    assert.throws(
      () => discoverPlugins({ projectRoot: plugins, paths: [plugins], disable: [] }),
      (e: { code?: string; message: string }) => e.code === 'invalid_plugin_manifest' && /onDemand/.test(e.message),
    );
  });

  it('a command loads the plugins that contribute to what it drives: transform runs quality checks, connectors its cloud types', () => {
    const transform = activationSet(builtIns(), ['models'], guards);
    for (const p of ['quality', 'masking']) assert.ok(transform.has(p), `transform loads ${p}: ${sorted(transform)}`);
    const connect = activationSet(builtIns(), ['connectors'], guards);
    assert.ok(connect.has('connectors-cloud'), sorted(connect).join(','));
    assert.ok(!connect.has('agents') && !connect.has('catalog'), sorted(connect).join(','));
  });

  it('transform does not load the contributors of the points only dp validate and the model view read (streams, scripts, connectors, lineage, semantic)', () => {
    // quality taps the build hooks and contributes the checks a transform runs; models.validators and models.view are on-demand points.
    assert.deepEqual(sorted(activationSet(builtIns(), ['models'], guards)), ['masking', 'models', 'quality', 'target-clickhouse']);
    assert.deepEqual(builtIns().find((m) => m.name === 'models')!.contributes?.onDemandExtensionPoints, ['models.view', 'models.validators']);
  });

  it('dp validate as a one-shot command loads the validators of plugins the boot left out, and they report (streams)', async () => {
    const root = makeProject({
      'project.yml': 'name: v\ndatabase:\n  path: v.duckdb\nstreams:\n  nightly:\n    schedule: "0 25 * * *"\n    steps:\n      - transform: [all]\n',
    });
    const app = await App.boot({ projectRoot: root, activate: ['models'] });
    apps.push(app);
    const names = () => app.loadedPlugins.map((p) => p.manifest.name);
    assert.ok(!names().includes('streams') && !names().includes('connectors'), names().join(','));
    const r = await runCommand(app, ['validate', '--json']);
    assert.equal(r.code, 1, r.stderr + r.stdout);
    const report = JSON.parse(r.stdout) as { problems: Array<{ source: string; line?: number; message: string }> };
    const streams = report.problems.filter((p) => p.source === 'streams');
    assert.equal(streams.length, 1, r.stdout);
    assert.match(streams[0]!.message, /'0 25 \* \* \*' is not a valid cron expression/);
    // The stream plugin came with what it acts through, as a command of its own would load it.
    for (const p of ['streams', 'scripts', 'semantic', 'connectors', 'connectors-cloud']) assert.ok(names().includes(p), `${p} loaded: ${names().join(',')}`);
    const again = await runCommand(app, ['validate', '--json']);
    assert.equal(JSON.parse(again.stdout).problems.filter((p: { source: string }) => p.source === 'streams').length, 1, 'a second read adds no contribution twice');
  });

  it('an on-demand extension point must be one the plugin declares, and only such a point loads its extensions on read', async () => {
    const bad = makeProject({
      'odd/plugin.json': JSON.stringify({ name: 'odd', version: '1.0.0', entry: './index.mjs', contributes: { extensionPoints: ['odd.a'], onDemandExtensionPoints: ['odd.b'] } }),
      'odd/index.mjs': 'export default { setup() {} };\n',
    });
    const badRoot = makeProject({ 'project.yml': `name: t\ndatabase:\n  path: t.duckdb\nplugins:\n  paths: [${JSON.stringify(bad)}]\n` });
    await assert.rejects(App.boot({ projectRoot: badRoot, activate: ['tables'] }), (e: { code?: string; message: string }) => e.code === 'invalid_plugin_manifest' && /onDemandExtensionPoints/.test(e.message));
    const eager = makeProject({
      'eager/plugin.json': JSON.stringify({ name: 'eager', version: '1.0.0', entry: './index.mjs', contributes: { extensionPoints: ['eager.a'] } }),
      'eager/index.mjs': "export default { setup(ctx) { ctx.provideExtensionPoint('eager.a', () => {}); globalThis.__eagerLoad = () => ctx.loadExtensions('eager.a'); } };\n",
    });
    const root = makeProject({ 'project.yml': `name: t\ndatabase:\n  path: t.duckdb\nplugins:\n  paths: [${JSON.stringify(eager)}]\n` });
    const app = await App.boot({ projectRoot: root, activate: ['eager'] });
    apps.push(app);
    const load = (globalThis as { __eagerLoad?: () => Promise<void> }).__eagerLoad!;
    await assert.rejects(load(), (e: { code?: string }) => e.code === 'undeclared_extension_point');
  });

  it('notebooks run cells through the scripts plugin: they require no streams, and run with streams disabled', async () => {
    const notebooks = builtIns().find((m) => m.name === 'notebooks')!;
    assert.deepEqual(notebooks.requires, ['scripts']);
    assert.ok(!(notebooks.optional ?? []).includes('streams'));
    const run = activationSet(builtIns(), ['scripts'], guards);
    assert.ok(run.has('notebooks'), `dp run loads the notebook cell rules: ${sorted(run)}`);
    const root = makeProject({
      'project.yml': 'name: t\ndatabase:\n  path: t.duckdb\nplugins:\n  disable: [streams]\n',
      'notebooks/two.dpnb': JSON.stringify({ cells: [{ type: 'code', source: 'export const n = 20;' }, { type: 'code', source: 'console.log(`n is ${n + 1}`);' }] }),
    });
    const app = await App.boot({ projectRoot: root, activate: ['scripts'] });
    apps.push(app);
    assert.ok(!app.loadedPlugins.some((p) => p.manifest.name === 'streams'));
    const r = await runCommand(app, ['run', 'notebooks/two.dpnb']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /n is 21/);
  });

  it('boots only the activated plugins; the others stay manifests (commands absent, checks still run)', async () => {
    const root = makeProject();
    const app = await App.boot({ projectRoot: root, activate: ['tables'] });
    apps.push(app);
    assert.deepEqual(app.loadedPlugins.map((p) => p.manifest.name).sort(), ['masking', 'tables', 'target-clickhouse']);
    assert.equal(app.plugins.length, builtIns().length, 'every enabled plugin is still known');
    assert.ok(app.commands.has('tables'));
    assert.ok(!app.commands.has('query'));
    assert.ok(!app.commands.has('mcp'));
  });

  it('a project.yml key of a plugin that is not loaded is still checked against the manifests', async () => {
    const root = makeProject({ 'project.yml': 'name: t\ndatabase:\n  path: t.duckdb\nnot_a_plugin_key: 1\n' });
    await assert.rejects(App.boot({ projectRoot: root, activate: ['tables'] }), (e: { code?: string }) => e.code === 'invalid_project_yml');
  });

  it('a route of a plugin that is not loaded is checked from its manifest (a missing permission fails every command)', async () => {
    const plugins = makeProject({
      'bad/plugin.json': JSON.stringify({ name: 'bad', version: '1.0.0', entry: './index.mjs', contributes: { routes: [{ method: 'GET', url: '/api/bad' }] } }),
      'bad/index.mjs': 'export default { setup() {} };\n',
    });
    const root = makeProject({ 'project.yml': `name: t\ndatabase:\n  path: t.duckdb\nplugins:\n  paths: [${JSON.stringify(plugins)}]\n` });
    const r = await dp.run(['tables', '--project', root]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /permission/);
  });

  it('masking still applies to `dp query` run with only its plugins loaded', async () => {
    const root = makeProject();
    const full = await App.boot({ projectRoot: root });
    await full.start();
    await full.db.run("CREATE TABLE people (id INTEGER, email VARCHAR); INSERT INTO people VALUES (1, 'ann@example.com')");
    const added = await runCommand(full, ['mask', 'add', '--schema', 'main', '--table', 'people', '--column', 'email', '--method', 'redact']);
    assert.equal(added.code, 0, added.stderr);
    await full.close();

    const app = await App.boot({ projectRoot: root, activate: ['query'] });
    apps.push(app);
    const viewer = { username: 'v', role: 'viewer' as const, authenticated: true };
    const r = await runCommand(app, ['query', 'SELECT email FROM people', '--json'], { caller: viewer });
    assert.equal(r.code, 0, r.stderr);
    assert.ok(!r.stdout.includes('ann@example.com'), r.stdout);
    assert.ok(app.loadedPlugins.some((p) => p.manifest.name === 'masking'));
  });

  it('dp query follows masking through lineage as before: lineage, models and the enforcer load when a policy exists, not before', async () => {
    const root = makeProject({
      'seeds/people.csv': 'id,email\n1,ann@example.com\n',
      'transform/m/contacts.sql': '-- @config materialized=table, schema=m\nSELECT id, email AS contact FROM seeds.people\n',
    });
    const full = await App.boot({ projectRoot: root });
    for (const command of [['seed'], ['transform']]) {
      const r = await runCommand(full, command);
      assert.equal(r.code, 0, r.stderr);
    }
    await full.close();
    const viewer = { username: 'v', role: 'viewer' as const, authenticated: true };
    const names = (app: App) => app.loadedPlugins.map((p) => p.manifest.name);

    // No policy: nothing to follow, and lineage, models and their code stay unloaded.
    const plain = await App.boot({ projectRoot: root, activate: ['query'] });
    apps.push(plain);
    const raw = await runCommand(plain, ['query', 'SELECT contact FROM m.contacts', '--json'], { caller: viewer });
    assert.equal(raw.code, 0, raw.stderr);
    assert.match(raw.stdout, /ann@example\.com/);
    assert.ok(!names(plain).includes('lineage') && !names(plain).includes('models'), names(plain).join(','));
    // Nor masking's enforcer (gate.ts): without a policy it is never imported, and the key schema is still refused.
    const enforcerLoaded = (app: App) => (app.services.get<{ enforcerLoaded(): boolean }>('masking')).enforcerLoaded();
    assert.equal(enforcerLoaded(plain), false);
    const keys = await runCommand(plain, ['query', 'SELECT * FROM _masking.keys', '--json'], { caller: viewer });
    assert.equal(keys.code, 1);
    assert.match(keys.stderr, /_masking is internal to dp/);
    assert.equal(enforcerLoaded(plain), false);
    // Looking lineage up synchronously while it is not loaded is refused, not taken for "not installed".
    const masking = plain.plugins.find((p) => p.manifest.name === 'masking')!.manifest;
    assert.throws(() => plain.services.find(LINEAGE_SERVICE, masking), (e: { code?: string }) => e.code === 'service_not_loaded');
    await plain.close();

    const admin = await App.boot({ projectRoot: root });
    const added = await runCommand(admin, ['mask', 'add', '--schema', 'seeds', '--table', 'people', '--column', 'email', '--method', 'redact']);
    assert.equal(added.code, 0, added.stderr);
    await admin.close();

    // A policy on the seed: the model's renamed column is masked through lineage, loaded for it.
    const app = await App.boot({ projectRoot: root, activate: ['query'] });
    apps.push(app);
    assert.ok(!names(app).includes('lineage'));
    const masked = await runCommand(app, ['query', 'SELECT contact FROM m.contacts', '--json'], { caller: viewer });
    assert.equal(masked.code, 0, masked.stderr);
    assert.ok(!masked.stdout.includes('ann@example.com'), masked.stdout);
    assert.ok(names(app).includes('lineage') && names(app).includes('models'), names(app).join(','));
    assert.equal(enforcerLoaded(app), true, 'a policy exists: the enforcer is loaded and every query goes through it');
    assert.ok(app.services.find(LINEAGE_SERVICE, masking), 'the lineage service is provided once loaded');
  });

  it('a command on a database already migrated changes nothing: no catalog change is announced, so no cache is dropped', async () => {
    const root = makeProject();
    const first = await App.boot({ projectRoot: root });
    await first.start();
    await first.close();
    const app = await App.boot({ projectRoot: root, activate: ['query'] });
    apps.push(app);
    const changes: string[] = [];
    app.events.on(CATALOG_CHANGED, (event) => changes.push(String((event.payload as { statement?: string }).statement)));
    const r = await runCommand(app, ['query', 'SELECT 42 AS n', '--json']);
    assert.equal(r.code, 0, r.stderr);
    assert.deepEqual(changes, [], 'opening the file (migrations, masking keys) and the query wrote nothing');
  });

  it('the import graph sees a heavy package behind a relative import, and not behind import() or import type', () => {
    const dir = makeProject({
      'index.ts': "import { helper } from './helper.js';\nimport type { Client } from 'mysql2';\nexport const run = async () => (await import('exceljs')).default;\n",
      'helper.ts': "import pg from 'pg';\nexport const helper = () => new pg.Client();\n",
    });
    assert.deepEqual([...staticPackages(path.join(dir, 'index.ts')).keys()], ['pg']);
  });

  it('the CLI declares only the plugin command argv names; every command for help, a kernel command, or when unsure', () => {
    assert.equal(invokedCommand(['tables']), 'tables');
    assert.equal(invokedCommand(['--project', '/p', '--json', 'query', 'SELECT 1']), 'query');
    assert.equal(invokedCommand(['--env=prod', '--no-json', 'tables', '--schema', 'x']), 'tables');
    assert.equal(invokedCommand(['tables', '--help']), undefined);
    assert.equal(invokedCommand(['--version']), undefined);
    assert.equal(invokedCommand(['--limit', '5', 'query', 'SELECT 1']), undefined, 'an option dp does not know globally comes first');
    assert.equal(invokedCommand([]), undefined);
  });

  it('a mistyped command still gets its suggestion, and a kernel command still runs, beside one-command parsing', async () => {
    const root = makeProject();
    const [typo, env] = await dp.batch([{ args: ['tabels', '--project', root] }, { args: ['env', 'show', '--project', root] }]);
    assert.equal(typo.code, 1);
    assert.match(typo.stderr, /Did you mean tables\?/);
    assert.equal(env.code, 0, env.stderr);
  });

  it('the CLI start path and the plugins dp tables and dp query load import no package those commands do without', () => {
    const loaded = new Set([...activationSet(builtIns(), ['tables'], guards), ...activationSet(builtIns(), ['query'], guards)]);
    const plugins = builtIns()
      .filter((m) => loaded.has(m.name))
      .map((m) => path.join(REPO_ROOT, 'plugins', m.name, m.entry));
    const offenders: string[] = [];
    for (const entry of [...['cli.ts', 'app.ts', 'remote.ts'].map((f) => path.join(REPO_ROOT, 'kernel', f)), ...plugins]) {
      for (const [pkg, chain] of staticPackages(entry)) {
        if (NOT_AT_CLI_START.includes(pkg)) offenders.push(`${pkg} via ${chain.map((f) => path.relative(REPO_ROOT, f)).join(' -> ')}`);
        if (REQUIRED_NOT_IMPORTED.includes(pkg)) offenders.push(`${pkg} imported as an ES module (load it with require: kernel/database/duckdb-api.ts) via ${chain.map((f) => path.relative(REPO_ROOT, f)).join(' -> ')}`);
      }
    }
    assert.ok(plugins.length >= 4, `checked ${plugins.length} plugin entries`);
    assert.deepEqual(offenders, [], 'import these where they are first used (await import(), or requireOnFirstUse from the sdk for a CommonJS package)');
  });

  it('no plugin entry imports a heavy package at its top level (follows the static import graph)', () => {
    const dirs = [path.join(REPO_ROOT, 'plugins'), path.join(REPO_ROOT, 'examples', 'plugins')];
    const offenders: string[] = [];
    let checked = 0;
    for (const dir of dirs) {
      for (const name of fs.readdirSync(dir)) {
        const manifestFile = path.join(dir, name, 'plugin.json');
        if (!fs.existsSync(manifestFile)) continue;
        const declared = path.join(dir, name, (JSON.parse(fs.readFileSync(manifestFile, 'utf8')) as { entry: string }).entry);
        const entry = [declared.replace(/\.js$/, '.ts'), declared].find((f) => fs.existsSync(f));
        if (!entry) continue;
        checked++;
        for (const [pkg, chain] of staticPackages(entry)) {
          if (HEAVY.includes(pkg)) offenders.push(`${name}: ${pkg} via ${chain.map((f) => path.relative(REPO_ROOT, f)).join(' -> ')}`);
        }
      }
    }
    assert.ok(checked >= 17, `checked ${checked} plugin entries`);
    assert.deepEqual(offenders, [], 'import these where they are first used (await import(), or requireOnFirstUse from the sdk for a CommonJS package)');
  });
});
