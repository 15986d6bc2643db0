/**
 * Versions through the real server on a real DuckDB file: create → change → diff → restore →
 * equal to the original (EXCEPT both ways), selective restore, a table that fails stays as it
 * was, timeline order, cleanup, traversal refused, bad input, and a version after a pipeline run.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { PIPELINE_END } from '../../../sdk/index.js';
import { makeProject, startServer, tempDir, waitUntil, type TestServer } from '../../helpers.js';

const VERSION_ID = /^v\d+-\d{8}-\d{6}$/;

/** Rows in one relation and not the other, both ways (0 and 0: equal as multisets). */
async function exceptBothWays(s: TestServer, a: string, b: string): Promise<[number, number]> {
  const one = Number(await s.app.db.value(`SELECT count(*) FROM (SELECT * FROM ${a} EXCEPT ALL SELECT * FROM ${b})`));
  const two = Number(await s.app.db.value(`SELECT count(*) FROM (SELECT * FROM ${b} EXCEPT ALL SELECT * FROM ${a})`));
  return [one, two];
}

describe('versioning: versions', () => {
  let s: TestServer;
  let root: string;
  before(async () => {
    root = makeProject({ 'project.yml': 'name: v\ndatabase:\n  path: v.duckdb\nversioning:\n  after_pipeline: true\n' });
    s = await startServer(root);
    await s.app.db.run(`CREATE SCHEMA shop;
      CREATE TABLE shop.customers (id INTEGER PRIMARY KEY, name VARCHAR, score DOUBLE);
      INSERT INTO shop.customers SELECT i, 'c' || i, i / 2 FROM range(500) t(i);
      CREATE TABLE shop.events AS SELECT i % 13 AS kind, 'e' || (i % 50) AS label FROM range(3000) t(i);
      CREATE VIEW shop.top AS SELECT * FROM shop.customers WHERE score > 100`);
  });
  after(async () => s.close());

  let v1: string;

  it('creates a version: one Parquet file per table and _manifest.json in _snapshots/<id>/, a record in _service.version_history', async () => {
    const r = await s.request('POST', '/api/versions', { description: 'first' });
    assert.equal(r.status, 200, r.text);
    assert.match(r.body.version_id, VERSION_ID);
    assert.deepEqual({ ...r.body, version_id: 'x', created_at: 'x', size_bytes: 0 }, {
      version_id: 'x',
      created_at: 'x',
      description: 'first',
      trigger: 'manual',
      table_count: 2,
      total_rows: 3500,
      size_bytes: 0,
    });
    v1 = r.body.version_id;
    const dir = path.join(root, '_snapshots', v1);
    assert.deepEqual(fs.readdirSync(dir).sort(), ['_manifest.json', 'shop.customers.parquet', 'shop.events.parquet']);
    assert.equal(Number(await s.app.db.value(`SELECT count(*) FROM read_parquet('${dir}/shop.customers.parquet')`)), 500);
    assert.equal(Number(await s.app.db.value(`SELECT count(*) FROM _service.version_history WHERE version_id = '${v1}'`)), 1);
    const listed = await s.request('GET', '/api/versions');
    assert.deepEqual(listed.body.map((v: { version_id: string }) => v.version_id), [v1]);
    const shown = await s.request('GET', `/api/versions/${v1}`);
    assert.equal(shown.status, 200);
    const customers = shown.body.tables.find((t: { table: string }) => t.table === 'shop.customers');
    assert.equal(customers.row_count, 500);
    assert.deepEqual(customers.key, ['id']);
    assert.deepEqual(customers.columns, [
      { name: 'id', type: 'INTEGER' },
      { name: 'name', type: 'VARCHAR' },
      { name: 'score', type: 'DOUBLE' },
    ]);
  });

  it('diffs a version against the current tables: by key where there is one, else by whole row', async () => {
    // The original, kept aside after v1 (so v1 does not hold these copies).
    await s.app.db.run(`CREATE SCHEMA orig; CREATE TABLE orig.customers AS SELECT * FROM shop.customers; CREATE TABLE orig.events AS SELECT * FROM shop.events`);
    await s.app.db.run(`UPDATE shop.customers SET name = 'changed' WHERE id < 10;
      DELETE FROM shop.customers WHERE id >= 490;
      INSERT INTO shop.customers SELECT i, 'new', 0 FROM range(1000, 1003) t(i);
      DELETE FROM shop.events WHERE kind = 0;
      INSERT INTO shop.events VALUES (99, 'x'), (99, 'x')`);
    const r = await s.request('GET', `/api/versions/${v1}/diff`);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.from_version, v1);
    assert.equal(r.body.to_version, 'current');
    const byTable = Object.fromEntries(r.body.changes.map((c: { table: string }) => [c.table, c]));
    assert.deepEqual(
      { ...byTable['shop.customers'] },
      {
        table: 'shop.customers',
        change: 'modified',
        rows_before: 500,
        rows_after: 493,
        row_diff: -7,
        rows_added: 3,
        rows_removed: 10,
        rows_changed: 10,
        compared_by: 'key',
        key: ['id'],
        columns_added: [],
        columns_removed: [],
        columns_type_changed: [],
      },
    );
    const removedEvents = Number(await s.app.db.value('SELECT count(*) FROM orig.events WHERE kind = 0'));
    assert.equal(byTable['shop.events'].compared_by, 'row');
    assert.equal(byTable['shop.events'].rows_added, 2);
    assert.equal(byTable['shop.events'].rows_removed, removedEvents);
    assert.equal(byTable['shop.events'].rows_changed, null);
    assert.deepEqual(byTable['orig.customers'], { table: 'orig.customers', change: 'added', rows: 500 });
    assert.equal(r.body.tables_compared, 4);
  });

  it('restores a version: a restore version first, every table equal to the original (EXCEPT both ways), tables the version lacks skipped', async () => {
    const before = (await s.request('GET', '/api/versions')).body.length;
    const r = await s.request('POST', `/api/versions/${v1}/restore`, {});
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.status, 'success');
    const statuses = Object.fromEntries(r.body.tables.map((t: { table: string; status: string }) => [t.table, t.status]));
    assert.deepEqual(statuses, { 'shop.customers': 'success', 'shop.events': 'success', 'orig.customers': 'skipped', 'orig.events': 'skipped' });
    const versions = (await s.request('GET', '/api/versions')).body;
    assert.equal(versions.length, before + 1);
    assert.equal(versions[0].version_id, r.body.restore_version);
    assert.equal(versions[0].trigger, 'restore');
    assert.deepEqual(await exceptBothWays(s, 'shop.customers', 'orig.customers'), [0, 0]);
    assert.deepEqual(await exceptBothWays(s, 'shop.events', 'orig.events'), [0, 0]);
    // The table itself stayed (same columns): its primary key still holds.
    await assert.rejects(s.app.db.run("INSERT INTO shop.customers VALUES (1, 'dup', 0)"), /constraint|duplicate/i);
    // The view over it still answers.
    assert.equal(Number(await s.app.db.value('SELECT count(*) FROM shop.top')), 299);
    // The restore version holds the data from before the restore.
    const diff = await s.request('GET', `/api/versions/${v1}/diff?to_version=${r.body.restore_version}`);
    assert.ok(diff.body.changes.some((c: { table: string; change: string }) => c.table === 'shop.customers' && c.change === 'modified'));
  });

  it('restores only the tables named, and recreates a table whose columns changed', async () => {
    await s.app.db.run(`DELETE FROM shop.events; ALTER TABLE shop.customers ADD COLUMN extra INTEGER; UPDATE shop.customers SET extra = 1`);
    const r = await s.request('POST', `/api/versions/${v1}/restore`, { tables: ['shop.events'] });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.tables.map((t: { table: string; status: string }) => [t.table, t.status]), [['shop.events', 'success']]);
    assert.deepEqual(await exceptBothWays(s, 'shop.events', 'orig.events'), [0, 0]);
    const cols = await s.app.db.all<{ column_name: string }>("SELECT column_name FROM duckdb_columns() WHERE schema_name = 'shop' AND table_name = 'customers'");
    assert.ok(cols.some((c) => c.column_name === 'extra'), 'customers was not restored');
    // A bare table name works when it is unique; the changed columns make the table be recreated.
    const again = await s.request('POST', `/api/versions/${v1}/restore`, { tables: ['customers'] });
    assert.equal(again.body.status, 'success', again.text);
    assert.deepEqual(await exceptBothWays(s, 'shop.customers', 'orig.customers'), [0, 0]);
    await assert.rejects(s.app.db.run("INSERT INTO shop.customers VALUES (1, 'dup', 0)"), /constraint|duplicate/i);
  });

  it('a damaged version file is refused before anything changes; a table whose restore fails stays as it was and reports error, the others are restored', async () => {
    const v = (await s.request('POST', '/api/versions', { description: 'to damage' })).body.version_id;
    await s.app.db.run(`DELETE FROM shop.customers WHERE id < 100; DELETE FROM shop.events WHERE kind = 1`);
    const customersBefore = Number(await s.app.db.value('SELECT count(*) FROM shop.customers'));
    const versionsBefore = (await s.request('GET', '/api/versions')).body.length;
    // Damage one file of the version: its SHA-256 no longer matches the record.
    const file = path.join(root, '_snapshots', v, 'shop.customers.parquet');
    const intact = fs.readFileSync(file);
    fs.writeFileSync(file, intact.subarray(0, 40));
    const refused = await s.request('POST', `/api/versions/${v}/restore`, {});
    assert.equal(refused.status, 409, refused.text);
    assert.equal(refused.body.error.code, 'version_not_trusted');
    assert.ok(!refused.text.includes(root), 'no absolute path in the error');
    assert.equal((await s.request('GET', '/api/versions')).body.length, versionsBefore, 'nothing was written');
    fs.writeFileSync(file, intact);
    // A table whose restore fails in the engine: its current form refuses the version's rows.
    const cols = await s.app.db.all<{ name: string; type: string }>(
      "SELECT column_name AS name, data_type AS type FROM duckdb_columns() WHERE schema_name = 'shop' AND table_name = 'customers' ORDER BY column_index",
    );
    await s.app.db.run(
      `CREATE TEMP TABLE keep_customers AS SELECT * FROM shop.customers;
       CREATE OR REPLACE TABLE shop.customers (${cols.map((c) => `"${c.name}" ${c.type}`).join(', ')}, CHECK (id >= 100));
       INSERT INTO shop.customers SELECT * FROM keep_customers; DROP TABLE keep_customers`,
    );
    const r = await s.request('POST', `/api/versions/${v}/restore`, {});
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.status, 'error');
    const byTable = Object.fromEntries(r.body.tables.map((t: { table: string }) => [t.table, t]));
    assert.equal(byTable['shop.customers'].status, 'error');
    assert.ok(!byTable['shop.customers'].error.includes(root), 'no absolute path in the error');
    assert.equal(byTable['shop.events'].status, 'success');
    assert.equal(Number(await s.app.db.value('SELECT count(*) FROM shop.customers')), customersBefore);
    assert.deepEqual(await exceptBothWays(s, 'shop.events', 'orig.events'), [0, 0]);
    assert.equal((await s.request('DELETE', `/api/versions/${v}`)).status, 200);
  });

  it('refuses bad input and changes nothing: unknown version 404, a table the version lacks 400 naming it', async () => {
    const count = (await s.request('GET', '/api/versions')).body.length;
    for (const [method, url] of [
      ['GET', '/api/versions/v999-20200101-000000'],
      ['GET', '/api/versions/v999-20200101-000000/diff'],
      ['POST', '/api/versions/v999-20200101-000000/restore'],
      ['DELETE', '/api/versions/v999-20200101-000000'],
    ] as const) {
      const r = await s.request(method, url);
      assert.equal(r.status, 404, `${method} ${url}: ${r.text}`);
      assert.equal(r.body.error.code, 'version_not_found');
    }
    const diffTo = await s.request('GET', `/api/versions/${v1}/diff?to_version=v999-20200101-000000`);
    assert.equal(diffTo.status, 404);
    const missing = await s.request('POST', `/api/versions/${v1}/restore`, { tables: ['shop.events', 'shop.nope'] });
    assert.equal(missing.status, 400);
    assert.equal(missing.body.error.code, 'table_not_in_version');
    assert.match(missing.body.error.message, /shop\.nope/);
    assert.equal((await s.request('GET', '/api/versions')).body.length, count, 'no restore version was written');
    const keep = await s.request('POST', '/api/versions/cleanup', { keep: 0 });
    assert.equal(keep.status, 400);
    assert.equal(keep.body.error.code, 'invalid_keep');
    assert.equal((await s.request('POST', '/api/versions/cleanup', {})).status, 400);
    assert.equal((await s.request('GET', '/api/versions')).body.length, count);
  });

  it('refuses paths outside _snapshots/: a version id with .., a manifest naming another file, a version folder linked elsewhere', async () => {
    for (const [method, url] of [
      ['GET', '/api/versions/..%2F..%2Fproject.yml'],
      ['DELETE', '/api/versions/..%2Fv.duckdb'],
      ['GET', '/api/versions/..%2F..%2Fetc/diff'],
      ['POST', '/api/versions/..%2F_snapshots/restore'],
    ] as const) {
      const r = await s.request(method, url);
      assert.equal(r.status, 400, `${method} ${url}: ${r.text}`);
      assert.equal(r.body.error.code, 'invalid_version_id');
    }
    assert.ok(fs.existsSync(path.join(root, 'v.duckdb')));
    // A manifest edited to point outside the version folder is never read: dp's record is.
    const v = (await s.request('POST', '/api/versions', {})).body.version_id;
    const manifestFile = path.join(root, '_snapshots', v, '_manifest.json');
    const manifest = JSON.parse(fs.readFileSync(manifestFile, 'utf8'));
    manifest.tables[0].file = '../../project.yml';
    fs.writeFileSync(manifestFile, JSON.stringify(manifest));
    const diff = await s.request('GET', `/api/versions/${v}/diff`);
    assert.equal(diff.status, 200, diff.text);
    // A version folder replaced by a link to a folder outside the project: never followed to delete.
    const outside = tempDir('dp-test-outside-');
    fs.writeFileSync(path.join(outside, 'keep.txt'), 'keep');
    const dir = path.join(root, '_snapshots', v);
    fs.rmSync(dir, { recursive: true });
    fs.symlinkSync(outside, dir);
    const del = await s.request('DELETE', `/api/versions/${v}`);
    assert.equal(del.status, 400, del.text);
    assert.equal(del.body.error.code, 'version_path_outside');
    // With a newer version, cleanup would delete the linked one: it checks every path first and deletes nothing.
    const newer = (await s.request('POST', '/api/versions', {})).body.version_id;
    const listed = (await s.request('GET', '/api/versions')).body.length;
    const cleanup = await s.request('POST', '/api/versions/cleanup', { keep: 1 });
    assert.equal(cleanup.status, 400, 'cleanup checks every path before deleting anything');
    assert.equal((await s.request('GET', '/api/versions')).body.length, listed);
    assert.ok(fs.existsSync(path.join(root, '_snapshots', newer)));
    assert.ok(fs.existsSync(path.join(outside, 'keep.txt')));
    fs.unlinkSync(dir);
    fs.rmSync(outside, { recursive: true });
    // With its folder gone, the next start drops the record; here it is deleted by hand.
    await s.app.db.run('DELETE FROM _service.version_history WHERE version_id = $1', [v]);
  });

  it('timeline: the versions holding a table, newest first, with row counts and columns', async () => {
    await s.app.db.run('DELETE FROM shop.events WHERE kind = 2');
    const a = (await s.request('POST', '/api/versions', { description: 'a' })).body.version_id;
    await s.app.db.run("INSERT INTO shop.events VALUES (50, 'y')");
    const b = (await s.request('POST', '/api/versions', { description: 'b' })).body.version_id;
    const r = await s.request('GET', '/api/versions/timeline/shop.events');
    assert.equal(r.status, 200);
    const ids = r.body.map((x: { version_id: string }) => x.version_id);
    const all = (await s.request('GET', '/api/versions')).body.map((x: { version_id: string }) => x.version_id);
    assert.deepEqual(ids, all, 'every version holds shop.events, newest first');
    assert.equal(ids[0], b);
    assert.equal(ids[1], a);
    assert.equal(r.body[0].row_count, r.body[1].row_count + 1);
    assert.deepEqual(r.body[0].columns, [
      { name: 'kind', type: 'BIGINT' },
      { name: 'label', type: 'VARCHAR' },
    ]);
    const numbers = r.body.map((x: { version_id: string }) => Number(/^v(\d+)/.exec(x.version_id)![1]));
    assert.deepEqual(numbers, [...numbers].sort((x: number, y: number) => y - x));
    assert.deepEqual((await s.request('GET', '/api/versions/timeline/shop.nothing')).body, []);
  });

  it('creates a version after a successful pipeline run (versioning.after_pipeline), none after a failed one', async () => {
    const count = (await s.request('GET', '/api/versions')).body.length;
    await s.app.hookPoint(PIPELINE_END)!.promise({ runId: 'r1', streamName: 'daily', trigger: 'schedule', status: 'error', startedAt: new Date() });
    assert.equal((await s.request('GET', '/api/versions')).body.length, count);
    await s.app.hookPoint(PIPELINE_END)!.promise({ runId: 'r2', streamName: 'daily', trigger: 'schedule', status: 'success', startedAt: new Date() });
    const after = (await s.request('GET', '/api/versions')).body;
    assert.equal(after.length, count + 1);
    assert.equal(after[0].trigger, 'pipeline');
    assert.match(after[0].description, /daily/);
  });

  it('cleanup keeps the newest N: older folders and records are gone', async () => {
    const all = (await s.request('GET', '/api/versions')).body.map((x: { version_id: string }) => x.version_id);
    assert.ok(all.length > 2);
    const r = await s.request('POST', '/api/versions/cleanup', { keep: 2 });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.body.deleted, all.slice(2));
    assert.equal(r.body.kept, 2);
    assert.deepEqual((await s.request('GET', '/api/versions')).body.map((x: { version_id: string }) => x.version_id), all.slice(0, 2));
    for (const id of all.slice(2)) assert.ok(!fs.existsSync(path.join(root, '_snapshots', id)));
    for (const id of all.slice(0, 2)) assert.ok(fs.existsSync(path.join(root, '_snapshots', id, '_manifest.json')));
    const del = await s.request('DELETE', `/api/versions/${all[1]}`);
    assert.equal(del.status, 200);
    assert.ok(!fs.existsSync(path.join(root, '_snapshots', all[1])));
    assert.equal((await s.request('GET', `/api/versions/${all[1]}`)).status, 404);
  });
});

describe('versioning: after a real stream run', () => {
  it('a stream that succeeds writes a version (trigger pipeline) holding what it built', async () => {
    const root = makeProject({
      'project.yml': 'name: vs\ndatabase:\n  path: vs.duckdb\nversioning:\n  after_pipeline: true\nstreams:\n  daily:\n    steps:\n      - transform: [all]\n',
      'transform/shop/orders.sql': 'SELECT i AS id FROM range(25) t(i)\n',
    });
    const s = await startServer(root);
    try {
      const run = await s.request('POST', '/api/stream/daily', {});
      assert.equal(run.status, 200, run.text);
      let versions: Array<{ version_id: string; trigger: string; total_rows: number }> = [];
      await waitUntil(async () => (versions = (await s.request('GET', '/api/versions')).body).length > 0, 'the version the run writes');
      assert.equal(versions.length, 1);
      assert.equal(versions[0].trigger, 'pipeline');
      const shown = await s.request('GET', `/api/versions/${versions[0].version_id}`);
      assert.deepEqual(shown.body.tables.map((t: { table: string; row_count: number }) => [t.table, t.row_count]), [['shop.orders', 25]]);
    } finally {
      await s.close();
    }
  });
});
