import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { cliInProcess, copyShop, type InProcessCli } from '../../helpers.js';

describe('models CLI: seed, transform, check exit codes, promote, debug, diff --against', () => {
  let root: string;
  let cli: InProcessCli;
  const dp = (...args: string[]) => cli.run(args);
  before(() => {
    root = copyShop();
    cli = cliInProcess(root);
  });
  after(() => cli.close());

  it('seeds, transforms with a summary, and passes check on the example project', async () => {
    const seed = await dp('seed');
    assert.equal(seed.code, 0, seed.stderr);
    assert.match(seed.stdout, /seeds\.customers\s+built/);
    const t = await dp('transform');
    assert.equal(t.code, 0, t.stderr);
    assert.match(t.stdout, /transform success: 5 built/);
    assert.match(t.stderr, /\[5\/5\]/, 'progress lines go to stderr');
    const check = await dp('check');
    assert.equal(check.code, 0, check.stdout + check.stderr);
    assert.match(check.stdout, /check passed/);
  });

  it('check: a failing warn contract keeps exit 0; a bind error or a failing inline assertion exits 1', async () => {
    fs.writeFileSync(
      path.join(root, 'contracts/extra.yml'),
      'contracts:\n  - name: too_many_customers\n    model: marts.customer_orders\n    severity: warn\n    assertions:\n      - row_count > 100000\n',
    );
    const warn = await dp('check', '--json');
    assert.equal(warn.code, 0, warn.stdout + warn.stderr);
    const report = JSON.parse(warn.stdout);
    assert.equal(report.contracts.warnings_failed, 1);

    fs.writeFileSync(path.join(root, 'transform/marts/broken.sql'), '-- @config materialized=table, schema=marts\nSELECT missing_col FROM staging.stg_orders\n');
    const bind = await dp('check', '--json');
    assert.equal(bind.code, 1);
    const failed = JSON.parse(bind.stdout).validation.models.find((m: { model: string }) => m.model === 'marts.broken');
    assert.equal(failed.valid, false);
    assert.match(failed.errors[0], /transform\/marts\/broken\.sql: .*missing_col/);
    fs.rmSync(path.join(root, 'transform/marts/broken.sql'));

    const stg = path.join(root, 'transform/staging/stg_customers.sql');
    const original = fs.readFileSync(stg, 'utf8');
    fs.writeFileSync(stg, original.replace('-- @assert unique(customer_id)', '-- @assert row_count > 100000'));
    const assertion = await dp('check', '--json');
    assert.equal(assertion.code, 1);
    assert.ok(JSON.parse(assertion.stdout).assertions.failed >= 1);
    fs.writeFileSync(stg, original);
    fs.rmSync(path.join(root, 'contracts/extra.yml'));
  });

  it('promotes the last SQL cell of a notebook, a SQL file and SQL text', async () => {
    const fromNotebook = await dp('promote', 'notebooks/explore_orders.dpnb', '--name', 'monthly', '--schema', 'marts');
    assert.equal(fromNotebook.code, 0, fromNotebook.stderr);
    assert.equal(
      fs.readFileSync(path.join(root, 'transform/marts/monthly.sql'), 'utf8'),
      '-- @config materialized=table, schema=marts\nSELECT * FROM marts.revenue_by_month ORDER BY month\n',
    );
    const again = await dp('promote', 'notebooks/explore_orders.dpnb', '--name', 'monthly', '--schema', 'marts');
    assert.equal(again.code, 1);
    assert.match(again.stderr, /already exists/);
    fs.writeFileSync(path.join(root, 'scratch.sql'), '-- @assert row_count > 0\nSELECT 1 AS one;\n');
    assert.equal((await dp('promote', 'scratch.sql', '--name', 'one', '--schema', 'sandbox', '--materialized', 'view')).code, 0);
    assert.equal(fs.readFileSync(path.join(root, 'transform/sandbox/one.sql'), 'utf8'), '-- @config materialized=view, schema=sandbox\n-- @assert row_count > 0\nSELECT 1 AS one;\n');
    assert.equal((await dp('promote', 'SELECT 2 AS two', '--name', 'two', '--schema', 'sandbox')).code, 0);
    const bad = await dp('promote', 'DELETE FROM x', '--name', 'three', '--schema', 'sandbox');
    assert.equal(bad.code, 1);
    assert.match(bad.stderr, /one SELECT statement/);
    assert.ok(!fs.existsSync(path.join(root, 'transform/sandbox/three.sql')));
  });

  it('promotes a last cell that reads earlier cells by id with those cells inlined as CTEs', async () => {
    const cells = [
      { type: 'sql', id: 'paid', source: 'SELECT * FROM staging.stg_orders WHERE status = \'completed\'' },
      { type: 'sql', id: 'unused', source: 'SELECT 1 AS x' },
      { type: 'sql', source: 'SELECT count(*) AS n FROM paid' },
    ];
    fs.writeFileSync(path.join(root, 'notebooks/named.dpnb'), JSON.stringify({ cells }));
    const r = await dp('promote', 'notebooks/named.dpnb', '--name', 'paid_count', '--schema', 'marts');
    assert.equal(r.code, 0, r.stderr);
    const model = fs.readFileSync(path.join(root, 'transform/marts/paid_count.sql'), 'utf8');
    assert.match(model, /WITH paid AS \(\nSELECT \* FROM staging\.stg_orders WHERE status = 'completed'\n\)\nSELECT count\(\*\) AS n FROM paid/);
    assert.doesNotMatch(model, /unused/);
    const built = await dp('transform', '--select', 'marts.paid_count');
    assert.equal(built.code, 0, built.stdout + built.stderr);
    fs.rmSync(path.join(root, 'transform/marts/paid_count.sql'));
  });

  it('writes a debug notebook querying the upstreams and the model', async () => {
    const r = await dp('debug', 'marts.revenue_by_month');
    assert.equal(r.code, 0, r.stderr);
    const nb = JSON.parse(fs.readFileSync(path.join(root, 'notebooks/debug_marts_revenue_by_month.dpnb'), 'utf8'));
    const sql = nb.cells.filter((c: { type: string }) => c.type === 'sql').map((c: { source: string }) => c.source).join('\n');
    assert.match(sql, /"staging"\."stg_orders"/);
    assert.match(sql, /"staging"\."stg_payments"/);
    assert.match(sql, /FROM "marts"\."revenue_by_month"/);
    assert.doesNotMatch(sql, /@config/);
  });

  it('diff --against limits to models changed on HEAD since the branch, with clear git errors', async () => {
    const notRepo = await dp('diff', '--against', 'main');
    assert.equal(notRepo.code, 1);
    assert.match(notRepo.stderr, /not inside (a git repository|one)/);
    const git = (...args: string[]) => execFileSync('git', ['-c', 'user.email=t@example.com', '-c', 'user.name=t', ...args], { cwd: root, stdio: 'pipe' });
    git('init', '-q', '-b', 'main');
    git('add', '.');
    git('commit', '-q', '-m', 'base');
    git('branch', 'base');
    const file = path.join(root, 'transform/marts/customer_orders.sql');
    fs.writeFileSync(file, fs.readFileSync(file, 'utf8').replace("WHERE status <> 'returned'", "WHERE status NOT IN ('returned', 'pending')"));
    git('commit', '-q', '-am', 'change');
    const r = await dp('diff', '--against', 'base', '--json');
    assert.equal(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout);
    assert.deepEqual(out.models.map((m: { model: string }) => m.model), ['marts.customer_orders']);
    assert.equal(out.models[0].key[0], 'customer_id');
    const unknown = await dp('diff', '--against', 'no-such-branch');
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /no branch or commit named 'no-such-branch'/);
  });
});
