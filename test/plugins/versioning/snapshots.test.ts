/**
 * Snapshots (metadata only) through the server and the CLI (in process, sdk/testing runCommand):
 * file hashes, table signatures, `dp diff --snapshot` beside the models plugin's `dp diff`, and
 * the versions CLI.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { cliInProcess, makeProject, REPO_ROOT, startServer } from '../../helpers.js';

const PROJECT = {
  'project.yml': 'name: snap\ndatabase:\n  path: snap.duckdb\n',
  'transform/shop/orders.sql': 'SELECT i AS id, i * 2 AS amount FROM range(40) t(i)\n',
  'transform/shop/big_orders.sql': 'SELECT * FROM shop.orders WHERE amount > 20\n',
  'ingest/load.ts': 'export default async () => {};\n',
};

describe('versioning: snapshots', () => {
  it('records file hashes and table signatures; the diff names added, modified and removed files and tables with row counts', async () => {
    const root = makeProject(PROJECT);
    const s = await startServer(root);
    try {
      assert.equal((await s.request('POST', '/api/transform', {})).body.status, 'success');
      const created = await s.request('POST', '/api/snapshot', { name: 'before' });
      assert.equal(created.status, 200, created.text);
      assert.equal(created.body.name, 'before');
      assert.equal(created.body.file_count, 4);
      assert.equal(created.body.table_count, 2);
      assert.match(created.body.project_hash, /^[0-9a-f]{64}$/);
      const unnamed = await s.request('POST', '/api/snapshot');
      assert.equal(unnamed.status, 200, unnamed.text);
      assert.match(unnamed.body.name, /^snapshot-\d{8}-\d{6}$/);
      assert.equal(unnamed.body.project_hash, created.body.project_hash, 'nothing changed: same combined hash');

      const same = await s.request('GET', '/api/snapshots/before/diff');
      assert.equal(same.body.changed, false);
      assert.deepEqual(same.body.files, { added: [], modified: [], removed: [] });
      assert.deepEqual(same.body.tables, []);

      fs.writeFileSync(path.join(root, 'transform/shop/orders.sql'), 'SELECT i AS id, i * 2 AS amount, 1 AS flag FROM range(50) t(i)\n');
      fs.rmSync(path.join(root, 'transform/shop/big_orders.sql'));
      fs.mkdirSync(path.join(root, 'export'));
      fs.writeFileSync(path.join(root, 'export/out.ts'), 'export default async () => {};\n');
      await s.app.db.run('DROP TABLE shop.big_orders; CREATE TABLE shop.extra AS SELECT 1 AS x');
      await s.request('POST', '/api/transform', {});

      const d = await s.request('GET', '/api/snapshots/before/diff');
      assert.equal(d.status, 200, d.text);
      assert.equal(d.body.changed, true);
      assert.deepEqual(d.body.files, { added: ['export/out.ts'], modified: ['transform/shop/orders.sql'], removed: ['transform/shop/big_orders.sql'] });
      assert.deepEqual(d.body.tables, [
        { table: 'shop.big_orders', status: 'removed', rows_before: 29, rows_after: null, schema_changed: false },
        { table: 'shop.extra', status: 'added', rows_before: null, rows_after: 1, schema_changed: false },
        { table: 'shop.orders', status: 'modified', rows_before: 40, rows_after: 50, schema_changed: true },
      ]);

      const list = await s.request('GET', '/api/snapshots');
      assert.deepEqual(list.body.map((x: { name: string }) => x.name).sort(), ['before', unnamed.body.name].sort());
      assert.equal((await s.request('POST', '/api/snapshot', { name: 'before' })).status, 409);
      for (const bad of ['../x', 'a/b', '', 'x'.repeat(101)]) {
        const r = await s.request('POST', '/api/snapshot', { name: bad });
        assert.equal(r.status, 400, `${bad}: ${r.text}`);
        assert.equal(r.body.error.code, 'invalid_snapshot_name');
      }
      assert.equal((await s.request('GET', '/api/snapshots/nope/diff')).status, 404);
      assert.equal((await s.request('DELETE', '/api/snapshots/..%2Fx')).status, 400);
      assert.equal((await s.request('DELETE', `/api/snapshots/${unnamed.body.name}`)).status, 200);
      assert.equal((await s.request('DELETE', `/api/snapshots/${unnamed.body.name}`)).status, 404);
    } finally {
      await s.close();
    }
  });

  it('dp snapshot and dp diff --snapshot in the CLI; dp diff without it still compares models', async (t) => {
    const root = makeProject(PROJECT);
    const dp = cliInProcess(root);
    t.after(() => dp.close());
    const cli = (...args: string[]) => dp.run(args);
    assert.equal((await cli('transform')).code, 0);
    const snap = await cli('snapshot', '--name', 'base', '--json');
    assert.equal(snap.code, 0, snap.stderr);
    assert.equal(JSON.parse(snap.stdout).name, 'base');
    fs.writeFileSync(path.join(root, 'transform/shop/orders.sql'), 'SELECT i AS id, i * 2 AS amount FROM range(45) t(i)\n');

    const models = await cli('diff', '--json');
    assert.equal(models.code, 0, models.stderr);
    const orders = JSON.parse(models.stdout).models.find((m: { model: string }) => m.model === 'shop.orders');
    assert.equal(orders.rows_after, 45, 'the models plugin answered dp diff: it re-ran the model');

    assert.equal((await cli('transform')).code, 0);
    const text = await cli('diff', '--snapshot', 'base');
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /transform\/shop\/orders\.sql\s+modified/);
    assert.match(text.stdout, /shop\.orders\s+modified\s+40\s+45/);
    const json = JSON.parse((await cli('diff', '--snapshot', 'base', '--json')).stdout);
    assert.deepEqual(json.files.modified, ['transform/shop/orders.sql']);
    const missing = await cli('diff', '--snapshot', 'nope');
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /No snapshot 'nope'/);
    const listed = JSON.parse((await cli('snapshot', '--list', '--json')).stdout);
    assert.deepEqual(listed.map((x: { name: string }) => x.name), ['base']);
    assert.equal((await cli('snapshot', '--delete', 'base')).code, 0);
    assert.deepEqual(JSON.parse((await cli('snapshot', '--list', '--json')).stdout), []);
  });

  it('with the models plugin disabled, dp diff needs --snapshot (400 option_required) and dp diff --snapshot still works', async (t) => {
    // models and every plugin that requires it, directly or through another.
    const manifests = fs.readdirSync(path.join(REPO_ROOT, 'plugins')).flatMap((d) => {
      const file = path.join(REPO_ROOT, 'plugins', d, 'plugin.json');
      return fs.existsSync(file) ? [JSON.parse(fs.readFileSync(file, 'utf8')) as { name: string; requires?: string[] }] : [];
    });
    const off = new Set(['models']);
    for (let grew = true; grew; ) {
      grew = false;
      for (const m of manifests) if (!off.has(m.name) && (m.requires ?? []).some((r) => off.has(r))) grew = Boolean(off.add(m.name));
    }
    const root = makeProject({ 'project.yml': `name: nomodels\ndatabase:\n  path: n.duckdb\nplugins:\n  disable: [${[...off].join(', ')}]\n` });
    const dp = cliInProcess(root);
    t.after(() => dp.close());
    const cli = (...args: string[]) => dp.run(args);
    const bare = await cli('diff');
    assert.equal(bare.code, 1);
    assert.match(bare.stderr, /needs --snapshot/);
    assert.equal((await cli('snapshot', '--name', 'a')).code, 0);
    const d = await cli('diff', '--snapshot', 'a', '--json');
    assert.equal(d.code, 0, d.stderr);
    assert.equal(JSON.parse(d.stdout).changed, false);
  });

  it('dp versions create/list/show/diff/restore/timeline/cleanup/delete', async (t) => {
    const root = makeProject(PROJECT);
    const dp = cliInProcess(root);
    t.after(() => dp.close());
    const cli = (...args: string[]) => dp.run(args);
    assert.equal((await cli('transform')).code, 0);
    const created = await cli('versions', 'create', '--description', 'one', '--json');
    assert.equal(created.code, 0, created.stderr);
    const v1 = JSON.parse(created.stdout).version_id;
    assert.match(created.stderr, /\[1\/2\] shop\.big_orders: 29 rows/, 'progress per table');
    fs.writeFileSync(path.join(root, 'transform/shop/orders.sql'), 'SELECT i AS id, i * 2 AS amount FROM range(10) t(i)\n');
    assert.equal((await cli('transform')).code, 0);
    const diff = JSON.parse((await cli('versions', 'diff', v1, '--json')).stdout);
    assert.equal(diff.changes.find((c: { table: string }) => c.table === 'shop.orders').rows_after, 10);
    const restored = await cli('versions', 'restore', v1, '--tables', 'shop.orders', '--json');
    assert.equal(restored.code, 0, restored.stderr);
    assert.deepEqual(JSON.parse(restored.stdout).tables.map((t: { table: string; status: string }) => [t.table, t.status]), [['shop.orders', 'success']]);
    const list = JSON.parse((await cli('versions', 'list', '--json')).stdout);
    assert.deepEqual(list.map((v: { trigger: string }) => v.trigger), ['restore', 'manual']);
    const shown = JSON.parse((await cli('versions', 'show', v1, '--json')).stdout);
    assert.equal(shown.tables.find((t: { table: string }) => t.table === 'shop.orders').row_count, 40);
    const timeline = JSON.parse((await cli('versions', 'timeline', 'shop.orders', '--json')).stdout);
    assert.deepEqual(timeline.map((t: { row_count: number }) => t.row_count), [10, 40]);
    assert.equal((await cli('versions', 'show', 'v9-20200101-000000')).code, 1);
    const bad = await cli('versions', 'cleanup', '--keep', '0');
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /at least 1/);
    assert.equal((await cli('versions', 'cleanup', '--keep', '1')).code, 0);
    assert.equal(JSON.parse((await cli('versions', 'list', '--json')).stdout).length, 1);
    assert.equal((await cli('versions', 'delete', list[0].version_id)).code, 0);
    assert.deepEqual(JSON.parse((await cli('versions', 'list', '--json')).stdout), []);
  });
});
