import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { App } from '../../kernel/app.js';
import { DpError } from '../../sdk/errors.js';
import { makeProject, runCli, runCliBatch, startServer } from '../helpers.js';

/** A third-party plugin in plain JavaScript, as a user would ship it. */
const GREETER = {
  'plugins/greeter/plugin.json': JSON.stringify({
    name: 'greeter',
    version: '1.0.0',
    description: 'Says hello',
    entry: './index.mjs',
    requires: ['query'],
    contributes: {
      routes: [{ method: 'GET', url: '/api/greeter/:name', permission: 'read' }],
      commands: [{ command: 'greet <name>', describe: 'Say hello', options: { shout: { type: 'boolean' } } }],
      hooks: ['afterQuery'],
      services: ['greeter'],
    },
  }),
  'plugins/greeter/index.mjs': `
let queries = 0;
export default {
  setup(ctx) {
    ctx.services.provide('greeter', { hello: (n) => 'hello ' + n });
    ctx.tap('afterQuery', async () => { queries++; });
    ctx.route({ method: 'GET', url: '/api/greeter/:name', permission: 'read',
      schema: { params: { type: 'object', properties: { name: { type: 'string', pattern: '^[a-z]+$' } } } },
      handler: (req) => ({ greeting: ctx.services.get('greeter').hello(req.params.name), queries }) });
    ctx.command('greet', (args, io) => { const t = 'hello ' + args.name; io.out(args.shout ? t.toUpperCase() : t); return 0; });
  },
};`,
};

function project(yml: string, files: Record<string, string> = {}) {
  return makeProject({ 'project.yml': `name: p\ndatabase:\n  path: p.duckdb\n${yml}`, ...files });
}

describe('plugin host', () => {
  it('loads a third-party plugin from plugins.paths: route, command, hook, service', async () => {
    const root = project('plugins:\n  paths: [plugins]\n', GREETER);
    const s = await startServer(root);
    try {
      await s.request('POST', '/api/query', { sql: 'SELECT 1' });
      const r = await s.request('GET', '/api/greeter/ada');
      assert.deepEqual(r.body, { greeting: 'hello ada', queries: 1 });
      assert.equal((await s.request('GET', '/api/greeter/BAD')).status, 400);
      const plugins = await s.request('GET', '/api/plugins');
      assert.ok(plugins.body.enabled.some((p: { name: string }) => p.name === 'greeter'));
      const docs = await s.request('GET', '/docs/json');
      assert.ok(docs.body.paths['/api/greeter/{name}'], 'the route is in the OpenAPI description');
    } finally {
      await s.close();
    }
    // The binary's entry, both commands in one process (runCliBatch).
    const [cli, help] = await runCliBatch([{ args: ['greet', 'bob', '--shout', '--project', root] }, { args: ['--help', '--project', root] }]);
    assert.equal(cli.code, 0, cli.stderr);
    assert.equal(cli.stdout.trim(), 'HELLO BOB');
    assert.match(help.stdout, /dp greet <name>/);
  });

  it('drops a disabled plugin: its routes answer 404 and its commands disappear', async () => {
    const root = project('plugins:\n  disable: [tables]\n');
    const s = await startServer(root);
    try {
      const r = await s.request('GET', '/api/tables');
      assert.equal(r.status, 404);
      assert.equal(r.body.error.code, 'not_found');
      assert.equal((await s.request('POST', '/api/query', { sql: 'SELECT 1' })).status, 200, 'the rest still serves');
      assert.deepEqual((await s.request('GET', '/api/plugins')).body.disabled, ['tables']);
    } finally {
      await s.close();
    }
    const [help, gone] = await runCliBatch([{ args: ['--help', '--project', root] }, { args: ['tables', '--project', root] }]);
    assert.equal(help.code, 0, help.stderr);
    assert.doesNotMatch(help.stdout, /dp tables/);
    assert.match(help.stdout, /dp query/);
    assert.equal(gone.code, 1);
    assert.match(gone.stderr, /Unknown argument: tables|Unknown command/i);
  });

  it('names the file and the field of a bad manifest', async () => {
    const bad = JSON.parse(GREETER['plugins/greeter/plugin.json']);
    bad.contributes.routes[0].permission = 'superuser';
    const root = project('plugins:\n  paths: [plugins]\n', { ...GREETER, 'plugins/greeter/plugin.json': JSON.stringify(bad) });
    await assert.rejects(App.boot({ projectRoot: root }), (e: DpError) => {
      assert.equal(e.code, 'invalid_plugin_manifest');
      assert.ok(e.message.includes(path.join(root, 'plugins/greeter/plugin.json')), e.message);
      assert.match(e.message, /contributes\.routes\.0\.permission/);
      return true;
    });
    const noName = JSON.parse(GREETER['plugins/greeter/plugin.json']);
    delete noName.name;
    const root2 = project('plugins:\n  paths: [plugins]\n', { ...GREETER, 'plugins/greeter/plugin.json': JSON.stringify(noName) });
    await assert.rejects(App.boot({ projectRoot: root2 }), /field 'name' must have required property 'name'/);
    const cli = runCli(['--help', '--project', root2]);
    assert.equal(cli.code, 1);
    assert.match(cli.stderr, /plugin\.json: field 'name'/);
  });

  it('names both plugins when a required plugin is missing or disabled', async () => {
    const m = JSON.parse(GREETER['plugins/greeter/plugin.json']);
    m.requires = ['warp-drive'];
    const root = project('plugins:\n  paths: [plugins]\n', { ...GREETER, 'plugins/greeter/plugin.json': JSON.stringify(m) });
    await assert.rejects(App.boot({ projectRoot: root }), /Plugin 'greeter' requires plugin 'warp-drive', which is not installed/);
    const root2 = project('plugins:\n  paths: [plugins]\n  disable: [query]\n', GREETER);
    await assert.rejects(App.boot({ projectRoot: root2 }), /Plugin 'greeter' requires plugin 'query', which project\.yml disables/);
  });

  it('refuses a route the manifest does not declare, or declares with another permission', async () => {
    const code = GREETER['plugins/greeter/index.mjs'];
    const undeclared = project('plugins:\n  paths: [plugins]\n', {
      ...GREETER,
      'plugins/greeter/index.mjs': code.replace("ctx.command('greet'", "ctx.route({ method: 'DELETE', url: '/api/greeter/:name', permission: 'write', handler: () => ({}) });\n    ctx.command('greet'"),
    });
    await assert.rejects(App.boot({ projectRoot: undeclared }), /registers DELETE \/api\/greeter\/:name, which its plugin\.json does not declare/);
    const mismatch = project('plugins:\n  paths: [plugins]\n', {
      ...GREETER,
      'plugins/greeter/index.mjs': code.replace("url: '/api/greeter/:name', permission: 'read'", "url: '/api/greeter/:name', permission: 'public'"),
    });
    await assert.rejects(App.boot({ projectRoot: mismatch }), /plugin\.json says 'read', the code says 'public'/);
    const noPermission = project('plugins:\n  paths: [plugins]\n', {
      ...GREETER,
      'plugins/greeter/index.mjs': code.replace("url: '/api/greeter/:name', permission: 'read',", "url: '/api/greeter/:name',"),
    });
    await assert.rejects(App.boot({ projectRoot: noPermission }), /declares no permission/);
  });

  it('refuses an undeclared hook tap', async () => {
    const code = GREETER['plugins/greeter/index.mjs'].replace("ctx.tap('afterQuery'", "ctx.tap('beforeQuery'");
    const root = project('plugins:\n  paths: [plugins]\n', { ...GREETER, 'plugins/greeter/index.mjs': code });
    await assert.rejects(App.boot({ projectRoot: root }), /taps 'beforeQuery' without declaring it/);
  });

  it('refuses an unknown name in plugins.disable', async () => {
    await assert.rejects(App.boot({ projectRoot: project('plugins:\n  disable: [nope]\n') }), /plugins\.disable names 'nope'/);
  });

  it('runs plugin migrations once per database', async () => {
    const files = {
      ...GREETER,
      'plugins/greeter/index.mjs': `export default { setup(ctx) {
        ctx.migrate([
          { id: 'greeter-001', sql: 'CREATE TABLE IF NOT EXISTS _service.greetings (n INTEGER)' },
          { id: 'greeter-002', sql: 'INSERT INTO _service.greetings VALUES (1)' },
        ]);
        ctx.services.provide('greeter', {});
        ctx.tap('afterQuery', async () => {});
        ctx.route({ method: 'GET', url: '/api/greeter/:name', permission: 'read', handler: () => ({}) });
        ctx.command('greet', () => 0);
      } };`,
    };
    const root = project('plugins:\n  paths: [plugins]\n', files);
    for (let i = 0; i < 2; i++) {
      const app = await App.boot({ projectRoot: root });
      await app.start();
      assert.equal(await app.db.value('SELECT count(*) FROM _service.greetings'), 1);
      await app.close();
    }
    assert.ok(fs.existsSync(path.join(root, 'p.duckdb')));
  });
});
