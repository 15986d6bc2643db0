import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { App } from '../../../kernel/app.js';
import { computeStats } from '../../../plugins/quality/profiles.js';
import { BuildRecorder, MAX_BATCH, MAX_WAIT_MS, MIN_BATCH, type QueuedBuild } from '../../../plugins/quality/recorder.js';
import type { DatabasePort, DbConnection, PluginContext, Row, SqlParams } from '../../../sdk/index.js';
import { systemClock } from '../../../kernel/scheduler.js';
import type { Clock } from '../../../sdk/index.js';
import { FakeClock } from '../../kernel/fake-clock.js';
import { bootApp, makeProject, waitUntil } from '../../helpers.js';

/** A plugin context whose database counts statements and whose log keeps what it was told. */
function countingContext(app: App, clock: Clock = systemClock) {
  const statements: Array<{ kind: 'all' | 'run'; sql: string }> = [];
  const counted = (c: DbConnection): DbConnection =>
    new Proxy(c, {
      get(target, name) {
        if (name === 'run') return (sql: string, params?: SqlParams) => (statements.push({ kind: 'run', sql }), target.run(sql, params));
        if (name === 'transaction') return <T>(fn: (t: DbConnection) => Promise<T>) => target.transaction((t) => fn(counted(t)));
        const member = Reflect.get(target, name) as unknown;
        return typeof member === 'function' ? (member as (...a: unknown[]) => unknown).bind(target) : member;
      },
    });
  const logged: Array<{ level: string; msg: string; data?: Record<string, unknown> }> = [];
  const db = {
    all: <T = Row>(sql: string, params?: SqlParams) => {
      statements.push({ kind: 'all', sql });
      return app.db.all<T>(sql, params);
    },
    run: (sql: string, params?: SqlParams) => {
      statements.push({ kind: 'run', sql });
      return app.db.run(sql, params);
    },
    // A transaction on a lent connection: each statement run in it counts as one run.
    withConnection: <T>(fn: (c: DbConnection) => Promise<T>) => app.db.withConnection((c) => fn(counted(c))),
    // A question to the catalog port counts as one catalog query.
    catalog: new Proxy(app.db.catalog, {
      get(target, name) {
        const member = Reflect.get(target, name) as unknown;
        if (typeof member !== 'function') return member;
        return (...args: unknown[]) => {
          statements.push({ kind: 'all', sql: `catalog.${String(name)}` });
          return (member as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    }),
  } as unknown as DatabasePort;
  const log = (level: string) => (msg: string, data?: Record<string, unknown>) => logged.push({ level, msg, data });
  // No warehouse target: the models are built in this DuckDB file.
  const ctx = { db, clock, services: { find: () => undefined }, log: { info: log('info'), warn: log('warn'), error: log('error'), debug: log('debug') } } as unknown as PluginContext;
  return { ctx, statements, logged };
}

function build(model: string, runId: string, extra: Partial<QueuedBuild> = {}): QueuedBuild {
  const [schema, table] = model.split('.');
  return { model, schema, table, runId, status: 'built', builtAt: '2024-05-06 07:08:09', profile: true, ...extra };
}

async function storedProfiles(app: App, runId: string) {
  const rows = await app.db.all<{ model: string; row_count: number; columns: string }>(
    'SELECT model, row_count, columns FROM _service.model_profiles WHERE run_id = $1 ORDER BY model',
    [runId],
  );
  return new Map(rows.map((r) => [r.model, { row_count: Number(r.row_count), columns: JSON.parse(String(r.columns)) }]));
}

describe('quality: build recorder', () => {
  let app: App;

  before(async () => {
    app = await bootApp(makeProject());
    const tables = Array.from({ length: 30 }, (_, i) => `CREATE TABLE r.t${i} AS SELECT range AS id, CASE WHEN range % 4 = 0 THEN NULL ELSE range % ${i + 2} END AS v FROM range(${10 + i});`);
    await app.db.run(`CREATE SCHEMA r; ${tables.join('\n')}
      CREATE TABLE r."Odd" AS SELECT * FROM (VALUES
        (1, 'a', [1, 2], {'k': 1}, 1.5::DECIMAL(9,2)),
        (2, NULL, [3], NULL, NULL),
        (2, 'a', [1, 2], {'k': 2}, 2.25)
      ) v("it's ""quoted""", "MixedCase", tags, s, amount);
      CREATE TABLE r.empty (a INTEGER, b VARCHAR);
      CREATE TABLE r.big AS SELECT range AS id, range % 3 AS m FROM range(20000);
      CREATE VIEW r.v AS SELECT id FROM r.t3 WHERE id > 5;`);
  });
  after(async () => app.close());

  it('records a burst of builds with one catalog query and one transaction, with the metrics computeStats gives', async () => {
    const { ctx, statements, logged } = countingContext(app);
    const recorder = new BuildRecorder(ctx);
    const models = [...Array.from({ length: 30 }, (_, i) => `r.t${i}`), 'r.Odd', 'r.empty', 'r.v', 'r.big'];
    for (const m of models) recorder.add(build(m, 'burst'));
    await recorder.settled('burst');
    assert.deepEqual(
      statements.map((s) => s.kind),
      ['all', 'all', 'all', 'run'],
      "one catalog query, the run's stored fingerprints, one fingerprint query and one statement for 34 builds",
    );
    assert.deepEqual(logged, []);

    const stored = await storedProfiles(app, 'burst');
    assert.equal(stored.size, models.length);
    for (const m of models) {
      const [schema, table] = m.split('.');
      const expected = await computeStats({ db: app.db } as PluginContext, schema, table);
      const got = stored.get(m);
      assert.ok(got, `profile of ${m}`);
      assert.equal(got.row_count, expected.row_count, m);
      assert.deepEqual(
        got.columns,
        expected.columns.map(({ name, type, null_count, null_pct, distinct_count }) => ({ name, type, null_count, null_pct, distinct_count })),
        m,
      );
    }
    assert.equal(stored.get('r.v')?.row_count, 7, 'a view is profiled by running it');
    const metrics = (m: string) => stored.get(m)?.columns.map((c: { null_count: number; null_pct: number; distinct_count: number }) => [c.null_count, c.null_pct, c.distinct_count]);
    assert.deepEqual(metrics('r.big'), [[0, 0, 20000], [0, 0, 3]], 'distinct counts are exact');
    assert.deepEqual(metrics('r.Odd'), [[0, 0, 2], [1, 33.3333, 1], [0, 0, 2], [1, 33.3333, 2], [1, 33.3333, 2]]);
    assert.deepEqual(metrics('r.empty'), [[0, 0, 0], [0, 0, 0]]);
    assert.deepEqual(stored.get('r.Odd')?.columns.map((c: { name: string }) => c.name), [`it's "quoted"`, 'MixedCase', 'tags', 's', 'amount']);

    const fresh = await app.db.all<{ model: string; last_built_at: string; last_status: string }>(
      "SELECT model, CAST(last_built_at AS VARCHAR) AS last_built_at, last_status FROM _service.model_freshness WHERE run_id = 'burst'",
    );
    assert.equal(fresh.length, models.length);
    assert.ok(fresh.every((f) => f.last_built_at === '2024-05-06 07:08:09' && f.last_status === 'built'), 'the build time is the one the tap saw');
  });

  it('a model queued twice goes to the next batch, so its profiles keep their order', async () => {
    const { ctx, statements } = countingContext(app);
    const recorder = new BuildRecorder(ctx);
    recorder.add(build('r.t1', 'twice-1'));
    recorder.add(build('r.t2', 'twice-1'));
    recorder.add(build('r.t1', 'twice-2', { status: 'assertion_failed', builtAt: '2024-05-06 08:00:00' }));
    await recorder.drain();
    assert.equal(statements.filter((s) => s.kind === 'run').length, 2, 'two batches');
    const runs = await app.db.all<{ run_id: string }>("SELECT run_id FROM _service.model_profiles WHERE model = 'r.t1' AND run_id LIKE 'twice-%' ORDER BY seq");
    assert.deepEqual(runs.map((r) => r.run_id), ['twice-1', 'twice-2']);
    const fresh = await app.db.all("SELECT run_id, last_status FROM _service.model_freshness WHERE model = 'r.t1'");
    assert.deepEqual(fresh, [{ run_id: 'twice-2', last_status: 'assertion_failed' }]);
  });

  it(`a batch holds at most ${MAX_BATCH} builds`, async () => {
    const { ctx, statements } = countingContext(app);
    const recorder = new BuildRecorder(ctx);
    await app.db.run(`CREATE SCHEMA many; ${Array.from({ length: MAX_BATCH + 5 }, (_, i) => `CREATE TABLE many.t${i} AS SELECT ${i} AS x;`).join('\n')}`);
    for (let i = 0; i < MAX_BATCH + 5; i++) recorder.add(build(`many.t${i}`, 'many'));
    await recorder.settled('many');
    assert.equal(statements.filter((s) => s.kind === 'run').length, 2);
    assert.equal(statements.filter((s) => s.sql.includes('PARTITION BY p.model')).length, 1, "the run's stored profiles are read once, not per batch");
    assert.equal((await storedProfiles(app, 'many')).size, MAX_BATCH + 5);
  });

  it('a relation that cannot be profiled costs only its own profile', async () => {
    await app.db.run('CREATE TABLE r.base AS SELECT 1 AS a; CREATE VIEW r.broken AS SELECT a FROM r.base; DROP TABLE r.base;');
    const { ctx, logged } = countingContext(app);
    const recorder = new BuildRecorder(ctx);
    for (const m of ['r.t4', 'r.broken', 'r.gone', 'r.t5']) recorder.add(build(m, 'partial'));
    await recorder.settled('partial');
    assert.deepEqual([...(await storedProfiles(app, 'partial')).keys()], ['r.t4', 'r.t5']);
    const fresh = await app.db.all<{ model: string }>("SELECT model FROM _service.model_freshness WHERE run_id = 'partial' ORDER BY model");
    assert.deepEqual(fresh.map((f) => f.model), ['r.broken', 'r.gone', 'r.t4', 'r.t5'], 'every build is recorded');
    assert.ok(logged.some((l) => l.level === 'warn' && l.data?.model === 'r.gone'), JSON.stringify(logged));
    assert.ok(logged.some((l) => l.level === 'error' && l.data?.model === 'r.broken'), JSON.stringify(logged));
  });

  it('without anomaly detection only the build is recorded', async () => {
    const { ctx, statements } = countingContext(app);
    const recorder = new BuildRecorder(ctx);
    recorder.add(build('r.t6', 'no-profile', { profile: false }));
    await recorder.settled('no-profile');
    assert.deepEqual(statements.map((s) => s.kind), ['run'], 'no catalog query');
    assert.equal((await storedProfiles(app, 'no-profile')).size, 0);
    assert.equal(Number(await app.db.value("SELECT count(*) FROM _service.model_freshness WHERE run_id = 'no-profile'")), 1);
  });

  it(`${MIN_BATCH} queued builds start a batch at once; fewer wait for company until someone waits for them`, async () => {
    const { ctx, statements } = countingContext(app);
    const recorder = new BuildRecorder(ctx);
    const tick = () => new Promise((resolve) => setImmediate(resolve));
    await app.db.run(`CREATE SCHEMA company; ${Array.from({ length: MIN_BATCH + 3 }, (_, i) => `CREATE TABLE company.t${i} AS SELECT ${i} AS x;`).join('\n')}`);
    for (let i = 0; i < MIN_BATCH; i++) recorder.add(build(`company.t${i}`, 'company'));
    await tick();
    for (let i = MIN_BATCH; i < MIN_BATCH + 3; i++) {
      recorder.add(build(`company.t${i}`, 'company'));
      await tick();
    }
    await recorder.settled('company');
    // Each batch fingerprints its relations in one query.
    const batches = statements.filter((s) => s.kind === 'all' && !s.sql.startsWith('catalog.') && !s.sql.includes('PARTITION BY p.model')).map((s) => (s.sql.match(/ AS k, CAST\(count/g) ?? []).length);
    assert.deepEqual(batches, [MIN_BATCH, 3], 'the late builds shared one batch');
    assert.equal((await storedProfiles(app, 'company')).size, MIN_BATCH + 3);
  });

  it(`a lone build is recorded within about ${MAX_WAIT_MS} ms even if nobody waits for it`, async () => {
    // The wait is timed on a clock the test moves.
    const clock = new FakeClock(Date.now());
    const { ctx } = countingContext(app, clock);
    const recorder = new BuildRecorder(ctx);
    recorder.add(build('r.t9', 'lone'));
    await waitUntil(() => clock.pending === 1, 'the recorder to wait for more builds');
    await clock.advance(MAX_WAIT_MS - 1);
    assert.equal((await storedProfiles(app, 'lone')).size, 0, 'it waited for other builds first');
    await clock.advance(1);
    await waitUntil(async () => (await storedProfiles(app, 'lone')).size === 1, 'the lone build to be recorded');
  });

  it('the builds of a run said to be all queued are recorded at once, without waiting for company', async () => {
    // The clock never moves: only allQueued can start a batch of fewer than MIN_BATCH builds.
    const clock = new FakeClock(Date.now());
    const { ctx } = countingContext(app, clock);
    const recorder = new BuildRecorder(ctx);
    // Said before the worker looks at the queue (as when a batch is being recorded while the run's
    // last model ends): the worker must not start waiting for company afterwards.
    recorder.add(build('r.t10', 'all-queued'));
    recorder.add(build('r.t11', 'all-queued'));
    recorder.allQueued('all-queued');
    await waitUntil(async () => (await storedProfiles(app, 'all-queued')).size === 2, 'the run to be recorded');
    // Another run being complete does not start this one's batch.
    recorder.add(build('r.t12', 'later'));
    recorder.allQueued('another-run');
    await waitUntil(() => clock.pending === 1, 'the recorder to wait for more builds');
    assert.equal((await storedProfiles(app, 'later')).size, 0);
    recorder.allQueued('later');
    await waitUntil(async () => (await storedProfiles(app, 'later')).size === 1, 'the later run to be recorded');
  });

  it('a rebuilt relation with the same content takes over its last profile; a changed one is profiled again', async () => {
    await app.db.run(`CREATE TABLE r.fp AS SELECT range AS id, range % 5 AS g, CASE WHEN range % 7 = 0 THEN NULL ELSE 'x' || (range % 3) END AS s FROM range(1000)`);
    const { ctx, statements, logged } = countingContext(app);
    const recorder = new BuildRecorder(ctx);
    const profiledIn = (runId: string) => {
      const run = statements.filter((s) => s.kind === 'run').at(-1)!.sql;
      return { profiled: run.includes('count(DISTINCT'), copied: run.includes('INSERT INTO _service.model_profile_fingerprints (id, fingerprint) VALUES'), runId };
    };
    const expected = async () => {
      const stats = await computeStats({ db: app.db } as PluginContext, 'r', 'fp');
      return { row_count: stats.row_count, columns: stats.columns.map(({ name, type, null_count, null_pct, distinct_count }) => ({ name, type, null_count, null_pct, distinct_count })) };
    };
    const recordRun = async (runId: string) => {
      recorder.add(build('r.fp', runId));
      await recorder.settled(runId);
      return profiledIn(runId);
    };

    assert.deepEqual(await recordRun('fp-1'), { profiled: true, copied: false, runId: 'fp-1' }, 'a first profile is computed');
    const first = (await storedProfiles(app, 'fp-1')).get('r.fp');
    assert.deepEqual(first, await expected());

    // Rebuilt with the same rows in another order: nothing a profile measures changed.
    await app.db.run('CREATE OR REPLACE TABLE r.fp AS SELECT * FROM r.fp ORDER BY id DESC');
    assert.deepEqual(await recordRun('fp-2'), { profiled: false, copied: true, runId: 'fp-2' }, 'an unchanged relation is not profiled again');
    assert.deepEqual((await storedProfiles(app, 'fp-2')).get('r.fp'), first);

    // Same row count, same columns, one value changed: one more distinct value in g.
    await app.db.run('UPDATE r.fp SET g = 99 WHERE id = 3');
    assert.deepEqual(await recordRun('fp-3'), { profiled: true, copied: false, runId: 'fp-3' }, 'a changed relation is profiled');
    const third = (await storedProfiles(app, 'fp-3')).get('r.fp');
    assert.deepEqual(third, await expected());
    assert.equal(third?.columns[1].distinct_count, 6);

    // Same values under another type: the profile names the type, so it is computed again.
    await app.db.run('CREATE OR REPLACE TABLE r.fp AS SELECT id, CAST(g AS INTEGER) AS g, s FROM r.fp');
    assert.deepEqual(await recordRun('fp-4'), { profiled: true, copied: false, runId: 'fp-4' }, 'a relation whose columns changed is profiled');
    assert.deepEqual((await storedProfiles(app, 'fp-4')).get('r.fp'), await expected());
    assert.deepEqual(logged, []);
  });

  it('settled waits for its own run; a run with nothing queued is settled at once', async () => {
    const { ctx } = countingContext(app);
    const recorder = new BuildRecorder(ctx);
    await recorder.settled('nothing-queued');
    recorder.add(build('r.t7', 'settle-a'));
    recorder.add(build('r.t8', 'settle-b'));
    await recorder.settled('settle-b');
    assert.equal((await storedProfiles(app, 'settle-a')).size, 1, 'builds queued earlier are recorded first');
    assert.equal((await storedProfiles(app, 'settle-b')).size, 1);
    await recorder.settled('settle-a');
  });
});
