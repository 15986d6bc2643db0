/**
 * The sdk's project readers (walker, YAML, ajv errors, notebooks) and durable project writes,
 * on real folders with real symlinks.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { Ajv } from 'ajv';
import { loadProject } from '../../kernel/config.js';
import { EnvSecretsStore } from '../../kernel/secrets.js';
import { readIngestScripts } from '../../plugins/lineage/full-dag.js';
import { loadContracts } from '../../plugins/quality/contracts.js';
import { ajvFieldError, isDpError, isHiddenName, jsonSchemaProblem, projectTree, readNotebook, readYaml, toYaml, walkProjectFiles, type PluginContext } from '../../sdk/index.js';
import { makeProject, REPO_ROOT, tempDir } from '../helpers.js';

const CONTRACT = 'contracts:\n  - name: outside_contract\n    model: main.t\n    assertions: ["row_count > 0"]\n';

/** A project with hidden names, a symlink inside, symlinks out of the project and a loop. */
function projectWithLinks() {
  const outside = tempDir('dp-outside-');
  fs.writeFileSync(path.join(outside, 'evil.yml'), CONTRACT);
  fs.writeFileSync(path.join(outside, 'evil.sql'), 'CREATE TABLE stolen AS SELECT 1');
  const root = makeProject({
    'contracts/ok.yml': 'contracts:\n  - name: inside\n    model: main.t\n    assertions: ["row_count > 0"]\n',
    'contracts/.#ok.yml': CONTRACT.replace('outside_contract', 'editor_lock_file'),
    'ingest/load.sql': 'CREATE TABLE raw.a AS SELECT 1',
    'shared/common.sql': 'CREATE TABLE raw.shared AS SELECT 1',
    'transform/.git/HEAD': 'ref',
    'node_modules/x/index.js': '',
    '.env': 'K=secretvalue',
    '.gitignore': '*.duckdb',
    'w.duckdb': '',
  });
  fs.symlinkSync(path.join(outside, 'evil.yml'), path.join(root, 'contracts', 'evil.yml'));
  fs.symlinkSync(path.join(outside, 'evil.sql'), path.join(root, 'ingest', 'evil.sql'));
  fs.symlinkSync(outside, path.join(root, 'ingest', 'outside_dir'));
  fs.symlinkSync(path.join(root, 'shared'), path.join(root, 'ingest', 'shared'));
  fs.symlinkSync(path.join(root, 'ingest'), path.join(root, 'ingest', 'loop'));
  return { root, project: loadProject(root) };
}

describe('project walker', () => {
  it('applies one hidden rule and the symlink checks of ctx.project.resolve', () => {
    const { project } = projectWithLinks();
    const all = walkProjectFiles(project, '').map((f) => f.path);
    assert.ok(all.includes('.gitignore') && all.includes('project.yml'), all.join(','));
    for (const hidden of ['.env', 'w.duckdb', 'transform/.git/HEAD', 'node_modules/x/index.js', 'contracts/.#ok.yml']) assert.ok(!all.includes(hidden), hidden);
    assert.ok(!all.some((p) => p.includes('evil') || p.includes('outside_dir')), 'nothing behind a symlink out of the project');
    assert.ok(all.includes('ingest/shared/common.sql'), 'a symlink inside is followed and keeps its own path');
    assert.equal(all.filter((p) => p.endsWith('common.sql')).length, 2, 'the loop ingest/loop -> ingest is not walked again');
    for (const [name, hidden] of [['.env.example', false], ['.env.local', true], ['node_modules', true], ['.sqlfluff', false], ['x.duckdb.wal', true]] as const) {
      assert.equal(isHiddenName(name), hidden, name);
    }
    const tree = projectTree(project);
    assert.equal(tree[0].type, 'directory', 'folders first');
    assert.ok(!JSON.stringify(tree).includes(project.root), 'the tree carries no absolute path');
  });

  it('is what contracts and the lineage ingest scan use: a file linked from outside is never read', () => {
    const { project } = projectWithLinks();
    const { contracts, errors } = loadContracts({ project } as unknown as PluginContext);
    assert.deepEqual(
      contracts.map((c) => c.name),
      ['inside'],
    );
    assert.deepEqual(errors, []);
    const scripts = readIngestScripts(project).map((s) => s.path);
    assert.deepEqual(scripts, ['ingest/load.sql', 'ingest/shared/common.sql']);
  });
});

describe('YAML, ajv and notebook helpers', () => {
  it('jsonSchemaProblem (the meta-schema compiled by the build) words a bad schema as ajv does at run time', () => {
    const runtime = new Ajv({ strict: false });
    const schemas = [
      { type: 'object', properties: { a: { type: 'string', default: 'x' } }, required: ['a'] },
      { type: 'object', properties: { a: { type: 'nonsense' } } },
      { type: 'object', required: 'a' },
      { properties: { n: { type: 'integer', minimum: 'zero' } } },
      { type: 'object', properties: { a: { enum: [] } } },
    ];
    for (const schema of schemas) {
      const expected = runtime.validateSchema(schema) ? null : runtime.errorsText(runtime.errors);
      assert.equal(jsonSchemaProblem(schema), expected, JSON.stringify(schema));
    }
    assert.equal(jsonSchemaProblem(schemas[0]), null);
    assert.match(jsonSchemaProblem(schemas[1])!, /^data\/properties\/a\/type must be/);
  });

  it("one copy of yaml per process: the package's own require answers the sdk's bundle (a server's @fastify/swagger loads no second copy)", () => {
    // A process of its own: in a test worker another file may have required the package first.
    const sdkYaml = path.join(REPO_ROOT, 'dist', 'sdk', 'yaml.js');
    const script = `import { createRequire } from 'node:module';
      const { yaml } = await import(${JSON.stringify(sdkYaml)});
      const require = createRequire(${JSON.stringify(sdkYaml)});
      const packageModules = Object.keys(require.cache).filter((f) => f.includes('/node_modules/yaml/'));
      process.stdout.write(JSON.stringify({ same: require('yaml') === yaml, packageModules: packageModules.length, parses: require('yaml').parse('a: [1, x]') }));`;
    const out = JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' }));
    assert.deepEqual(out, { same: true, packageModules: 1, parses: { a: [1, 'x'] } });
    assert.equal(toYaml({ on: { push: null }, steps: ['a: b'] }, { lineWidth: 0 }), "on:\n  push: null\nsteps:\n  - \"a: b\"\n");
  });

  it('readYaml names the file and line of a syntax error, and finds lines of paths', () => {
    try {
      readYaml('a: 1\nb:\n  - [unclosed\n', 'contracts/x.yml');
      assert.fail('should throw');
    } catch (e) {
      assert.ok(isDpError(e));
      assert.equal(e.code, 'invalid_yaml');
      assert.match(e.message, /^contracts\/x\.yml line \d+: /);
      assert.equal(typeof e.details.line, 'number');
    }
    const ok = readYaml('a: 1\nb:\n  c: [1, 2]\n', 'p.yml');
    assert.deepEqual(ok.value, { a: 1, b: { c: [1, 2] } });
    assert.equal(ok.lineOf(['b', 'c', 1]), 3);
    assert.equal(ok.lineOf(['b', 'missing']), 3, 'the nearest existing parent: the value of b');
  });

  it('ajvFieldError names the field itself for missing, unknown and enum errors', () => {
    const ajv = new Ajv({ allErrors: false });
    const validate = ajv.compile({
      type: 'object',
      additionalProperties: false,
      required: ['model'],
      properties: { model: { type: 'string' }, opts: { type: 'object', properties: { mode: { enum: ['a', 'b'] } } }, list: { type: 'array', items: { type: 'number' } } },
    });
    const first = (v: unknown) => (assert.equal(validate(v), false), ajvFieldError(validate.errors![0]));
    assert.deepEqual(first({}), { field: 'model', parts: ['model'], message: "missing required property 'model'" });
    assert.deepEqual(first({ model: 'x', extra: 1 }), { field: 'extra', parts: ['extra'], message: "unknown property 'extra'" });
    assert.deepEqual(first({ model: 'x', opts: { mode: 'c' } }), { field: 'opts.mode', parts: ['opts', 'mode'], message: "'opts.mode' must be one of a, b" });
    assert.deepEqual(first({ model: 'x', list: [1, 'two'] }).parts, ['list', 1]);
  });

  it('readNotebook reads cells and refuses what is not a notebook', () => {
    assert.deepEqual(readNotebook('{"cells":[{"type":"sql","source":["SELECT ","1"]},{"type":"markdown"}]}', 'n.dpnb').cells, [
      { type: 'sql', source: 'SELECT 1' },
      { type: 'markdown', source: '' },
    ]);
    for (const bad of ['not json', '{"cells": 3}', 'null']) assert.throws(() => readNotebook(bad, 'n.dpnb'), (e: { code?: string }) => e.code === 'invalid_notebook');
  });
});

describe('durable project writes', () => {
  it('the .env writer keeps the file private (its mode) and leaves no temp file', async () => {
    const root = makeProject({ '.env': 'A=1\n' });
    fs.chmodSync(path.join(root, '.env'), 0o600);
    const store = new EnvSecretsStore(root, () => {});
    await store.set('B', 'two');
    assert.equal(fs.statSync(path.join(root, '.env')).mode & 0o777, 0o600);
    assert.equal(fs.readFileSync(path.join(root, '.env'), 'utf8'), 'A=1\nB=two\n');
    assert.deepEqual(fs.readdirSync(root).sort(), ['.env', 'project.yml']);
  });

  it('ctx.project.writeFile keeps an executable script executable', () => {
    const root = makeProject({ 'ingest/run.sh': '#!/bin/sh\n' });
    fs.chmodSync(path.join(root, 'ingest/run.sh'), 0o755);
    loadProject(root).writeFile('ingest/run.sh', '#!/bin/sh\necho hi\n');
    assert.equal(fs.statSync(path.join(root, 'ingest/run.sh')).mode & 0o777, 0o755);
    assert.equal(fs.readFileSync(path.join(root, 'ingest/run.sh'), 'utf8'), '#!/bin/sh\necho hi\n');
  });
});
