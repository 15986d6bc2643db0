/**
 * The edit loop: init, validate, status, watch. `dp init` (no project yet) and `dp watch` (a
 * long-running process stopped by SIGINT) run the real binary; the commands on a project run in
 * this process (sdk/testing runCommand).
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { cliInProcess, DP_BIN, FIXTURE_PLUGINS, followOutput, makeProject, runCli, tempDir } from '../../helpers.js';

const made: string[] = [];
after(() => {
  for (const d of made) fs.rmSync(d, { recursive: true, force: true });
});

describe('dp init', () => {
  it('scaffolds a project that dp seed && dp transform && dp test runs green (and check, validate)', async () => {
    const parent = tempDir('dp-test-init-');
    made.push(parent);
    const init = runCli(['init', 'analytics'], { cwd: parent });
    assert.equal(init.code, 0, init.stdout + init.stderr);
    const root = path.join(parent, 'analytics');
    for (const f of ['project.yml', '.gitignore', 'seeds/customers.csv', 'seeds/orders.csv', 'transform/staging/stg_customers.sql', 'transform/staging/stg_orders.sql', 'transform/marts/customer_revenue.sql', 'contracts/marts.yml', 'tests/unit/customer_revenue.yml']) {
      assert.ok(fs.existsSync(path.join(root, f)), `${f} is scaffolded`);
    }
    const gitignore = fs.readFileSync(path.join(root, '.gitignore'), 'utf8');
    assert.match(gitignore, /^\*\.duckdb$/m);
    assert.match(gitignore, /^\.env$/m);
    assert.match(fs.readFileSync(path.join(root, 'project.yml'), 'utf8'), /^name: analytics$/m);
    assert.match(fs.readFileSync(path.join(root, 'project.yml'), 'utf8'), /^streams:$/m);
    const dp = cliInProcess(root);
    try {
      for (const args of [['seed'], ['transform'], ['test'], ['check'], ['validate']]) {
        const r = await dp.run(args);
        assert.equal(r.code, 0, `dp ${args.join(' ')}: ${r.stdout}${r.stderr}`);
      }
      const test = await dp.run(['test', '--json']);
      assert.equal(JSON.parse(test.stdout).passed, 1);
      // Versions and backups copy every table (masked columns raw): git must not pick them up.
      for (const args of [['versions', 'create'], ['backup']]) {
        const r = await dp.run(args);
        assert.equal(r.code, 0, `dp ${args.join(' ')}: ${r.stdout}${r.stderr}`);
      }
    } finally {
      await dp.close();
    }
    assert.ok(fs.readdirSync(path.join(root, '_snapshots')).length > 0 && fs.readdirSync(path.join(root, '_backups')).length > 0);
    const git = (...args: string[]) => spawnSync('git', args, { cwd: root, encoding: 'utf8' });
    assert.equal(git('init', '-q').status, 0);
    const added = git('add', '-A', '--dry-run');
    assert.equal(added.status, 0, added.stderr);
    assert.match(added.stdout, /project\.yml/);
    assert.doesNotMatch(added.stdout, /_snapshots|_backups|\.duckdb/);
    const again = runCli(['init', 'analytics'], { cwd: parent });
    assert.equal(again.code, 1);
    assert.match(again.stderr, /analytics already holds files/);
  });
});

describe('dp validate', () => {
  it('lists every problem with file and line, including contributed validators, and builds nothing', async (t) => {
    const root = makeProject({
      'project.yml': `name: t\ndatabase:\n  path: t.duckdb\nplugins:\n  paths: [${JSON.stringify(path.join(FIXTURE_PLUGINS, 'validator-demo'))}]\n`,
      'transform/staging/ok.sql': '-- @config materialized=view, schema=staging\nSELECT 1 AS id\n',
      'transform/staging/typo.sql': '-- @config materialized=view, schema=staging\n-- @config materialised=table\nSELECT 1 AS id\n',
      'transform/marts/broken.sql': '-- @config schema=marts\nSELECT id,\nFROM staging.ok\nWHERE\n',
      'transform/marts/unknown_ref.sql': '-- @config schema=marts\nSELECT *\nFROM staging.ok\nJOIN staging.nope USING (id)\n',
      'transform/marts/incr.sql': '-- @config schema=marts, materialized=incremental, incremental_strategy=merge\nSELECT 1 AS id\n',
      'tests/unit/t.yml': 'tests:\n  - name: t\n    model: staging.ok\n    given:\n      - input: staging.other\n        rows: []\n    expect:\n      rows: []\n',
      'checks/a.txt': 'fine\nBAD one\n',
    });
    const dp = cliInProcess(root);
    t.after(() => dp.close());
    const r = await dp.run(['validate']);
    assert.equal(r.code, 1, r.stdout + r.stderr);
    const lines = r.stdout.trim().split('\n');
    assert.deepEqual(lines, [
      'checks/a.txt:2: this line says BAD',
      'tests/unit/t.yml:2: given input \'staging.other\' is not a relation staging.ok reads (it reads nothing)',
      'transform/marts/broken.sql:4: syntax error at end of input',
      "transform/marts/incr.sql:1: incremental_strategy=merge needs unique_key (the columns that identify a row)",
      "transform/marts/unknown_ref.sql:4: unknown reference 'staging.nope': not a model, seed, declared source or existing table",
      "transform/staging/typo.sql:2: unknown @config key 'materialised' (known for materialized=view: materialized, schema, unique_key, dialect, order_by, sharding_key)",
      '6 problems',
    ]);
    // dp check refuses the same @config problems (merge without unique_key among them).
    const check = await dp.run(['check']);
    assert.equal(check.code, 1);
    assert.match(check.stdout, /incr\.sql:1: incremental_strategy=merge needs unique_key/);
    const built = await dp.run(['query', "SELECT count(*) AS n FROM duckdb_tables() WHERE schema_name IN ('staging', 'marts')", '--json']);
    assert.match(built.stdout, /"n":\s*0|\[\s*\[\s*0\s*\]\s*\]/, built.stdout + built.stderr);
  });
});

describe('dp validate with contracts', () => {
  it('reports contracts naming a missing model, and invalid contract entries, from the quality plugin', async (t) => {
    const root = makeProject({
      'transform/staging/ok.sql': '-- @config materialized=view, schema=staging\nSELECT 1 AS id\n',
      'contracts/c.yml': 'contracts:\n  - name: fine\n    model: staging.ok\n    assertions: [row_count >= 1]\n  - name: missing\n    model: marts.nope\n    assertions: [row_count >= 1]\n  - name: broken\n    model: staging.ok\n    severity: fatal\n    assertions: []\n',
    });
    const dp = cliInProcess(root);
    t.after(() => dp.close());
    const r = await dp.run(['validate', '--json']);
    assert.equal(r.code, 1, r.stdout + r.stderr);
    const problems = JSON.parse(r.stdout).problems.map((p: any) => `${p.source} ${p.file}:${p.line}`);
    assert.deepEqual(problems.sort(), ['contracts contracts/c.yml:5', 'contracts contracts/c.yml:8']);
    assert.match(r.stdout, /contract 'missing' names model 'marts\.nope', which does not exist/);
  });
});

describe('dp status', () => {
  it('shows changed models and seeds and the models stale downstream', async (t) => {
    const root = makeProject({
      'seeds/items.csv': 'id,price\n1,2\n',
      'transform/staging/stg_items.sql': '-- @config materialized=view, schema=staging\nSELECT id, price FROM seeds.items\n',
      'transform/marts/totals.sql': '-- @config schema=marts\nSELECT sum(price) AS revenue FROM staging.stg_items\n',
      'transform/marts/other.sql': '-- @config schema=marts\nSELECT 1 AS one\n',
    });
    const dp = cliInProcess(root);
    t.after(() => dp.close());
    const status = async () => {
      const r = await dp.run(['status', '--json']);
      assert.equal(r.code, 0, r.stderr);
      const body = JSON.parse(r.stdout);
      return {
        seeds: Object.fromEntries(body.seeds.map((s: any) => [s.seed, s.status])),
        models: Object.fromEntries(body.models.map((m: any) => [m.model, m.status])),
      };
    };
    assert.deepEqual(await status(), { seeds: { 'seeds.items': 'new' }, models: { 'marts.other': 'new', 'staging.stg_items': 'new', 'marts.totals': 'new' } });
    assert.equal((await dp.run(['seed'])).code, 0);
    assert.equal((await dp.run(['transform'])).code, 0);
    assert.deepEqual(await status(), { seeds: { 'seeds.items': 'up_to_date' }, models: { 'marts.other': 'up_to_date', 'staging.stg_items': 'up_to_date', 'marts.totals': 'up_to_date' } });
    fs.writeFileSync(path.join(root, 'transform/staging/stg_items.sql'), '-- @config materialized=view, schema=staging\nSELECT id, price * 2 AS price FROM seeds.items\n');
    assert.deepEqual((await status()).models, { 'marts.other': 'up_to_date', 'staging.stg_items': 'changed', 'marts.totals': 'stale' });
    assert.equal((await dp.run(['transform'])).code, 0);
    fs.writeFileSync(path.join(root, 'seeds/items.csv'), 'id,price\n1,2\n2,3\n');
    assert.deepEqual(await status(), { seeds: { 'seeds.items': 'changed' }, models: { 'marts.other': 'up_to_date', 'staging.stg_items': 'stale', 'marts.totals': 'stale' } });
    const text = await dp.run(['status']);
    assert.match(text.stdout, /staging\.stg_items\s+stale\s+seed seeds\.items changed/);
  });
});

describe('dp watch', () => {
  it('rebuilds the changed model and its downstream on save, printing the outcome', async () => {
    const root = makeProject({
      'transform/staging/base.sql': '-- @config materialized=table, schema=staging\nSELECT 1 AS n\n',
      'transform/marts/doubled.sql': '-- @config schema=marts\nSELECT n * 2 AS n2 FROM staging.base\n',
      'transform/marts/unrelated.sql': '-- @config schema=marts\nSELECT 7 AS seven\n',
    });
    const dp = cliInProcess(root);
    assert.equal((await dp.run(['transform'])).code, 0);
    await dp.close();
    const child = spawn(process.execPath, [DP_BIN, 'watch', '--project', root], { env: { ...process.env, DP_LOG_SILENT: '1' } });
    const output = followOutput(child);
    try {
      await output.waitFor(/watching transform\/ and seeds\//);
      fs.writeFileSync(path.join(root, 'transform/staging/base.sql'), '-- @config materialized=table, schema=staging\nSELECT 21 AS n\n');
      await output.waitFor(/ok: staging\.base → 2 built in \d+ ms/);
      assert.match(output.text(), /built\s+staging\.base/);
      assert.match(output.text(), /built\s+marts\.doubled/);
      assert.doesNotMatch(output.text(), /marts\.unrelated/);
      // A broken save is reported and the watch goes on.
      fs.writeFileSync(path.join(root, 'transform/marts/doubled.sql'), '-- @config schema=marts\nSELECT nope FROM staging.base\n');
      await output.waitFor(/FAILED: marts\.doubled/);
    } finally {
      child.kill('SIGINT');
      if (child.exitCode === null && child.signalCode === null) await new Promise((r) => child.once('exit', r));
    }
    assert.equal(child.exitCode, 0, output.text());
    // The watch released the database: a normal command opens it, and sees the rebuilt value.
    const q = await dp.run(['query', 'SELECT n2 FROM marts.doubled', '--json']);
    await dp.close();
    assert.match(q.stdout, /42/, q.stdout + q.stderr);
  });
});
