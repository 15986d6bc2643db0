/**
 * The postgres connector's bulk path (`COPY … TO STDOUT` through a named pipe into DuckDB's CSV
 * reader) against a real PostgreSQL 15: the values DuckDB's CSV reader cannot take as they come
 * (bytea, JSON, NULL against an empty string, quotes and line breaks inside text) arrive exact;
 * a failure on DuckDB's side (a value it cannot parse) and on PostgreSQL's side (an error after
 * rows were sent) each end the sync with the cause, without hanging, with the target, the CDC
 * state and the project folder (no pipe left behind) unchanged. A slow sink that is full at every
 * write (backpressure pauses the socket) still gets every byte, and the connection is usable after.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Writable } from 'node:stream';
import pg from 'pg';
import { postgresType } from '../../../plugins/connectors/types/postgres.js';
import { makeProject, startServer, type TestServer } from '../../helpers.js';
import { startPostgres, type RunningDatabase } from '../../support/databases.js';

describe('postgres connector: bulk path', () => {
  let source: RunningDatabase;
  let client: pg.Client;
  let root: string;
  let s: TestServer;

  const yml = (tables: string) =>
    `name: bulk\ndatabase:\n  path: w.duckdb\nconnections:\n  src:\n    type: postgres\n    host: ${source.host}\n    port: ${source.port}\n    database: ${source.database}\n    user: ${source.user}\n    password: \${SRC_PASSWORD}\nconnectors:\n  src:\n    type: postgres\n    tables:\n${tables}`;
  const query = async (sql: string) => {
    const r = await s.request('POST', '/api/query', { sql });
    assert.equal(r.status, 200, r.text);
    return r.body.rows as unknown[][];
  };
  const sync = async () => {
    const r = await s.request('POST', '/api/connectors/sync/src');
    assert.equal(r.status, 200, r.text);
    return r.body as { status: string; results: Array<{ table: string; status: string; rows_synced: number; error: string | null; watermark_after: string | null }> };
  };
  const pipesLeft = () => {
    const dir = path.join(root, '.dp', 'sync');
    return fs.existsSync(dir) ? fs.readdirSync(dir) : [];
  };

  before(async () => {
    source = await startPostgres();
    client = new pg.Client({ host: source.host, port: source.port, user: source.user, password: source.password, database: source.database });
    await client.connect();
    await client.query(`
      CREATE TABLE public.odd (id INTEGER PRIMARY KEY, body TEXT, data BYTEA, doc JSON, flag BOOLEAN, ratio DOUBLE PRECISION, n NUMERIC(10,3));
      INSERT INTO public.odd VALUES
        (1, 'plain', '\\x00ff10'::bytea, '{"a": [1, 2]}', true, 1.5, 1.125),
        (2, '', '\\x'::bytea, 'null', false, 'Infinity', -0.001),
        (3, NULL, NULL, NULL, NULL, NULL, NULL),
        (4, E'say "hi",\\nthen, leave', '\\x22'::bytea, '"x,y"', true, -2.25e-10, 0);
      CREATE TABLE public.prices (id INTEGER, amount NUMERIC(10,2), updated_at TIMESTAMP);
      INSERT INTO public.prices SELECT i, i * 1.5, TIMESTAMP '2024-01-01' + i * INTERVAL '1 minute' FROM generate_series(1, 5000) i;
    `);
    root = makeProject({
      'project.yml': yml('      - name: public.odd\n      - name: public.prices\n        cdc_mode: high_watermark\n        cdc_column: updated_at\n'),
      '.env': `SRC_PASSWORD=${source.password}\n`,
    });
    s = await startServer(root);
  });

  after(async () => {
    await s?.close();
    await client?.end();
    await source?.stop();
  });

  it('moves text with quotes and line breaks, empty strings, NULLs, bytea and JSON exactly', async () => {
    const r = await sync();
    assert.equal(r.status, 'success', JSON.stringify(r));
    assert.deepEqual(r.results.map((x) => [x.table, x.rows_synced]), [['public.odd', 4], ['public.prices', 5000]]);
    assert.equal(r.results[1]!.watermark_after, '2024-01-04 11:20:00');
    const rows = await query("SELECT id, body, hex(data), doc::VARCHAR, flag, ratio::VARCHAR, n::VARCHAR FROM landing.odd ORDER BY id");
    assert.deepEqual(rows, [
      [1, 'plain', '00FF10', '{"a": [1, 2]}', true, '1.5', '1.125'],
      [2, '', '', 'null', false, 'inf', '-0.001'],
      [3, null, null, null, null, null, null],
      [4, 'say "hi",\nthen, leave', '22', '"x,y"', true, '-2.25e-10', '0.000'],
    ]);
    const types = await query("SELECT data_type FROM information_schema.columns WHERE table_schema = 'landing' AND table_name = 'odd' ORDER BY ordinal_position");
    assert.deepEqual(types.map((t) => t[0]), ['INTEGER', 'VARCHAR', 'BLOB', 'JSON', 'BOOLEAN', 'DOUBLE', 'DECIMAL(10,3)']);
    assert.deepEqual(pipesLeft(), []);
  });

  it('honours a full sink: every byte arrives and the source commits after the COPY', async () => {
    const chunks: Buffer[] = [];
    // Full after every write (highWaterMark 1), drained later: the socket pauses and resumes each time.
    const sink = new Writable({
      highWaterMark: 1,
      write(chunk: Buffer, _enc, done) {
        chunks.push(Buffer.from(chunk));
        setTimeout(done, 2);
      },
    });
    const ac = new AbortController();
    const config = { host: source.host, port: source.port, database: source.database, user: source.user, password: source.password };
    const csv = await postgresType.readCsv!(config, { table: 'public.prices', signal: ac.signal });
    try {
      assert.deepEqual(csv.columns.map((c) => `${c.name}:${c.type}`), ['id:INTEGER', 'amount:DECIMAL(10,2)', 'updated_at:TIMESTAMP']);
      await csv.writeTo(sink);
    } finally {
      await csv.close();
    }
    const lines = Buffer.concat(chunks).toString('utf8').trimEnd().split('\n');
    assert.equal(lines.length, 5000);
    assert.equal(lines.find((l) => l.startsWith('4999,')), '4999,7498.50,2024-01-04 11:19:00');
  });

  it('a value DuckDB cannot take fails the table with its cause, without hanging, and changes nothing', async () => {
    const stateBefore = (await s.request('GET', '/api/cdc/src')).body.tables;
    // NUMERIC(10,2) holds NaN in PostgreSQL; DuckDB's DECIMAL has no NaN.
    await client.query("INSERT INTO public.prices VALUES (5001, 'NaN', TIMESTAMP '2024-02-01')");
    for (let i = 0; i < 2; i++) {
      const r = await sync();
      const prices = r.results.find((x) => x.table === 'public.prices')!;
      assert.equal(prices.status, 'error');
      assert.match(prices.error ?? '', /NaN/i);
      assert.equal(r.results.find((x) => x.table === 'public.odd')!.status, 'success');
    }
    assert.deepEqual(await query('SELECT count(*)::INTEGER, max(id) FROM landing.prices'), [[5000, 5000]]);
    assert.deepEqual((await s.request('GET', '/api/cdc/src')).body.tables.find((t: { table_name: string }) => t.table_name === 'public.prices'), stateBefore.find((t: { table_name: string }) => t.table_name === 'public.prices'));
    assert.deepEqual(pipesLeft(), []);
    await client.query('DELETE FROM public.prices WHERE id = 5001');
  });

  it('an error PostgreSQL raises after rows were sent rolls the table back; the next sync takes every row once', async () => {
    await client.query("INSERT INTO public.prices SELECT i, i * 1.5, TIMESTAMP '2024-01-01' + i * INTERVAL '1 minute' FROM generate_series(5001, 60000) i");
    const text = fs.readFileSync(path.join(root, 'project.yml'), 'utf8');
    // Fails at the 50,000th new row, long after the first rows went through the pipe.
    fs.writeFileSync(path.join(root, 'project.yml'), text.replace('cdc_column: updated_at', 'cdc_column: updated_at\n        source_query: SELECT id, amount, updated_at, 1 / (CASE WHEN id = 55000 THEN 0 ELSE 1 END) AS one FROM public.prices'));
    const failed = await sync();
    const prices = failed.results.find((x) => x.table === 'public.prices')!;
    assert.equal(prices.status, 'error');
    assert.match(prices.error ?? '', /division by zero/);
    assert.deepEqual(await query('SELECT count(*)::INTEGER FROM landing.prices'), [[5000]]);
    assert.deepEqual(pipesLeft(), []);

    fs.writeFileSync(path.join(root, 'project.yml'), text);
    const ok = await sync();
    const again = ok.results.find((x) => x.table === 'public.prices')!;
    assert.equal(again.status, 'success', JSON.stringify(ok));
    assert.equal(again.rows_synced, 55000);
    assert.deepEqual(await query('SELECT count(*)::INTEGER, count(DISTINCT id)::INTEGER, max(id) FROM landing.prices'), [[60000, 60000, 60000]]);
  });
});
