/**
 * Model SQL reads the host (issue 10 point 7): a model may read project files (seeds), never a
 * file outside the project, a hidden file or the database, by a file function or a replacement scan.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { ModelsService } from '../../sdk/index.js';
import type { App } from '../../kernel/app.js';
import { bootApp, makeProject, startServer } from '../helpers.js';

const SECRET = 'hunter2-dotenv-secret';

describe('files read by model SQL', () => {
  let app: App;
  let models: ModelsService;
  let root = '';
  before(async () => {
    root = makeProject({
      '.env': `API_KEY=${SECRET}\n`,
      '.hidden/data.csv': `a\n${SECRET}\n`,
      'seeds/people.csv': 'id,name\n1,ann\n',
      'data/part1.csv': 'a\n1\n',
      'data/part2.csv': 'a\n2\n',
    });
    fs.writeFileSync(path.join(root, 'data', '.secret.csv'), `a\n${SECRET}\n`);
    fs.symlinkSync(path.join(root, '.env'), path.join(root, 'data', 'link.txt'));
    app = await bootApp(root);
    models = app.services.get<ModelsService>('models');
  });
  after(async () => app.close());

  const build = async (sql: string) => {
    const dir = path.join(root, 'transform');
    fs.rmSync(dir, { recursive: true, force: true });
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'probe.sql'), `-- @config materialized=table, schema=main\n${sql}\n`);
    try {
      const summary = await models.transform({ force: true });
      return summary.results.find((r) => r.model === 'main.probe')!;
    } catch (e) {
      // The models plugin refuses a reference it cannot place in the DAG before building.
      return { status: 'error', error: (e as Error).message };
    }
  };

  const refused = (): Array<[string, string]> => [
    ['the host through read_text', `SELECT * FROM read_text('/etc/passwd')`],
    ['the host through read_csv', `SELECT * FROM read_csv('/etc/passwd')`],
    ['.env through read_text', `SELECT * FROM read_text('${root}/.env')`],
    ['.env through a glob', `SELECT * FROM read_text('${root}/.en[v]')`],
    ['.env through a star glob', `SELECT content FROM read_text('${root}/*') WHERE content LIKE '%API_KEY%'`],
    ['a dot-file matched by a folder glob', `SELECT * FROM read_csv('${root}/data/*.csv')`],
    ['a hidden folder', `SELECT * FROM read_csv('${root}/.hidden/data.csv')`],
    ['the database file', `SELECT * FROM read_blob('${root}/test.duckdb')`],
    ['the user store', `SELECT * FROM read_blob('${root}/.dp/users.duckdb')`],
    ['a symlink to .env', `SELECT * FROM read_text('${root}/data/link.txt')`],
    ['.env through a replacement scan', `SELECT * FROM '${root}/.en[.csv?v]'`],
    ['the host through a replacement scan', `SELECT * FROM '/etc/passw[d.csv?]'`],
    ['a path computed at run time', `SELECT * FROM read_text('${root}/' || '.env')`],
    ['a path escaping with ..', `SELECT * FROM read_text('${root}/seeds/../.env')`],
    ['SQL inside query()', `SELECT * FROM query('SELECT * FROM read_text(''/etc/passwd'')')`],
    ['a file read in a CTE', `WITH f AS (SELECT * FROM read_text('/etc/passwd')) SELECT * FROM f`],
  ];

  it('refuses every read outside the project, of hidden files or of the database', async () => {
    for (const [name, sql] of refused()) {
      const r = await build(sql);
      assert.equal(r.status, 'error', `${name}: ${sql} built`);
      assert.ok(!String(r.error).includes(SECRET), `${name}: the error shows the file`);
      assert.ok(!String(r.error).includes('root:'), `${name}: the error shows the host file`);
      const exists = await app.db.value("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'probe'");
      assert.equal(Number(exists), 0, `${name}: a table was built`);
    }
  });

  it('a model reading a relation the run has just built is still checked for every other reference', async () => {
    const dir = path.join(root, 'transform');
    fs.rmSync(dir, { recursive: true, force: true });
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'src.sql'), '-- @config materialized=table, schema=main\nSELECT 1 AS a\n');
    fs.writeFileSync(path.join(dir, 'ok.sql'), '-- @config materialized=table, schema=main\nSELECT a FROM main.src\n');
    fs.writeFileSync(path.join(dir, 'probe.sql'), `-- @config materialized=table, schema=main\nSELECT * FROM main.src, read_text('${root}/.env')\n`);
    fs.writeFileSync(path.join(dir, 'probe2.sql'), `-- @config materialized=table, schema=main\nWITH f AS (SELECT * FROM read_csv('/etc/passwd')) SELECT * FROM main.src, f\n`);
    const summary = await models.transform({ force: true });
    const status = (name: string) => summary.results.find((r) => r.model === name)!;
    assert.equal(status('main.src').status, 'built');
    assert.equal(status('main.ok').status, 'built', status('main.ok').error);
    for (const name of ['main.probe', 'main.probe2']) {
      assert.equal(status(name).status, 'error', `${name} built`);
      assert.match(String(status(name).error), /only inside the project|not allowed|refused/, `${name}: ${status(name).error}`);
      assert.ok(!String(status(name).error).includes(SECRET));
    }
    assert.equal(Number(await app.db.value("SELECT count(*) FROM duckdb_tables() WHERE table_name LIKE 'probe%'")), 0);
  });

  it('builds models that read project files', async () => {
    for (const sql of [
      `SELECT * FROM read_csv('${root}/seeds/people.csv')`,
      `SELECT * FROM read_csv('${root}/data/part*.csv')`,
      `SELECT * FROM read_csv(['${root}/data/part1.csv', '${root}/data/part2.csv'])`,
      `SELECT 1 AS a`,
    ]) {
      const r = await build(sql);
      assert.equal(r.status, 'built', `${sql}: ${r.error}`);
    }
  });
});

describe('dp check binds a model only after the same file check', () => {
  it('reports a model reading .env as refused, without binding it', async () => {
    const root = makeProject({ '.env': `API_KEY=${SECRET}\n` });
    fs.mkdirSync(path.join(root, 'transform'));
    fs.writeFileSync(path.join(root, 'transform', 'peek.sql'), `-- @config materialized=table, schema=main\nSELECT nope FROM read_csv('${root}/.env')\n`);
    const s = await startServer(root);
    try {
      const r = await s.request('POST', '/api/check', {});
      assert.equal(r.status, 200, r.text);
      const peek = r.body.validation.models.find((m: { name?: string; path?: string }) => String(m.path ?? m.name).includes('peek'));
      assert.ok(peek, r.text);
      assert.match(peek.errors.join('\n'), /only inside the project.*hidden/);
      assert.ok(!r.text.includes(SECRET));
    } finally {
      await s.close();
    }
  });
});

describe('a model reading a file is not served to a viewer', () => {
  it('the built table never exists, so /api/query has nothing to show', async () => {
    const root = makeProject({ 'transform/leak.sql': "-- @config materialized=table, schema=main\nSELECT * FROM read_text('/etc/passwd')\n" });
    const s = await startServer(root);
    try {
      const models = s.app.services.get<ModelsService>('models');
      const summary = await models.transform({});
      assert.equal(summary.results[0].status, 'error');
      const r = await s.request('POST', '/api/query', { sql: 'SELECT * FROM main.leak' });
      assert.equal(r.status, 404, r.text);
      assert.equal(r.body.error.code, 'table_not_found');
      assert.ok(!r.text.includes('root:'));
    } finally {
      await s.close();
    }
  });
});
