import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { bootApp, closeInProcessClis, makeProject, runInProcess, startServer, type TestServer } from '../../helpers.js';

after(closeInProcessClis);

const PASSING = `contracts:
  - name: orders_ok
    model: sales.orders
    description: Orders are unique and complete
    assertions:
      - row_count >= 3
      - unique(order_id)
      - no_nulls(customer)
`;

const WARN_ONLY = `contracts:
  - name: statuses_warn
    model: sales.orders
    severity: warn
    assertions:
      - "accepted_values(status, ['paid', 'shipped'])"
      - "min(amount) >= 0"
`;

const FAILING_ERROR = `contracts:
  - model: sales.orders
    assertions:
      - row_count > 100
`;

const INVALID = {
  'contracts/broken.yml': 'contracts:\n  - name: [unclosed\n',
  'contracts/not_a_list.yml': 'contracts: nope\n',
  'contracts/mixed.yml': `contracts:
  - name: good_in_mixed
    model: sales.orders
    assertions: [row_count > 0]
  - name: bad_severity
    model: sales.orders
    severity: fatal
    assertions: [row_count > 0]
  - name: no_schema
    model: orders
    assertions: [row_count > 0]
`,
};

async function seedWarehouse(root: string): Promise<void> {
  const app = await bootApp(root);
  await app.db.run(`CREATE SCHEMA sales;
    CREATE TABLE sales.orders AS SELECT * FROM (VALUES
      (1, 'ann', 'paid', 10.0), (2, 'bob', 'shipped', 5.0), (3, 'cy', 'refunded', -5.0)) v(order_id, customer, status, amount)`);
  await app.close();
}

describe('quality: contracts', () => {
  let root: string;
  before(async () => {
    root = makeProject({ 'contracts/orders.yml': PASSING, 'contracts/statuses.yml': WARN_ONLY });
    await seedWarehouse(root);
  });

  it('dp contracts exits 0 when only warn contracts fail, and 1 when an error contract fails', async () => {
    const ok = await runInProcess(['contracts', '--project', root]);
    assert.equal(ok.code, 0, ok.stderr + ok.stdout);
    assert.match(ok.stdout, /PASS\s+orders_ok/);
    assert.match(ok.stdout, /WARN\s+statuses_warn/);
    assert.match(ok.stdout, /"refunded" \(1\)/);

    fs.writeFileSync(path.join(root, 'contracts', 'volume.yml'), FAILING_ERROR);
    const bad = await runInProcess(['contracts', '--project', root, '--json']);
    assert.equal(bad.code, 1);
    const run = JSON.parse(bad.stdout);
    assert.equal(run.total, 3);
    assert.equal(run.passed, 1);
    assert.equal(run.failed, 2);
    const volume = run.results.find((r: { contract_name: string }) => r.contract_name === 'volume');
    assert.ok(volume, 'the name defaults to the file stem');
    assert.equal(volume.severity, 'error');
    assert.deepEqual(volume.assertions[0].detail, { form: 'row_count', actual: 3, operator: '>', threshold: 100 });
    assert.equal(typeof volume.duration_ms, 'number');

    const filtered = await runInProcess(['contracts', 'statuses_warn', '--project', root]);
    assert.equal(filtered.code, 0, 'only the warn contract runs');
    const byModel = await runInProcess(['contracts', 'orders', '--project', root, '--json']);
    assert.equal(byModel.code, 1);
    assert.equal(JSON.parse(byModel.stdout).total, 3, 'a bare model name selects its contracts');
    const unknown = await runInProcess(['contracts', 'no_such_contract', '--project', root]);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /No contract is named 'no_such_contract'/);

    const history = await runInProcess(['contracts', '--history', '--project', root, '--json']);
    assert.equal(history.code, 0);
    assert.ok(JSON.parse(history.stdout).length >= 6);
    fs.rmSync(path.join(root, 'contracts', 'volume.yml'));
  });

  it('invalid files are reported with file and reason without blocking valid contracts', async () => {
    for (const [rel, text] of Object.entries(INVALID)) fs.writeFileSync(path.join(root, rel), text);
    try {
      const r = await runInProcess(['contracts', '--project', root]);
      assert.equal(r.code, 1, 'an invalid contract file fails the command');
      assert.match(r.stderr, /contracts\/broken\.yml: YAML syntax error/);
      assert.match(r.stderr, /contracts\/not_a_list\.yml: the file needs a top-level 'contracts:' list/);
      assert.match(r.stderr, /contracts\/mixed\.yml \(entry 2\): 'severity' must be one of error, warn/);
      assert.match(r.stderr, /contracts\/mixed\.yml \(entry 3\): 'model' must be schema.table/);
      assert.match(r.stdout, /PASS\s+good_in_mixed/);
      assert.match(r.stdout, /PASS\s+orders_ok/);
    } finally {
      for (const rel of Object.keys(INVALID)) fs.rmSync(path.join(root, rel));
    }
  });

  describe('over HTTP', () => {
    let s: TestServer;
    before(async () => {
      await closeInProcessClis(); // the server opens the database the CLI runs held
      fs.writeFileSync(path.join(root, 'contracts', 'mixed.yml'), INVALID['contracts/mixed.yml']);
      s = await startServer(root);
    });
    after(async () => {
      await s.close();
      fs.rmSync(path.join(root, 'contracts', 'mixed.yml'));
    });

    it('lists contracts and load errors', async () => {
      const r = await s.request('GET', '/api/contracts');
      assert.equal(r.status, 200);
      assert.deepEqual(r.body.contracts.map((c: { name: string }) => c.name).sort(), ['good_in_mixed', 'orders_ok', 'statuses_warn']);
      const orders = r.body.contracts.find((c: { name: string }) => c.name === 'orders_ok');
      assert.deepEqual(orders, {
        name: 'orders_ok',
        model: 'sales.orders',
        description: 'Orders are unique and complete',
        severity: 'error',
        assertions: ['row_count >= 3', 'unique(order_id)', 'no_nulls(customer)'],
        file: 'contracts/orders.yml',
      });
      assert.equal(r.body.errors.length, 2);
      assert.ok(r.body.errors.every((e: { file: string }) => e.file === 'contracts/mixed.yml'));
    });

    it('runs contracts with the SPEC response shape and records history', async () => {
      const r = await s.request('POST', '/api/contracts/run');
      assert.equal(r.status, 200, r.text);
      assert.deepEqual([r.body.total, r.body.passed, r.body.failed], [3, 2, 1]);
      const warn = r.body.results.find((x: { contract_name: string }) => x.contract_name === 'statuses_warn');
      assert.deepEqual(Object.keys(warn).sort(), ['assertions', 'contract_name', 'duration_ms', 'error', 'model', 'passed', 'severity']);
      assert.equal(warn.passed, false);
      assert.equal(warn.error, null);
      assert.deepEqual(
        warn.assertions.map((a: { expression: string; passed: boolean }) => [a.expression, a.passed]),
        [
          ["accepted_values(status, ['paid', 'shipped'])", false],
          ['min(amount) >= 0', false],
        ],
      );
      assert.deepEqual(warn.assertions[0].detail.unexpected_values, [{ value: 'refunded', count: 1 }]);

      const one = await s.request('POST', '/api/contracts/run?contract=orders_ok');
      assert.equal(one.body.total, 1);
      const missing = await s.request('POST', '/api/contracts/run?contract=zzz');
      assert.equal(missing.status, 404);
      assert.equal(missing.body.error.code, 'contract_not_found');

      const h = await s.request('GET', '/api/contracts/history?contract=statuses_warn&limit=1');
      assert.equal(h.status, 200);
      assert.equal(h.body.history.length, 1);
      assert.equal(h.body.history[0].passed, false);
      assert.equal(h.body.history[0].severity, 'warn');
      assert.equal(h.body.history[0].detail.length, 2);
      const cols = await s.app.db.all("SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = '_service' AND table_name = 'contract_results' ORDER BY ordinal_position");
      assert.deepEqual(
        cols.slice(0, 7).map((c) => `${c.column_name} ${c.data_type}`),
        ['id VARCHAR', 'contract_name VARCHAR', 'model VARCHAR', 'passed BOOLEAN', 'severity VARCHAR', 'detail JSON', 'checked_at TIMESTAMP'],
      );
    });

    it('a contract on a model that was never built fails with an error', async () => {
      fs.writeFileSync(path.join(root, 'contracts', 'ghost.yml'), 'contracts:\n  - model: sales.ghost\n    assertions: [row_count > 0]\n');
      try {
        const r = await s.request('POST', '/api/contracts/run?contract=ghost');
        assert.equal(r.body.results[0].passed, false);
        assert.match(r.body.results[0].error, /sales\.ghost does not exist/);
      } finally {
        fs.rmSync(path.join(root, 'contracts', 'ghost.yml'));
      }
    });
  });
});
