import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { copyShop, startServer, type TestServer } from '../../helpers.js';
import { quality, startReceiver } from './util.js';

const FAILING_MODEL = `-- @config materialized=table, schema=marts
-- @assert row_count > 1000
-- @assert accepted_values(country, ['XX'])
-- assert: unique(customer_id)
SELECT customer_id, country FROM staging.stg_customers
`;

describe('quality: end to end through POST /api/transform (shop example)', () => {
  let s: TestServer;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;

  before(async () => {
    receiver = await startReceiver();
    const root = copyShop({ 'transform/marts/customer_countries.sql': FAILING_MODEL });
    const yml = path.join(root, 'project.yml');
    const text = fs.readFileSync(yml, 'utf8').replace(/alerts:\n  channels: \[log\]\n/, `alerts:\n  channels: [webhook]\n  webhook_url: ${receiver.url}/alerts\n`);
    assert.match(text, /webhook_url/);
    fs.writeFileSync(yml, text);
    s = await startServer(root);
    const seeds = await s.request('POST', '/api/seeds', {});
    assert.equal(seeds.status, 200, seeds.text);
  });
  after(async () => {
    await s.close();
    await receiver.close();
  });

  it('evaluates inline assertions on every built model and flags the failing one', async () => {
    const t = await s.request('POST', '/api/transform', {});
    assert.equal(t.status, 200, t.text);
    const byModel = Object.fromEntries(t.body.results.map((r: { model: string }) => [r.model, r]));
    assert.equal(byModel['marts.customer_orders'].status, 'built');
    const failing = byModel['marts.customer_countries'];
    assert.equal(failing.status, 'assertion_failed');
    assert.deepEqual(
      failing.extras.assertions.map((a: { expression: string; passed: boolean }) => [a.expression, a.passed]),
      [
        ['row_count > 1000', false],
        ["accepted_values(country, ['XX'])", false],
        ['unique(customer_id)', true],
      ],
    );
    assert.equal(t.body.status, 'success', 'an assertion failure is not a pipeline error');

    const stored = await s.request('GET', '/api/assertions/customer_countries');
    assert.equal(stored.status, 200, stored.text);
    assert.equal(stored.body.model, 'marts.customer_countries');
    assert.equal(stored.body.results.length, 3);
    const debug = await s.request('GET', '/api/quality/assertion-debug/marts.customer_countries');
    assert.equal(debug.body.failed, 2);
    assert.ok(debug.body.assertions[1].detail.unexpected_values.length > 0);

    await quality(s.app).drainAlerts();
    const alert = receiver.received.find((r) => r.body.alert_type === 'assertion_failure');
    assert.ok(alert, 'the assertion failure was alerted');
    assert.match(alert.body.message, /marts\.customer_countries: row_count > 1000 — row count 10, expected > 1000/);
  });

  it('records freshness and profiles, and compares profiles once enough history exists', async () => {
    const fresh = await s.request('GET', '/api/freshness?max_hours=1');
    const models = Object.fromEntries(fresh.body.models.map((m: { model: string }) => [m.model, m]));
    assert.equal(models['marts.customer_orders'].status, 'fresh');
    assert.equal(models['marts.revenue_by_month'].status, 'fresh');

    let last: { run_id: string } = { run_id: '' };
    for (let i = 0; i < 3; i++) {
      const t = await s.request('POST', '/api/transform', { force: true });
      assert.equal(t.status, 200, t.text);
      last = t.body;
      // Recorded off the critical path, but complete by the time the transform answers.
      const built = t.body.results.filter((r: { status: string }) => r.status === 'built' || r.status === 'assertion_failed').map((r: { model: string }) => r.model).sort();
      assert.equal(built.length, 6);
      const profiled = await s.app.db.all<{ model: string }>('SELECT model FROM _service.model_profiles WHERE run_id = $1 ORDER BY model', [t.body.run_id]);
      assert.deepEqual(profiled.map((p) => p.model), built);
      const recorded = await s.app.db.all<{ model: string }>('SELECT model FROM _service.model_freshness WHERE run_id = $1 ORDER BY model', [t.body.run_id]);
      assert.deepEqual(recorded.map((p) => p.model), built);
    }
    const reports = quality(s.app).anomalyReports(last.run_id) ?? [];
    const orders = reports.find((r) => r.model === 'marts.customer_orders');
    assert.ok(orders);
    assert.equal(orders.status, 'checked');
    assert.equal(orders.history_count, 3);
    assert.deepEqual(orders.anomalies, [], 'identical rebuilds are not anomalies');
    assert.ok(orders.skipped_metrics.some((m) => m.metric === 'row_count' && m.reason === 'zero_stddev'));

    const profile = await s.request('GET', '/api/profiles/customer_orders');
    assert.equal(profile.status, 200, profile.text);
    assert.equal(profile.body.model, 'marts.customer_orders');
    assert.equal(profile.body.row_count, 10);
    assert.equal(profile.body.history.length, 4);
    const all = await s.request('GET', '/api/profiles');
    assert.equal(all.body.profiles.length, 6);
  });
});
