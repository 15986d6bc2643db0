/**
 * On an environment whose target is ClickHouse, the features that work on the local DuckDB file
 * only (versions, backups, notebook TypeScript cells, explain, a sync's file_tracking) refuse with
 * `not_on_target`, and nothing reaches the server (the url below has no server); a query goes to
 * the target, never to the local file. Without a target they work as before.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import type { App } from '../../../kernel/app.js';
import { runCommand } from '../../../sdk/testing.js';
import { bootApp, makeProject, startServer } from '../../helpers.js';

const root = () =>
  makeProject({
    'project.yml': 'name: t\ndatabase:\n  path: t.duckdb\nenvironments:\n  prod:\n    target:\n      type: clickhouse\n      url: http://127.0.0.1:9\n      database: shop\n      password: ${CH_PASSWORD}\n  dev: {}\n',
    '.env': 'CH_PASSWORD=never-shown-secret\n',
  });

describe('DuckDB-only features on a ClickHouse environment', () => {
  const apps: App[] = [];
  after(async () => {
    for (const a of apps) await a.close();
  });

  it('versions and backups refuse with not_on_target, naming the environment and no secret', async () => {
    const app = await bootApp(root(), { env: 'prod' });
    apps.push(app);
    for (const argv of [['versions', 'create'], ['backup']]) {
      const r = await runCommand(app, [...argv, '--json']);
      assert.equal(r.code, 1, argv.join(' '));
      assert.match(r.stdout + r.stderr, /works on the local DuckDB file only; the environment 'prod' builds into ClickHouse/);
      assert.doesNotMatch(r.stdout + r.stderr, /never-shown-secret/);
    }
    // A query goes to the target (here no server answers), never to the local file.
    const query = await runCommand(app, ['query', 'SELECT 1 AS one', '--json']);
    assert.equal(query.code, 1, query.stdout);
    assert.match(query.stdout + query.stderr, /ClickHouse/);
    assert.doesNotMatch(query.stdout + query.stderr, /never-shown-secret/);
  });

  it('a connector sync in a cdc_mode the target lacks refuses with not_on_target naming the mode, before any row is read', async () => {
    const dir = root();
    fs.mkdirSync(path.join(dir, 'data/exports'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'data/exports/products.csv'), 'id,name\n1,a\n');
    const s = await startServer(dir, { env: 'prod' });
    try {
      const setup = await s.request('POST', '/api/connectors/setup', { connector_type: 'csv', connection_name: 'exports', config: { path: 'data/exports' }, tables: [{ name: 'products', cdc_mode: 'file_tracking' }], target_schema: 'raw' });
      assert.equal(setup.status, 200, setup.text);
      const sync = await s.request('POST', '/api/connectors/sync/exports');
      assert.equal(sync.status, 400, sync.text);
      assert.equal(sync.body.error.code, 'not_on_target');
      assert.match(sync.body.error.message, /A connector sync with cdc_mode 'file_tracking' \(table 'products'\) works on the local DuckDB file only/);
      assert.equal(await s.app.db.catalog.exists('raw', 'products'), false);
    } finally {
      await s.close();
    }
  });

  it('without a target the same commands run on the DuckDB file', async () => {
    const app = await bootApp(root(), { env: 'dev' });
    apps.push(app);
    const r = await runCommand(app, ['backup', '--json']);
    assert.equal(r.code, 0, r.stdout + r.stderr);
  });

  it('a target with a wrong shape is refused at load with its line', async () => {
    const bad = makeProject({ 'project.yml': 'name: t\nenvironments:\n  prod:\n    target:\n      type: clickhouse\n      port: 8123\n' });
    await assert.rejects(bootApp(bad, { env: 'prod' }), (e: any) => e.code === 'invalid_project_yml' && /line 5: 'environments.prod.target' must NOT have additional properties \('port'\)/.test(e.message));
  });
});
