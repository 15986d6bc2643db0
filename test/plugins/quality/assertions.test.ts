import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import { AFTER_MODEL_BUILD, type AssertionOutcome } from '../../../sdk/index.js';
import { closeInProcessClis, makeProject, runInProcess, startServer, type TestServer } from '../../helpers.js';
import { fireBuild, fireTransformEnd, quality } from './util.js';

// The CLI's App holds the project's database: closed after each test, before another opens it.
afterEach(closeInProcessClis);

describe('quality: inline assertions', () => {
  let s: TestServer;
  let root: string;
  let closed = false;
  const check = async (relation: string, expression: string): Promise<AssertionOutcome> => {
    const [o] = await quality(s.app).evaluateAssertions(relation, [expression]);
    return o;
  };

  before(async () => {
    root = makeProject();
    s = await startServer(root);
    await s.app.db.run(`
      CREATE SCHEMA analytics;
      CREATE TABLE analytics.orders AS SELECT * FROM (VALUES
        (1, 'a@x.io', 'completed', 10.0),
        (2, 'b@x.io', 'shipped', 20.0),
        (2, 'c@x.io', 'lo,st', 5.0),
        (3, NULL, 'completed', -1.0),
        (4, NULL, 'weird', 7.0),
        (4, 'd@x.io', 'weird', 3.0)
      ) v(id, email, status, amount);
      CREATE TABLE analytics.clean AS SELECT i AS id, 'e' || i AS email, 'completed' AS status, i * 1.5 AS amount FROM range(1, 8) t(i);
      CREATE TABLE analytics.many_dups AS SELECT i % 15 AS k FROM range(0, 60) t(i);`);
  });
  after(async () => {
    if (!closed) await s.close();
  });

  it('row_count passes and fails with actual versus threshold', async () => {
    const ok = await check('analytics.orders', 'row_count > 3');
    assert.equal(ok.passed, true);
    const bad = await check('analytics.orders', 'row_count >= 10');
    assert.equal(bad.passed, false);
    assert.deepEqual({ actual: bad.detail.actual, operator: bad.detail.operator, threshold: bad.detail.threshold }, { actual: 6, operator: '>=', threshold: 10 });
    assert.equal((await check('analytics.orders', 'row_count = 6')).passed, true);
  });

  it('unique reports the top duplicated values with counts, at most 10', async () => {
    assert.equal((await check('analytics.clean', 'unique(id)')).passed, true);
    const bad = await check('analytics.orders', 'unique(id)');
    assert.equal(bad.passed, false);
    assert.equal(bad.detail.duplicate_values, 2);
    assert.equal(bad.detail.duplicate_rows, 4);
    assert.deepEqual(bad.detail.top_duplicates, [
      { value: 2, count: 2 },
      { value: 4, count: 2 },
    ]);
    const many = await check('analytics.many_dups', 'unique(k)');
    assert.equal(many.detail.duplicate_values, 15);
    assert.equal((many.detail.top_duplicates as unknown[]).length, 10);
    const composite = await check('analytics.orders', 'unique(id, email)');
    assert.equal(composite.passed, true);
  });

  it('no_nulls reports null count, percentage and sample rows', async () => {
    assert.equal((await check('analytics.clean', 'no_nulls(email)')).passed, true);
    const bad = await check('analytics.orders', 'no_nulls(email)');
    assert.equal(bad.passed, false);
    assert.equal(bad.detail.null_count, 2);
    assert.equal(bad.detail.total_rows, 6);
    assert.equal(bad.detail.null_percentage, 33.33);
    const sample = bad.detail.sample_rows as Array<Record<string, unknown>>;
    assert.equal(sample.length, 2);
    assert.deepEqual(sample.map((r) => r.id).sort(), [3, 4]);
    assert.ok(sample.every((r) => r.email === null));
  });

  it('accepted_values reports unexpected values with counts; list literals may hold quotes and commas', async () => {
    const ok = await check('analytics.orders', "accepted_values(status, ['completed', 'shipped', 'lo,st', 'weird'])");
    assert.equal(ok.passed, true, JSON.stringify(ok.detail));
    const bad = await check('analytics.orders', "accepted_values(status, ['completed', 'shipped', 'it''s'])");
    assert.equal(bad.passed, false);
    assert.deepEqual(bad.detail.accepted, ['completed', 'shipped', "it's"]);
    assert.deepEqual(bad.detail.unexpected_values, [
      { value: 'weird', count: 2 },
      { value: 'lo,st', count: 1 },
    ]);
    assert.equal(bad.detail.unexpected_rows, 3);
    const numeric = await check('analytics.orders', 'accepted_values(id, [1, 2, 3])');
    assert.deepEqual(numeric.detail.unexpected_values, [{ value: 4, count: 2 }]);
    const malformed = await check('analytics.orders', 'accepted_values(status)');
    assert.equal(malformed.passed, false);
    assert.match(String(malformed.detail.error), /accepted_values\(\) takes a column and a list/);
  });

  it('a boolean SQL expression must return one truthy value; row-level expressions must hold on every row', async () => {
    assert.equal((await check('analytics.orders', 'sum(amount) > 0')).passed, true);
    assert.equal((await check('analytics.orders', '"sum(amount) > 0"')).passed, true, 'a directive may quote the expression');
    const agg = await check('analytics.orders', 'min(amount) >= 0');
    assert.equal(agg.passed, false);
    assert.equal(agg.detail.value, false);
    const rowLevel = await check('analytics.orders', 'amount >= 0');
    assert.equal(rowLevel.passed, false);
    assert.equal(rowLevel.detail.failing_rows, 1);
    assert.equal((rowLevel.detail.sample_rows as Array<Record<string, unknown>>)[0].id, 3);
    assert.equal((await check('analytics.clean', 'amount >= 0')).passed, true);
    const broken = await check('analytics.orders', 'this is not sql');
    assert.equal(broken.passed, false);
    assert.match(String(broken.detail.error), /Not a valid SQL expression/);
    const missing = await check('analytics.orders', 'max(no_such_column) > 1');
    assert.equal(missing.passed, false);
    assert.match(String(missing.detail.error), /no_such_column/);
  });

  it('a relation that does not exist fails every assertion with a reason', async () => {
    const out = await quality(s.app).evaluateAssertions('analytics.nope', ['row_count > 0', 'unique(id)']);
    assert.equal(out.length, 2);
    assert.ok(out.every((o) => !o.passed && /does not exist/.test(String(o.detail.error))));
  });

  it('afterModelBuild evaluates every assertion, flags assertion_failed without rollback, and stores results', async () => {
    const expressions = ['row_count > 0', 'unique(id)', 'no_nulls(email)', "accepted_values(status, ['completed'])", 'sum(amount) > 0'];
    const b = await fireBuild(s.app, 'analytics.orders', 'run-a1', expressions);
    assert.equal(b.status, 'assertion_failed');
    const outcomes = b.extras.assertions as AssertionOutcome[];
    assert.deepEqual(
      outcomes.map((o) => o.passed),
      [true, false, false, false, true],
    );
    assert.equal(Number(await s.app.db.value('SELECT count(*) FROM analytics.orders')), 6, 'data is not rolled back');
    const stored = Number(await s.app.db.value("SELECT count(*) FROM _service.assertion_results WHERE run_id = 'run-a1'"));
    assert.equal(stored, 5);

    const clean = await fireBuild(s.app, 'analytics.clean', 'run-a1', ['unique(id)', 'no_nulls(email)']);
    assert.equal(clean.status, 'built');
    await fireTransformEnd(s.app, 'run-a1', [
      { model: 'analytics.orders', status: 'assertion_failed' },
      { model: 'analytics.clean', status: 'built' },
    ]);

    const all = await s.request('GET', '/api/assertions?limit=3');
    assert.equal(all.status, 200);
    assert.equal(all.body.results.length, 3);
    const one = await s.request('GET', '/api/assertions/analytics.orders');
    assert.equal(one.status, 200);
    assert.equal(one.body.results.length, 5);
    const uniq = one.body.results.find((r: { expression: string }) => r.expression === 'unique(id)');
    assert.equal(uniq.passed, false);
    assert.equal(uniq.detail.top_duplicates.length, 2);
  });

  it('a build that did not succeed is not checked', async () => {
    const b = await fireBuild(s.app, 'analytics.orders', 'run-a2', ['row_count > 100']);
    assert.equal(b.status, 'assertion_failed');
    const errored = { ...b, status: 'error' as const, extras: {} as Record<string, unknown> };
    await s.app.hookPoint(AFTER_MODEL_BUILD)!.promise(errored);
    assert.equal(errored.status, 'error');
    assert.equal(errored.extras.assertions, undefined);
  });

  it('assertion-debug re-runs the last assertions with full diagnostics and the offending SQL', async () => {
    const r = await s.request('GET', '/api/quality/assertion-debug/analytics.orders');
    assert.equal(r.status, 200);
    assert.equal(r.body.model, 'analytics.orders');
    assert.equal(r.body.total, 1, 'the last run checked one expression');
    assert.equal(r.body.assertions[0].expression, 'row_count > 100');
    await fireBuild(s.app, 'analytics.orders', 'run-a3', ['no_nulls(email)', 'row_count > 0']);
    const again = await s.request('GET', '/api/quality/assertion-debug/analytics.orders');
    const nn = again.body.assertions.find((a: { expression: string }) => a.expression === 'no_nulls(email)');
    assert.match(nn.detail.sql, /IS NULL/);
    assert.equal(again.body.failed, 1);
    const missing = await s.request('GET', '/api/quality/assertion-debug/analytics.nothing_here');
    assert.equal(missing.status, 404);
  });

  it('dp-style bare names resolve to the models seen built', async () => {
    const r = await s.request('GET', '/api/assertions/clean');
    assert.equal(r.status, 200);
    assert.equal(r.body.model, 'analytics.clean');
    const unknown = await s.request('GET', '/api/assertions/unknown_model');
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body.error.code, 'model_not_found');
  });

  it('dp assertions lists recent results, optionally for one model', async () => {
    await s.close();
    closed = true;
    const all = await runInProcess(['assertions', '--project', root, '--json']);
    assert.equal(all.code, 0, all.stderr);
    const rows = JSON.parse(all.stdout);
    assert.ok(rows.length >= 9);
    const one = await runInProcess(['assertions', 'orders', '--project', root]);
    assert.equal(one.code, 0, one.stderr);
    assert.match(one.stdout, /analytics\.orders\s+no_nulls\(email\)\s+FAIL\s+2 NULL\(s\) in 6 rows \(33\.33%\)/);
    assert.doesNotMatch(one.stdout, /analytics\.clean/);
  });
});
