import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { App } from '../../kernel/app.js';
import { loadProject, parseProjectText, PROJECT_PARSE_CACHE, readProjectFile } from '../../kernel/config.js';
import { DpError } from '../../sdk/errors.js';
import { fileDpRelay, makeProject, startServer } from '../helpers.js';

/** The file's `dp` process: each command line through the binary's entry, one process start for the file. */
const dp = fileDpRelay();

const ENVS = `name: envs
database:
  path: base.duckdb
connections:
  pg:
    type: postgres
    password: \${PG_PASSWORD}
    user: \${PG_USER}
environments:
  dev:
    database:
      path: dev.duckdb
  prod:
    database:
      path: prod.duckdb
  memory:
    database:
      path: ":memory:"
`;

describe('project config', () => {
  it('applies defaults for every key', async () => {
    // Plugins' keys come with their plugin's defaults once the plugins are loaded (App.configOf).
    const app = await App.boot({ projectRoot: makeProject() });
    const p = app.project;
    const config = { ...p.config, alerts: app.configOf('alerts') as any, quality: app.configOf('quality') as any, lint: app.configOf('lint') as any };
    await app.close();
    assert.equal(p.config.database.path, 'test.duckdb');
    assert.deepEqual(config.alerts, { channels: [], on_success: false, on_failure: true });
    assert.deepEqual(config.quality.anomaly_detection, { enabled: true, lookback: 30, threshold: 2, notify: [] });
    assert.deepEqual(p.config.query.timeout_seconds, { admin: 300, editor: 120, viewer: 60 });
    assert.equal(config.lint.dialect, 'duckdb');
    assert.deepEqual(p.config.plugins, { disable: [], paths: [] });
  });

  it('a text parsed again (the CLI reads project.yml twice) gives each caller its own copy of the keys', () => {
    const text = 'name: once\ndatabase:\n  path: t.duckdb\nplugins:\n  disable: [agents]\n';
    const first = parseProjectText(text);
    (first.raw.plugins as { disable: string[] }).disable.push('changed by the first caller');
    first.raw.name = 'renamed';
    const second = parseProjectText(text);
    assert.deepEqual(second.raw, { name: 'once', database: { path: 't.duckdb' }, plugins: { disable: ['agents'] } });
    assert.equal(second.lineOf(['plugins', 'disable']), 5);
    assert.throws(() => parseProjectText('name: [unclosed\n'), (e: { code?: string }) => e.code === 'invalid_project_yml');
  });

  it('keeps the parse of project.yml for the next process, under the hash of the text, and parses again when the text changes', () => {
    const text = 'name: kept\ndatabase:\n  path: k.duckdb\nplugins:\n  disable: [agents]\n';
    const root = makeProject({ 'project.yml': text });
    const other = makeProject({ 'project.yml': 'name: other\n' });
    const cacheFile = path.join(root, PROJECT_PARSE_CACHE);
    assert.deepEqual(readProjectFile(root).raw, { name: 'kept', database: { path: 'k.duckdb' }, plugins: { disable: ['agents'] } });
    const kept = JSON.parse(fs.readFileSync(cacheFile, 'utf8'));
    assert.equal(kept.sha256, crypto.createHash('sha256').update(text).digest('hex'));
    // Another project in between, so that this process's own memory of the last text is gone: what
    // comes back is the kept parse (marked here), and its lines are still found from the text.
    readProjectFile(other);
    fs.writeFileSync(cacheFile, JSON.stringify({ ...kept, raw: { ...kept.raw, name: 'from the kept parse' } }));
    const again = readProjectFile(root);
    assert.equal(again.raw.name, 'from the kept parse');
    assert.equal(again.lineOf(['plugins', 'disable']), 5);
    // A kept parse that the kernel's schema refuses, or of another text, is not used.
    readProjectFile(other);
    fs.writeFileSync(cacheFile, JSON.stringify({ ...kept, raw: { ...kept.raw, database: 'not a mapping' } }));
    assert.equal(readProjectFile(root).raw.name, 'kept');
    fs.writeFileSync(path.join(root, 'project.yml'), text.replace('kept', 'edited'));
    assert.equal(readProjectFile(root).raw.name, 'edited');
    assert.equal(JSON.parse(fs.readFileSync(cacheFile, 'utf8')).raw.name, 'edited');
    // A value JSON cannot hold (YAML's .inf) keeps nothing: the next process parses again.
    const infinite = makeProject({ 'project.yml': 'name: inf\nlabels:\n  limit: .inf\n' });
    assert.deepEqual(readProjectFile(infinite).raw.labels, { limit: Infinity });
    assert.equal(fs.existsSync(path.join(infinite, PROJECT_PARSE_CACHE)), false);
  });

  it('expands ${VAR} from .env only, never from the process environment', () => {
    process.env.PG_USER = 'from-process';
    const root = makeProject({ 'project.yml': ENVS, '.env': 'PG_PASSWORD=s3cret\n' });
    const p = loadProject(root);
    assert.equal(p.config.connections.pg.password, 's3cret');
    assert.equal(p.config.connections.pg.user, '${PG_USER}');
    assert.deepEqual(p.unresolvedVars, ['PG_USER']);
    delete process.env.PG_USER;
  });

  it('overlays the environment database path; --env beats .service-env', () => {
    const root = makeProject({ 'project.yml': ENVS });
    assert.equal(loadProject(root).config.database.path, 'base.duckdb');
    fs.writeFileSync(path.join(root, '.service-env'), 'dev\n');
    assert.equal(loadProject(root).env, 'dev');
    assert.equal(loadProject(root).config.database.path, 'dev.duckdb');
    assert.equal(loadProject(root, 'prod').config.database.path, 'prod.duckdb');
    assert.equal(loadProject(root, 'memory').config.database.path, ':memory:');
  });

  it('names unknown environments and lists the available ones', () => {
    const root = makeProject({ 'project.yml': ENVS });
    assert.throws(
      () => loadProject(root, 'staging'),
      (e: DpError) => e.code === 'unknown_environment' && /staging/.test(e.message) && /dev, prod, memory/.test(e.message),
    );
  });

  it('reports malformed YAML with file and line', () => {
    const root = makeProject({ 'project.yml': 'name: x\ndatabase:\n  path: a.duckdb\nstreams: [unclosed\n' });
    assert.throws(
      () => loadProject(root),
      (e: DpError) => e.code === 'invalid_project_yml' && /project\.yml line \d+/.test(e.message) && typeof e.details.line === 'number',
    );
  });

  it('reports a wrong type with the key and its line', () => {
    const root = makeProject({ 'project.yml': 'name: x\nquery:\n  timeout_seconds:\n    admin: many\n' });
    assert.throws(
      () => loadProject(root),
      (e: DpError) => e.code === 'invalid_project_yml' && e.details.line === 4 && e.details.field === 'query.timeout_seconds.admin',
    );
  });

  it('says clearly when there is no project', async () => {
    assert.throws(() => loadProject('/nonexistent/dp'), (e: DpError) => e.code === 'project_not_found');
    const r = await dp.run(['tables', '--project', '/tmp']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /No project\.yml in \/tmp/);
  });
});

describe('dp env', () => {
  it('uses, shows, lists and resets the persistent environment', async () => {
    const root = makeProject({ 'project.yml': ENVS });
    const run = (...args: string[]) => ({ args: [...args, '--project', root] });
    const [used, showRun, overriddenRun, listRun, bad] = await dp.batch([
      run('env', 'use', 'prod'),
      run('env', 'show', '--json'),
      run('env', 'show', '--json', '--env', 'dev'),
      run('env', 'list', '--json'),
      run('env', 'use', 'nope'),
    ]);
    assert.equal(used.code, 0, used.stderr);
    assert.equal(fs.readFileSync(path.join(root, '.service-env'), 'utf8').trim(), 'prod');
    const show = JSON.parse(showRun.stdout);
    assert.equal(show.active, 'prod');
    assert.equal(show.database_path, path.join(root, 'prod.duckdb'));
    const overridden = JSON.parse(overriddenRun.stdout);
    assert.equal(overridden.active, 'dev');
    const list = JSON.parse(listRun.stdout);
    assert.deepEqual(
      list.map((e: { name: string; active: boolean }) => [e.name, e.active]),
      [
        ['dev', false],
        ['prod', true],
        ['memory', false],
      ],
    );
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /Unknown environment 'nope'/);
    assert.equal(fs.readFileSync(path.join(root, '.service-env'), 'utf8').trim(), 'prod', 'an unknown environment changes nothing');
    assert.equal((await dp.run(['env', 'reset', '--project', root])).code, 0);
    assert.ok(!fs.existsSync(path.join(root, '.service-env')));
  });

  it('--env selects the database for one command', async () => {
    const root = makeProject({ 'project.yml': ENVS });
    await dp.run(['query', 'SELECT 1', '--env', 'dev', '--project', root]);
    assert.ok(fs.existsSync(path.join(root, 'dev.duckdb')));
    assert.ok(!fs.existsSync(path.join(root, 'base.duckdb')));
  });
});

describe('/api/environment', () => {
  it('reports and switches the environment, reopening the database', async () => {
    const root = makeProject({ 'project.yml': ENVS });
    const s = await startServer(root, { env: 'dev' });
    try {
      const r = await s.request('GET', '/api/environment');
      // Project-relative: no answer carries the machine's folders (issue 33 point 7).
      assert.deepEqual(r.body, { active: 'dev', available: ['dev', 'prod', 'memory'], database_path: 'dev.duckdb' });
      await s.app.db.run('CREATE TABLE only_in_dev AS SELECT 1 AS x');
      const sw = await s.request('PUT', '/api/environment/prod');
      assert.equal(sw.status, 200, sw.text);
      assert.equal(sw.body.active, 'prod');
      assert.equal(sw.body.database_path, 'prod.duckdb');
      const q = await s.request('POST', '/api/query', { sql: 'SELECT * FROM only_in_dev' });
      assert.equal(q.status, 404, 'the prod database does not have the dev table');
      assert.equal(fs.readFileSync(path.join(root, '.service-env'), 'utf8').trim(), 'prod');
      const bad = await s.request('PUT', '/api/environment/nope');
      assert.equal(bad.status, 400);
      assert.equal(bad.body.error.code, 'unknown_environment');
      assert.equal((await s.request('GET', '/api/environment')).body.active, 'prod', 'a failed switch keeps the current one');
      await s.request('PUT', '/api/environment/dev');
      const back = await s.request('POST', '/api/query', { sql: 'SELECT x FROM only_in_dev' });
      assert.deepEqual(back.body.rows, [[1]]);
    } finally {
      await s.close();
    }
  });
});
