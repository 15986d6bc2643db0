/**
 * The database port: bulk loading through the appender, migrations by id, the catalog-changed
 * signal and its statement classification. Real DuckDB files.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import { CATALOG_CHANGED } from '../../kernel/app.js';
import { DuckDatabase } from '../../kernel/database.js';
import { migrationHash, runMigrations } from '../../kernel/migrations.js';
import { statementKind } from '../../kernel/statement-kind.js';
import { bootApp, makeProject, tempDir } from '../helpers.js';

const tempFile = () => path.join(tempDir('dp-port-'), 'db.duckdb');

describe('bulk load', () => {
  it('loads 100k typed rows (timestamps, NULLs, decimals, non-ASCII text) into a real file, exactly', async () => {
    const file = tempFile();
    const db = new DuckDatabase(file);
    const N = 100_000;
    const names = ['Zoë', 'Łukasz', '東京', 'naïve café', 'emoji 🦆'];
    const result = await db.bulkLoad(
      {
        schema: 'raw',
        table: 'events',
        mode: 'create',
        columns: [
          { name: 'id', type: 'BIGINT' },
          { name: 'name', type: 'VARCHAR' },
          { name: 'amount', type: 'DECIMAL(18,4)' },
          { name: 'at', type: 'TIMESTAMP' },
          { name: 'day', type: 'DATE' },
          { name: 'score', type: 'DOUBLE' },
          { name: 'ok', type: 'BOOLEAN' },
          { name: 'meta', type: 'JSON' },
        ],
      },
      async (w) => {
        assert.deepEqual(w.columns, ['id', 'name', 'amount', 'at', 'day', 'score', 'ok', 'meta']);
        // Row-major batches for the first half, column-major for the second.
        for (let start = 0; start < N / 2; start += 5000) {
          const rows = [];
          for (let i = start; i < start + 5000; i++) {
            rows.push([
              i,
              i % 10 === 0 ? null : names[i % names.length],
              i % 7 === 0 ? null : `${i}.${String(i % 10000).padStart(4, '0')}`,
              i % 11 === 0 ? null : `2024-03-01T12:00:00.${String(i % 1_000_000).padStart(6, '0')}Z`,
              new Date(Date.UTC(2024, 0, 1 + (i % 366))),
              i / 3,
              i % 2 === 0,
              i % 13 === 0 ? null : { i },
            ]);
          }
          await w.appendRows(rows);
        }
        for (let start = N / 2; start < N; start += 10_000) {
          const ids = Array.from({ length: 10_000 }, (_, k) => BigInt(start + k));
          await w.appendColumns([
            ids,
            ids.map((i) => (Number(i) % 10 === 0 ? null : names[Number(i) % names.length])),
            ids.map((i) => (Number(i) % 7 === 0 ? null : `${i}.${String(Number(i) % 10000).padStart(4, '0')}`)),
            ids.map((i) => (Number(i) % 11 === 0 ? null : `2024-03-01 12:00:00.${String(Number(i) % 1_000_000).padStart(6, '0')}`)),
            ids.map((i) => new Date(Date.UTC(2024, 0, 1 + (Number(i) % 366)))),
            ids.map((i) => Number(i) / 3),
            ids.map((i) => Number(i) % 2 === 0),
            ids.map((i) => (Number(i) % 13 === 0 ? null : { i: Number(i) })),
          ]);
        }
        assert.equal(w.rows, N);
      },
    );
    assert.equal(result.rows, N);
    db.close();

    const again = new DuckDatabase(file);
    try {
      const [stats] = await again.all<Record<string, unknown>>(`SELECT count(*) AS n, count(name) AS names, count(amount) AS amounts, count("at") AS ats,
        sum(amount)::VARCHAR AS total, min("at")::VARCHAR AS first_at, max(day)::VARCHAR AS last_day, count(meta) AS metas FROM raw.events`);
      assert.equal(stats.n, N);
      assert.equal(stats.names, N - N / 10);
      assert.equal(stats.amounts, N - Math.ceil(N / 7));
      assert.equal(stats.ats, N - Math.ceil(N / 11));
      assert.equal(stats.metas, N - Math.ceil(N / 13));
      let expected = 0n;
      for (let i = 0; i < N; i++) if (i % 7 !== 0) expected += BigInt(i) * 10000n + BigInt(i % 10000);
      assert.equal(stats.total, `${expected / 10000n}.${String(expected % 10000n).padStart(4, '0')}`, 'decimals are exact');
      assert.equal(stats.first_at, '2024-03-01 12:00:00.000001');
      assert.equal(stats.last_day, '2024-12-31');
      const row = await again.all<Record<string, unknown>>('SELECT name, amount::VARCHAR AS amount, "at"::VARCHAR AS "at", ok, meta FROM raw.events WHERE id = 77773');
      assert.deepEqual(row, [{ name: names[77773 % 5], amount: '77773.7773', at: '2024-03-01 12:00:00.077773', ok: false, meta: '{"i":77773}' }]);
      assert.deepEqual(await again.all('SELECT DISTINCT name FROM raw.events WHERE name IS NOT NULL ORDER BY name'), [...names].sort().map((name) => ({ name })));
      const types = await again.all<{ column_type: string }>("SELECT column_type FROM (DESCRIBE raw.events)");
      assert.deepEqual(types.map((t) => t.column_type), ['BIGINT', 'VARCHAR', 'DECIMAL(18,4)', 'TIMESTAMP', 'DATE', 'DOUBLE', 'BOOLEAN', 'JSON']);
    } finally {
      again.close();
    }
  });

  it('inside a transaction all batches commit together or none do; bad values and shapes are refused clearly', async () => {
    const db = new DuckDatabase(tempFile());
    try {
      await db.run('CREATE TABLE t (id INTEGER, "at" TIMESTAMP)');
      await assert.rejects(
        db.bulkLoad({ table: 't', transaction: true }, async (w) => {
          await w.appendRows([[1, '2024-01-01T00:00:00Z']]);
          await w.appendRows([[2, 'not a time']]);
        }),
        /Column 'at': "not a time" is not a date or timestamp/,
      );
      assert.equal(await db.value('SELECT count(*) FROM t'), 0, 'the first batch rolled back with the second');
      await assert.rejects(db.bulkLoad({ table: 't' }, (w) => w.appendRows([[1]])), /a row has 1 values, the table 2 columns/);
      await db.bulkLoad({ table: 't', transaction: true }, (w) => w.appendRows([[1, '2024-01-01T10:00:00+02:00']]));
      assert.equal(await db.value('SELECT "at"::VARCHAR FROM t'), '2024-01-01 08:00:00', 'offsets are honoured');
      await assert.rejects(db.bulkLoad({ table: 'x', mode: 'create', columns: [{ name: 'a', type: 'INT); DROP TABLE t; --' }] }, async () => {}), /not a DuckDB type name/);
    } finally {
      db.close();
    }
  });
});

describe('migrations by id', () => {
  const steps = [
    { id: 'p-001', sql: 'CREATE TABLE IF NOT EXISTS _service.p_a (x INTEGER)' },
    { id: 'p-002', sql: 'CREATE TABLE IF NOT EXISTS _service.p_b (y INTEGER)' },
  ];

  it('runs each id once, runs added steps, and refuses an applied step whose SQL changed', async () => {
    const db = new DuckDatabase(tempFile());
    try {
      await runMigrations(db, [{ owner: 'p', steps }]);
      await runMigrations(db, [{ owner: 'p', steps }]);
      assert.deepEqual(await db.all("SELECT id FROM _service.migrations WHERE owner = 'p' ORDER BY id"), [{ id: 'p-001' }, { id: 'p-002' }]);
      // Reordering or re-indenting is no change; a new step runs.
      await runMigrations(db, [{ owner: 'p', steps: [{ ...steps[1], sql: `  ${steps[1].sql}\n` }, steps[0], { id: 'p-003', sql: 'INSERT INTO _service.p_a VALUES (1)' }] }]);
      await runMigrations(db, [{ owner: 'p', steps: [...steps, { id: 'p-003', sql: 'INSERT INTO _service.p_a VALUES (1)' }] }]);
      assert.equal(await db.value('SELECT count(*) FROM _service.p_a'), 1, 'p-003 ran once');
      await assert.rejects(
        runMigrations(db, [{ owner: 'p', steps: [steps[0], { id: 'p-002', sql: 'CREATE TABLE IF NOT EXISTS _service.p_b (y BIGINT)' }] }]),
        (e: Error & { code?: string }) => {
          assert.equal(e.code, 'migration_changed');
          assert.match(e.message, /Migration 'p-002' of 'p' was applied with different SQL/);
          return true;
        },
      );
      await assert.rejects(runMigrations(db, [{ owner: 'p', steps: [steps[0], steps[0]] }]), /appears twice/);
      await assert.rejects(runMigrations(db, [{ owner: 'p', steps: ['CREATE TABLE x (a INT)'] as never }]), /must be \{id, sql\} objects/);
    } finally {
      db.close();
    }
  });

  it('converts a database migrated by list index: old rows take the ids of the current steps and nothing runs twice', async () => {
    const db = new DuckDatabase(tempFile());
    try {
      // The table and rows as earlier versions wrote them.
      await db.run(`CREATE SCHEMA _service;
        CREATE TABLE _service.migrations (owner VARCHAR, step INTEGER, applied_at TIMESTAMP DEFAULT current_timestamp, PRIMARY KEY (owner, step));
        CREATE TABLE _service.p_a (x INTEGER); INSERT INTO _service.p_a VALUES (5);
        INSERT INTO _service.migrations (owner, step) VALUES ('p', 0), ('p', 1), ('gone', 0)`);
      const counted = [...steps, { id: 'p-003', sql: 'INSERT INTO _service.p_a VALUES (1)' }];
      // p-001 would fail if it ran again (no IF NOT EXISTS): it must be recognised as applied.
      counted[0] = { id: 'p-001', sql: 'CREATE TABLE _service.p_a (x INTEGER)' };
      await runMigrations(db, [{ owner: 'p', steps: counted }]);
      assert.deepEqual(await db.all('SELECT owner, id, sql_hash FROM _service.migrations ORDER BY owner, id'), [
        { owner: 'gone', id: 'legacy:0', sql_hash: null },
        { owner: 'p', id: 'p-001', sql_hash: migrationHash(counted[0].sql) },
        { owner: 'p', id: 'p-002', sql_hash: migrationHash(counted[1].sql) },
        { owner: 'p', id: 'p-003', sql_hash: migrationHash(counted[2].sql) },
      ]);
      assert.deepEqual(await db.all('SELECT x FROM _service.p_a ORDER BY x'), [{ x: 1 }, { x: 5 }]);
    } finally {
      db.close();
    }
  });

  it('every built-in plugin boots on a database from before ids', async () => {
    const root = makeProject();
    const first = await bootApp(root);
    const rows = await first.db.all<{ owner: string; id: string }>('SELECT owner, id FROM _service.migrations ORDER BY owner, id');
    // Rewrite the table the way the index-numbered runner left it.
    const byOwner = new Map<string, number>();
    const legacy = rows.map((r) => {
      const n = byOwner.get(r.owner) ?? 0;
      byOwner.set(r.owner, n + 1);
      return `('${r.owner}', ${n})`;
    });
    await first.db.run(`DROP TABLE _service.migrations;
      CREATE TABLE _service.migrations (owner VARCHAR, step INTEGER, applied_at TIMESTAMP DEFAULT current_timestamp, PRIMARY KEY (owner, step));
      INSERT INTO _service.migrations (owner, step) VALUES ${legacy.join(', ')}`);
    await first.close();
    const second = await bootApp(root);
    try {
      assert.deepEqual(await second.db.all('SELECT owner, id FROM _service.migrations ORDER BY owner, id'), rows);
    } finally {
      await second.close();
    }
  });
});

describe('catalog changed', () => {
  it('classifies statements by their leading keyword, leaving mutations behind WITH and multi-statement text to the parser', () => {
    for (const q of ['SELECT 1', '  -- c\n select * from t', '/* x */ (SELECT 1)', 'FROM t', 'WITH a AS (SELECT 1) SELECT * FROM a', 'DESCRIBE t', 'EXPLAIN SELECT 1', 'SELECT 1;']) {
      assert.equal(statementKind(q), 'read', q);
    }
    for (const q of ['CREATE TABLE t (a INT)', 'insert into t values (1)', 'DROP VIEW v', 'ALTER TABLE t ADD COLUMN b INT', 'COPY t FROM \'x.csv\'', 'EXPLAIN ANALYZE INSERT INTO t VALUES (1)', 'PRAGMA create_fts_index(\'t\', \'a\')', 'DROP VIEW a; CREATE VIEW a AS SELECT 1']) {
      assert.equal(statementKind(q), 'write', q);
    }
    for (const q of ['BEGIN TRANSACTION', 'COMMIT', 'SET threads = 2', 'CHECKPOINT']) assert.equal(statementKind(q), 'neutral', q);
    for (const q of ['WITH a AS (SELECT 1) INSERT INTO t SELECT * FROM a', 'SELECT 1; DROP TABLE t']) assert.equal(statementKind(q), 'unsure', q);
  });

  it('emits catalog.changed after a write through ctx.db (at COMMIT inside a transaction), never after a read or a user query', async () => {
    const app = await bootApp(makeProject());
    try {
      const seen: string[] = [];
      app.events.on(CATALOG_CHANGED, (e) => seen.push(String(e.payload.statement)));
      await app.db.all('SELECT 1');
      await app.db.value("SELECT count(*) FROM information_schema.tables");
      await app.queries.run({ sql: 'SELECT 42', caller: { username: null, role: 'admin', authenticated: false }, purpose: 'query' });
      assert.deepEqual(seen, []);
      await app.db.run('CREATE TABLE t (a INTEGER)');
      assert.deepEqual(seen, ['CREATE']);
      await app.db.run('WITH x AS (SELECT 1 AS a) INSERT INTO t SELECT a FROM x');
      await app.db.run('SELECT 1; DROP TABLE t');
      assert.deepEqual(seen, ['CREATE', 'WITH', 'SELECT']);
      seen.length = 0;
      await app.db.withConnection((c) =>
        c.transaction(async () => {
          await c.run('CREATE TABLE u (a INTEGER)');
          assert.deepEqual(seen, [], 'not before COMMIT: other connections cannot see it yet');
        }),
      );
      assert.deepEqual(seen, ['CREATE']);
      await assert.rejects(
        app.db.withConnection((c) =>
          c.transaction(async () => {
            await c.run('DROP TABLE u');
            throw new Error('changed my mind');
          }),
        ),
      );
      assert.deepEqual(seen, ['CREATE'], 'a rolled-back change is not reported');
      await app.db.bulkLoad({ table: 'u' }, (w) => w.appendRows([[1]]));
      assert.deepEqual(seen, ['CREATE', 'INSERT']);
    } finally {
      await app.close();
    }
  });
});
