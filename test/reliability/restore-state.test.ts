/**
 * State that must follow a version restore (issues 34.1, 33.8, 33.10): a connector's sync state
 * for a restored table (else the next sync skips the rows between the restored data and the
 * watermark, silently), a model's build state (else the next transform skips the restored model
 * as unchanged), and backup cleanup after a backup restore (it keeps the user's own backups).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { closeInProcessClis, makeProject, runInProcess, startServer, type TestServer } from '../helpers.js';

describe('a version restore brings the state kept about its tables along', () => {
  let root: string;
  let s: TestServer;
  const count = async (sql: string) => Number(await s.app.db.value(sql));

  before(async () => {
    root = makeProject({
      'project.yml': 'name: rs\ndatabase:\n  path: rs.duckdb\n',
      'data/exports/stock.csv': 'sku,qty,updated\nA,5,2024-01-01 10:00:00\nB,7,2024-01-02 11:00:00\n',
      'transform/marts/totals.sql': 'SELECT 1 AS id, 10 AS total\n',
    });
    s = await startServer(root);
  });

  after(async () => {
    await s?.close();
    await closeInProcessClis();
  });

  it('a restored synced table gets its sync state reset, the answer says so, and the next sync misses no row', async () => {
    const setup = await s.request('POST', '/api/connectors/setup', {
      connector_type: 'csv',
      connection_name: 'exports',
      config: { path: 'data/exports' },
      tables: [{ name: 'stock', cdc_mode: 'high_watermark', cdc_column: 'updated' }],
      target_schema: 'raw',
    });
    assert.equal(setup.status, 200, setup.text);
    assert.equal((await s.request('POST', '/api/connectors/sync/exports')).status, 200);
    const v = (await s.request('POST', '/api/versions', {})).body.version_id as string;
    fs.appendFileSync(path.join(root, 'data/exports/stock.csv'), 'C,9,2024-01-03 12:00:00\n');
    assert.equal((await s.request('POST', '/api/connectors/sync/exports')).body.results[0].rows_synced, 1);
    assert.equal(await count('SELECT count(*) FROM raw.stock'), 3);

    const restore = await s.request('POST', `/api/versions/${v}/restore`, { tables: ['raw.stock'] });
    assert.equal(restore.status, 200, restore.text);
    assert.equal(await count('SELECT count(*) FROM raw.stock'), 2);
    const note = restore.body.notes.find((n: { table: string; plugin: string }) => n.table === 'raw.stock' && n.plugin === 'connectors');
    assert.ok(note, `the restore's answer says what happened to the sync state: ${restore.text}`);
    assert.match(note.message, /sync state .* reset/);

    fs.appendFileSync(path.join(root, 'data/exports/stock.csv'), 'D,1,2024-01-04 09:00:00\n');
    const next = await s.request('POST', '/api/connectors/sync/exports');
    assert.equal(next.status, 200, next.text);
    const skus = (await s.app.db.all<{ sku: string }>('SELECT sku FROM raw.stock ORDER BY sku')).map((r) => r.sku);
    assert.deepEqual(skus, ['A', 'B', 'C', 'D'], 'row C (synced after the version) is back after the next sync');
  });

  it('a restored model is rebuilt by the next transform, and dp transform --force <model> rebuilds one model', async () => {
    const first = await s.request('POST', '/api/transform', {});
    assert.equal(first.status, 200, first.text);
    const v = (await s.request('POST', '/api/versions', {})).body.version_id as string;
    await s.app.db.run('UPDATE marts.totals SET total = 99');
    const after = (await s.request('POST', '/api/versions', {})).body.version_id as string;
    // Back to the version holding total = 99 while the SQL says 10.
    await s.app.db.run('UPDATE marts.totals SET total = 10');
    const restore = await s.request('POST', `/api/versions/${after}/restore`, { tables: ['marts.totals'] });
    assert.equal(restore.status, 200, restore.text);
    assert.ok(restore.body.notes.some((n: { table: string; plugin: string }) => n.table === 'marts.totals' && n.plugin === 'models'), restore.text);
    assert.equal(await count('SELECT total FROM marts.totals'), 99);
    const rebuilt = await s.request('POST', '/api/transform', {});
    assert.equal(rebuilt.body.results.find((r: { model: string }) => r.model === 'marts.totals').status, 'built', 'the restored model is not skipped as unchanged');
    assert.equal(await count('SELECT total FROM marts.totals'), 10, 'the table agrees with its SQL again');
    assert.ok(v);
  });

  it('dp transform --force <model> rebuilds just that model (CLI), as POST /api/transform {targets, force} does', async () => {
    const cliRoot = makeProject({
      'project.yml': 'name: tf\ndatabase:\n  path: tf.duckdb\n',
      'transform/marts/a.sql': 'SELECT 1 AS x\n',
      'transform/marts/b.sql': 'SELECT 2 AS y\n',
    });
    assert.equal((await runInProcess(['transform', '--project', cliRoot])).code, 0);
    const forced = await runInProcess(['transform', '--force', 'marts.a', '--json', '--project', cliRoot]);
    assert.equal(forced.code, 0, forced.stderr);
    const results = JSON.parse(forced.stdout).results as Array<{ model: string; status: string }>;
    assert.deepEqual(results.map((r) => `${r.model}:${r.status}`), ['marts.a:built']);
  });

  it('backup-cleanup --keep 1 after a backup restore keeps the newest of the user\'s own backups and says what it kept', async () => {
    const older = (await s.request('POST', '/api/backup', { note: 'older' })).body.path as string;
    const mine = (await s.request('POST', '/api/backup', { note: 'mine' })).body.path as string;
    const restored = await s.request('POST', '/api/backup/restore', { path: mine });
    assert.equal(restored.status, 200, restored.text);
    const undo = restored.body.replaced_backup.path as string;
    const cleaned = await s.request('POST', '/api/backup/cleanup', { keep: 1 });
    assert.equal(cleaned.status, 200, cleaned.text);
    assert.ok(cleaned.body.kept_backups.includes(mine), `the user's newest backup is kept: ${cleaned.text}`);
    assert.ok(cleaned.body.deleted.includes(older));
    assert.ok(!cleaned.body.deleted.includes(mine));
    assert.deepEqual([...cleaned.body.kept_backups].sort(), [mine, undo].sort(), 'the undo copy of the last restore is kept too, and said');
    assert.ok(fs.existsSync(path.join(root, mine)));
  });
});
