/**
 * The example third-party plugin that adds a CLI command: in process through sdk/testing's
 * runCommand, and through the real `dp` only where the process is the point (what `--help` and a
 * run import).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runCommand, startTestServer, type PluginTestServer } from '../../sdk/testing.js';
import { makeProject, REPO_ROOT, runCli } from '../helpers.js';

const PLUGIN = path.join(REPO_ROOT, 'examples', 'plugins', 'command-largest-tables');

/** A plugin whose code fails the moment it is imported: loading it at all fails the command. */
function explodingPlugin(name: string, command: string): string {
  return makeProject({
    'plugin.json': JSON.stringify({ name, version: '1.0.0', entry: './index.mjs', contributes: { commands: [{ command, describe: `Belongs to ${name}` }] } }),
    'index.mjs': `throw new Error('${name} was imported');\n`,
  });
}

describe('examples/plugins/command-largest-tables', () => {
  let s: PluginTestServer;
  before(async () => {
    s = await startTestServer({ plugins: [PLUGIN] });
    await s.db.run('CREATE SCHEMA crm; CREATE TABLE crm.customers AS SELECT range AS id FROM range(50); CREATE TABLE main.notes AS SELECT range AS id FROM range(3)');
  });
  after(async () => s.close());

  it('lists tables largest first, honours --limit and --json', async () => {
    const text = await runCommand(s.app, ['largest-tables']);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /crm\s+customers\s+50[\s\S]*main\s+notes\s+3/);
    assert.doesNotMatch(text.stdout, /_service/);
    const json = await runCommand(s.app, ['largest-tables', '--limit', '1', '--json']);
    assert.deepEqual(JSON.parse(json.stdout), [{ schema: 'crm', table: 'customers', rows: 50, columns: 1 }]);
  });

  it('refuses a bad --limit with exit code 1', async () => {
    const r = await runCommand(s.app, ['largest-tables', '--limit', '0']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /--limit/);
  });

  it('dp --help lists the command from the manifest alone (its code never runs)', () => {
    // The example's own manifest beside code that fails when imported.
    const code = makeProject({ 'plugin.json': fs.readFileSync(path.join(PLUGIN, 'plugin.json'), 'utf8'), 'index.mjs': "throw new Error('imported for --help');\n" });
    const root = makeProject({ 'project.yml': `name: t\ndatabase:\n  path: t.duckdb\nplugins:\n  paths: [${JSON.stringify(code)}]\n` });
    const r = runCli(['--help', '--project', root]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /dp largest-tables\s+The project's tables by row count/);
  });

  it('running it loads only its plugin: another plugin that fails on import does not stop it', () => {
    const other = explodingPlugin('exploding', 'explode');
    const root = makeProject({ 'project.yml': `name: t\ndatabase:\n  path: t.duckdb\nplugins:\n  paths: [${JSON.stringify(PLUGIN)}, ${JSON.stringify(other)}]\n` });
    const r = runCli(['largest-tables', '--project', root]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /\(0 rows\)/);
    // The same process does load that plugin when its own command runs: the check above can fail.
    const explode = runCli(['explode', '--project', root]);
    assert.equal(explode.code, 1);
    assert.match(explode.stderr, /exploding was imported/);
  });
});
