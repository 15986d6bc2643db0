import assert from 'node:assert/strict';
import { after, afterEach, before, describe, it } from 'node:test';
import type { ColumnProfile } from '../../../plugins/quality/api-types.js';
import type { Caller } from '../../../sdk/index.js';
import { bootApp, closeInProcessClis, makeProject, runInProcess, startServer, type TestServer } from '../../helpers.js';
import { fireBuild, fireTransformEnd, quality } from './util.js';

// The CLI's App holds the project's database: closed after each test, before another opens it.
afterEach(closeInProcessClis);

const VIEWER: Caller = { username: 'vera', role: 'viewer', authenticated: true };

/** A profiled column as the API answers it (samples are always there when the profile is asked for). */
type Col = ColumnProfile & { sample_values: unknown[] };

describe('quality: profiles', () => {
  let s: TestServer;
  let root: string;
  let closed = false;
  before(async () => {
    root = makeProject();
    s = await startServer(root);
    await s.app.db.run(`CREATE SCHEMA crm;
      CREATE TABLE crm.people AS SELECT * FROM (VALUES
        (1, 'ann@x.io', 30, DATE '2024-01-05', [1, 2]),
        (2, 'bob@x.io', NULL, DATE '2024-03-01', [3]),
        (3, NULL, 50, DATE '2023-12-31', NULL),
        (4, 'dee@x.io', 40, NULL, [1, 2])
      ) v(id, email, age, joined, tags);
      CREATE VIEW crm.adults AS SELECT * FROM crm.people WHERE age >= 18;`);
  });
  after(async () => {
    if (!closed) await s.close();
  });

  const col = (cols: Col[], name: string) => cols.find((c) => c.name === name) as Col;

  it('GET /api/tables/{schema}/{table}/profile computes per-column statistics', async () => {
    const r = await s.request('GET', '/api/tables/crm/people/profile');
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.row_count, 4);
    assert.equal(r.body.column_count, 5);
    const age = col(r.body.columns, 'age');
    assert.deepEqual(
      { nulls: age.null_count, pct: age.null_pct, distinct: age.distinct_count, min: age.min, max: age.max, avg: age.avg },
      { nulls: 1, pct: 25, distinct: 3, min: 30, max: 50, avg: 40 },
    );
    const email = col(r.body.columns, 'email');
    assert.equal(email.min, 'ann@x.io');
    assert.equal(email.max, 'dee@x.io');
    assert.equal(email.avg, null, 'no average for text');
    assert.deepEqual(email.sample_values, ['ann@x.io', 'bob@x.io', 'dee@x.io']);
    const joined = col(r.body.columns, 'joined');
    assert.equal(joined.min, '2023-12-31');
    const tags = col(r.body.columns, 'tags');
    assert.equal(tags.distinct_count, 2, 'nested values are counted by their text');
    assert.equal(tags.min, null);
    const view = await s.request('GET', '/api/tables/crm/adults/profile');
    assert.equal(view.body.row_count, 3);
    const missing = await s.request('GET', '/api/tables/crm/nobody/profile');
    assert.equal(missing.status, 404);
    assert.equal(missing.body.error.code, 'table_not_found');
  });

  it('sample values are masked per policy and min/max of masked columns are withheld', async () => {
    const created = await s.request('POST', '/api/query', { sql: 'CREATE MASKING POLICY ON crm.people.email METHOD redact' });
    assert.equal(created.status, 200, created.text);
    const profile = (await quality(s.app).profile('crm', 'people', VIEWER)) as unknown as { columns: Col[] };
    const email = col(profile.columns, 'email');
    assert.equal(email.masked, true);
    assert.deepEqual(email.sample_values, ['***']);
    assert.equal(email.min, null);
    assert.equal(email.distinct_count, 3, 'counts are not data values');
    const asAdmin = await s.request('GET', '/api/tables/crm/people/profile');
    assert.deepEqual(col(asAdmin.body.columns, 'email').sample_values, ['ann@x.io', 'bob@x.io', 'dee@x.io'], 'admins are exempt by default');

    // Stored assertion diagnostics are read by viewers, so they hold masked values too.
    const b = await fireBuild(s.app, 'crm.people', 'run-mask', ['no_nulls(age)', 'unique(email)']);
    const nn = (b.extras.assertions as Array<{ detail: { sample_rows: Array<Record<string, unknown>> } }>)[0];
    assert.equal(nn.detail.sample_rows[0].email, '***');
    await s.request('DELETE', `/api/masking/policies/${(await s.app.db.value<string>("SELECT id FROM _service.masking_policies WHERE column_name = 'email'"))}`);
  });

  it('records a metrics-only profile after each build and serves model profiles with history', async () => {
    for (const runId of ['run-p1', 'run-p2']) {
      await fireBuild(s.app, 'crm.people', runId);
      await fireTransformEnd(s.app, runId, [{ model: 'crm.people', status: 'built' }]);
    }
    const stored = await s.app.db.all("SELECT row_count, columns FROM _service.model_profiles WHERE model = 'crm.people' ORDER BY seq");
    assert.ok(stored.length >= 2);
    const metrics = JSON.parse(String(stored[0].columns));
    assert.deepEqual(Object.keys(metrics[0]).sort(), ['distinct_count', 'name', 'null_count', 'null_pct', 'type'], 'no data values are stored');

    const one = await s.request('GET', '/api/profiles/crm.people');
    assert.equal(one.status, 200, one.text);
    assert.equal(one.body.model, 'crm.people');
    assert.equal(one.body.row_count, 4);
    assert.ok(one.body.history.length >= 2);
    assert.equal(one.body.history[0].run_id, 'run-p2');
    const all = await s.request('GET', '/api/profiles');
    assert.equal(all.status, 200);
    assert.ok(all.body.profiles.some((p: { model: string; row_count: number }) => p.model === 'crm.people' && p.row_count === 4));
    const unknown = await s.request('GET', '/api/profiles/crm.nothing');
    assert.equal(unknown.status, 404);
  });

  it('dp profile prints one model or a summary of every model', async () => {
    await s.close();
    closed = true;
    const out = await runInProcess(['profile', 'crm.people', '--project', root]);
    assert.equal(out.code, 0, out.stderr);
    assert.match(out.stdout, /crm\.people: 4 rows, 5 columns/);
    assert.match(out.stdout, /age\s+INTEGER\s+1\s+25\s+3\s+30\s+50\s+40/);
    const json = await runInProcess(['profile', '--project', root, '--json']);
    assert.equal(json.code, 0, json.stderr);
    assert.deepEqual(JSON.parse(json.stdout), [{ model: 'crm.people', status: 'ok', rows: 4, columns: 5, null_cells: 4 }]);
  });
});

describe('quality: profiles when masking is disabled', () => {
  it('profiles still work with the masking plugin disabled', async () => {
    const app = await bootApp(makeProject({ 'project.yml': 'name: t\ndatabase:\n  path: t.duckdb\nplugins:\n  disable: [masking]\n' }));
    try {
      await app.db.run('CREATE TABLE main.t AS SELECT 1 AS a');
      const p = (await quality(app).profile('main', 't', VIEWER)) as unknown as { columns: Col[] };
      assert.deepEqual(col(p.columns, 'a').sample_values, [1]);
    } finally {
      await app.close();
    }
  });
  const col = (cols: Col[], name: string) => cols.find((c) => c.name === name) as Col;
});
