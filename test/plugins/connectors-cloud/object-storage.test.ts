/**
 * Issue 15: object_storage against a local S3-compatible server (s3rver) the test starts:
 * ListObjectsV2 and GET signed with SigV4 (aws4), CSV, Parquet and JSON files, folders as
 * tables, file tracking by `_source_modified`, bounded batches, clear causes.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DuckDBInstance } from '@duckdb/node-api';
import { objectStorageType, tableOfKey } from '../../../plugins/connectors-cloud/object-storage.js';
import { startS3, type RunningS3 } from './support/s3.js';
import { freePort, readAll, TEST_RUNTIME } from './support/read.js';
import { tempDir } from '../../helpers.js';

async function parquetOf(sql: string): Promise<Buffer> {
  const dir = tempDir('dp-cc-pq-');
  const file = path.join(dir, 'x.parquet');
  const instance = await DuckDBInstance.create(':memory:');
  const conn = await instance.connect();
  await conn.run(`COPY (${sql}) TO '${file}' (FORMAT parquet)`);
  conn.closeSync();
  instance.closeSync();
  const data = fs.readFileSync(file);
  fs.rmSync(dir, { recursive: true, force: true });
  return data;
}

describe('object_storage (S3-compatible, s3rver)', () => {
  let s3: RunningS3;
  let config: Record<string, unknown>;
  before(async () => {
    s3 = await startS3(['lake']);
    await s3.put('lake', 'exports/orders/2024-01.csv', 'id,customer,amount,placed_at\n1,ann,10.5,2024-01-03 10:00:00\n2,bob,20.25,2024-01-04 11:00:00\n');
    await s3.put('lake', 'exports/orders/2024-02.csv', 'id,customer,amount,placed_at\n3,cy,30.0,2024-02-01 09:00:00\n');
    await s3.put('lake', 'exports/events.parquet', await parquetOf("SELECT i::BIGINT AS id, 'e' || i AS name, {'k': i} AS props, TIMESTAMP '2024-01-01' + to_seconds(i) AS at FROM range(25000) t(i)"));
    await s3.put('lake', 'exports/customers/part 1.json', '{"id": 1, "name": "Ann", "tags": ["a"]}\n{"id": 2, "name": "Bob", "tags": []}\n');
    await s3.put('lake', 'exports/readme.txt', 'not data');
    await s3.put('lake', 'other/ignored.csv', 'x\n1\n');
    config = { endpoint: s3.endpoint, region: 'us-east-1', bucket: 'lake', prefix: 'exports/', access_key_id: s3.accessKeyId, secret_access_key: s3.secretAccessKey };
  });
  after(async () => s3.stop());

  it('names tables by folder or file', () => {
    assert.equal(tableOfKey('exports/orders/2024-01.csv', 'exports/'), 'orders');
    assert.equal(tableOfKey('exports/events.parquet', 'exports/'), 'events');
    assert.equal(tableOfKey('exports/2024 sales.csv.gz', 'exports/'), '_2024_sales');
  });

  it('tests the connection with a signed listing', async () => {
    assert.deepEqual(await objectStorageType.testConnection(config, AbortSignal.timeout(10_000)), { ok: true, message: "bucket 'lake' is readable" });
  });

  it('discovers CSV, Parquet and JSON tables with DuckDB types and provenance columns', async () => {
    const tables = await objectStorageType.discover(config, AbortSignal.timeout(30_000), TEST_RUNTIME);
    const byName = Object.fromEntries(tables.map((t) => [t.name, t.columns.map((c) => `${c.name} ${c.type}`)]));
    assert.deepEqual(Object.keys(byName).sort(), ['customers', 'events', 'orders']);
    assert.deepEqual(byName.orders, ['id BIGINT', 'customer VARCHAR', 'amount DOUBLE', 'placed_at TIMESTAMP', '_source_file VARCHAR', '_source_modified TIMESTAMPTZ']);
    assert.deepEqual(byName.events, ['id BIGINT', 'name VARCHAR', 'props JSON', 'at TIMESTAMP', '_source_file VARCHAR', '_source_modified TIMESTAMPTZ']);
    assert.deepEqual(byName.customers, ['id BIGINT', 'name VARCHAR', 'tags JSON', '_source_file VARCHAR', '_source_modified TIMESTAMPTZ']);
  });

  it('reads every file of a folder table, each row tagged with its object key', async () => {
    const r = await readAll(objectStorageType, config, { table: 'orders' });
    assert.deepEqual(r.objects.map((o) => [o.id, o.customer, o._source_file]), [
      ['1', 'ann', 'exports/orders/2024-01.csv'],
      ['2', 'bob', 'exports/orders/2024-01.csv'],
      ['3', 'cy', 'exports/orders/2024-02.csv'],
    ]);
    const json = await readAll(objectStorageType, config, { table: 'customers' });
    assert.deepEqual(json.objects.map((o) => [o.name, o.tags, o._source_file]), [['Ann', ['a'], 'exports/customers/part 1.json'], ['Bob', [], 'exports/customers/part 1.json']]);
  });

  it('streams a 25,000-row Parquet object in bounded batches', async () => {
    const r = await readAll(objectStorageType, config, { table: 'events', batchRows: 4000, columns: ['id', 'props', 'at'] });
    assert.equal(r.rows.length, 25000);
    assert.equal(r.batches, 7);
    assert.deepEqual(r.rows[24999], ['24999', { k: '24999' }, '2024-01-01 06:56:39']);
  });

  it('file tracking: only files modified after the watermark; high watermark on a data column', async () => {
    const first = await readAll(objectStorageType, config, { table: 'orders', cursor: { column: '_source_modified', after: null } });
    assert.equal(first.rows.length, 3);
    const watermark = first.objects.map((o) => String(o._source_modified)).sort().at(-1)!;
    assert.equal((await readAll(objectStorageType, config, { table: 'orders', cursor: { column: '_source_modified', after: watermark } })).rows.length, 0);
    // Modified a minute from now: past the watermark, without waiting for S3's next whole second.
    await s3.put('lake', 'exports/orders/2024-03.csv', 'id,customer,amount,placed_at\n4,dee,40,2024-03-01 08:00:00\n5,eve,50,2024-03-02 08:00:00\n', { modifiedAt: new Date(Date.now() + 60_000) });
    const next = await readAll(objectStorageType, config, { table: 'orders', cursor: { column: '_source_modified', after: watermark } });
    assert.deepEqual(next.objects.map((o) => o.id), ['4', '5']);
    const hw = await readAll(objectStorageType, config, { table: 'orders', cursor: { column: 'placed_at', after: '2024-02-01 09:00:00' } });
    assert.deepEqual(hw.objects.map((o) => o.id), ['4', '5']);
    assert.deepEqual(objectStorageType.cdcModes, ['full_refresh', 'file_tracking', 'high_watermark']);
  });

  it('answers clear causes: auth failed, missing bucket, refused, DNS, unknown table', async () => {
    const bad = await objectStorageType.testConnection({ ...config, secret_access_key: 'wrong-secret' }, AbortSignal.timeout(10_000));
    assert.equal(bad.ok, false);
    assert.match(bad.message, /authentication failed/);
    assert.ok(!bad.message.includes('wrong-secret'));
    const unknownKey = await objectStorageType.testConnection({ ...config, access_key_id: 'AKIDUNKNOWN' }, AbortSignal.timeout(10_000));
    assert.match(unknownKey.message, /authentication failed \(The AWS Access Key Id you provided does not exist in our records\.\)/);
    const missing = await objectStorageType.testConnection({ ...config, bucket: 'nope' }, AbortSignal.timeout(10_000));
    assert.match(missing.message, /bucket 'nope' does not exist/);
    const port = await freePort();
    assert.deepEqual(await objectStorageType.testConnection({ ...config, endpoint: `http://127.0.0.1:${port}` }, AbortSignal.timeout(10_000)), { ok: false, message: `127.0.0.1:${port}: connection refused` });
    assert.deepEqual(await objectStorageType.testConnection({ ...config, endpoint: 'https://s3.no-such-host.invalid' }, AbortSignal.timeout(10_000)), { ok: false, message: 's3.no-such-host.invalid: host not found' });
    await assert.rejects(readAll(objectStorageType, config, { table: 'readme' }), (e: any) => e.code === 'source_table_not_found');
  });

  it('leaves no temp files behind', async (t) => {
    // The folders this read makes, not a count of the temp dir's entries: another test process
    // may be making and removing its own there at the same time.
    const made: string[] = [];
    const mkdtemp = fs.mkdtempSync.bind(fs);
    t.mock.method(fs, 'mkdtempSync', (prefix: string, options?: fs.EncodingOption) => {
      const dir = mkdtemp(prefix, options) as string;
      if (path.basename(prefix).startsWith('dp-cloud-')) made.push(dir);
      return dir;
    });
    await readAll(objectStorageType, config, { table: 'orders' });
    assert.ok(made.length > 0, 'the read made a temp folder');
    for (const dir of made) assert.equal(fs.existsSync(dir), false, `${dir} is left`);
  });
});
