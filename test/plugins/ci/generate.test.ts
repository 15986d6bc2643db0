import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DuckDBInstance } from '@duckdb/node-api';
import { parse } from 'yaml';
import { closeInProcessClis, copyShop, runInProcess, startDpRelay, tempDir, type DpRelay } from '../../helpers.js';

const GIT_ENV = { GIT_AUTHOR_NAME: 'dp test', GIT_AUTHOR_EMAIL: 'dp@example.com', GIT_COMMITTER_NAME: 'dp test', GIT_COMMITTER_EMAIL: 'dp@example.com', GIT_CONFIG_NOSYSTEM: '1', HOME: os.tmpdir() };

function git(cwd: string, ...args: string[]): string {
  const r = spawnSync('git', args, { cwd, encoding: 'utf8', env: { ...process.env, ...GIT_ENV } });
  assert.equal(r.status, 0, `git ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

describe('dp ci generate', () => {
  // The script runs dp seven times a run: its dp is a relay to one dp process (a kernel boot each would cost more than the rest of the file).
  let dp: DpRelay;
  before(async () => {
    dp = await startDpRelay();
  });
  after(async () => {
    await closeInProcessClis();
    await dp?.close();
  });
  it('writes a workflow and a script; the script run locally reports the rows that differ from main per model', async () => {
    const root = copyShop();
    git(root, 'init', '--quiet', '--initial-branch=main');
    git(root, 'add', '-A');
    git(root, 'commit', '--quiet', '-m', 'shop');

    const gen = await runInProcess(['ci', 'generate', '--project', root, '--json']);
    assert.equal(gen.code, 0, gen.stderr);
    assert.deepEqual(JSON.parse(gen.stdout), { workflow: '.github/workflows/dp.yml', script: 'ci/dp-ci.sh', base_branch: 'main', project_dir: '.' });
    const again = await runInProcess(['ci', 'generate', '--project', root, '--json']);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /\.github\/workflows\/dp\.yml exists \(pass --force/);
    await closeInProcessClis(); // the script below runs the binary on this project
    // The in-process runs opened the project's database; the script's own builds must make none here.
    for (const f of fs.readdirSync(root)) if (/\.duckdb(\.wal)?$/.test(f)) fs.rmSync(path.join(root, f));

    const wf = parse(fs.readFileSync(path.join(root, '.github/workflows/dp.yml'), 'utf8'));
    assert.deepEqual(Object.keys(wf.on).sort(), ['pull_request', 'push']);
    const steps = wf.jobs.dp.steps;
    assert.equal(steps[0].uses, 'actions/checkout@v4');
    assert.equal(steps[0].with['fetch-depth'], 0);
    assert.equal(steps[1].uses, 'actions/setup-node@v4');
    assert.match(steps[2].run, /npm install -g "\$DP_PACKAGE"/);
    assert.equal(steps[2].env.DP_PACKAGE, '${{ vars.DP_PACKAGE }}');
    assert.equal(steps[3].run, 'bash ci/dp-ci.sh');
    assert.equal(steps[3].env.DP_BASE_REF, "${{ github.base_ref || 'main' }}");
    assert.ok(fs.statSync(path.join(root, 'ci/dp-ci.sh')).mode & 0o100, 'the script is executable');
    git(root, 'add', '-A');
    git(root, 'commit', '--quiet', '-m', 'ci');

    // A branch whose build differs: customer_orders leaves pending orders out too.
    git(root, 'checkout', '--quiet', '-b', 'feature');
    const model = path.join(root, 'transform/marts/customer_orders.sql');
    fs.writeFileSync(model, fs.readFileSync(model, 'utf8').replace("WHERE status <> 'returned'", "WHERE status NOT IN ('returned', 'pending')"));
    git(root, 'commit', '--quiet', '-am', 'leave pending orders out');

    const summary = path.join(tempDir('dp-ci-summary-'), 'summary.md');
    const run = spawnSync('bash', ['ci/dp-ci.sh'], {
      cwd: root,
      encoding: 'utf8',
      env: { ...process.env, ...GIT_ENV, DP_BIN: dp.bin, DP_BASE_REF: 'main', GITHUB_STEP_SUMMARY: summary, DP_LOG_SILENT: '1' },
      timeout: 300_000,
    });
    const text = fs.readFileSync(summary, 'utf8');
    assert.match(text, /dp check: passed/, run.stdout + run.stderr + text);
    assert.match(text, /dp test: passed/);
    assert.equal(run.status, 0, run.stdout + run.stderr);
    // The changed model with its differing rows (keyed by customer_id); the others unchanged.
    assert.match(text, /\| marts\.customer_orders \| changed \|/);
    assert.match(text, /\| staging\.stg_orders \| unchanged \|/);
    assert.match(text, /### marts\.customer_orders \(changed\)/);
    assert.match(text, /Rows matched by key: customer_id/);
    assert.match(text, /\*\*Modified \(new values\) rows/);
    // Each modified row is a customer with a pending order, with its new count.
    const duck = await DuckDBInstance.create(':memory:');
    const conn = await duck.connect();
    const counted = await conn.runAndReadAll(`SELECT count(DISTINCT customer_id)::INTEGER FROM read_csv('${path.join(root, 'seeds/orders.csv')}') WHERE status = 'pending'`);
    const pendingCustomers = Number(counted.getRows()[0][0]);
    conn.closeSync();
    duck.closeSync();
    assert.ok(pendingCustomers > 0);
    assert.match(text, new RegExp(`\\| marts\\.customer_orders \\| changed \\| (\\d+) \\| \\1 \\| 0 \\| 0 \\| ${pendingCustomers} \\|`));
    const modifiedTable = text.slice(text.indexOf('**Modified'));
    const dataRows = modifiedTable.split('\n').filter((l) => /^\| \d/.test(l));
    assert.equal(dataRows.length, pendingCustomers);
    // The worktrees are cleaned up, and the working folder got no database (both builds ran in worktrees).
    assert.equal(git(root, 'worktree', 'list').trim().split('\n').length, 1);
    assert.deepEqual(fs.readdirSync(root).filter((f) => f.endsWith('.duckdb')), []);
    assert.equal(git(root, 'status', '--porcelain'), '');

    // Without GITHUB_STEP_SUMMARY the report goes to stdout.
    const plain = spawnSync('bash', ['ci/dp-ci.sh'], { cwd: root, encoding: 'utf8', env: { ...process.env, ...GIT_ENV, DP_BIN: dp.bin, DP_LOG_SILENT: '1', GITHUB_STEP_SUMMARY: '' }, timeout: 300_000 });
    assert.equal(plain.status, 0, plain.stderr);
    assert.match(plain.stdout, /### marts\.customer_orders \(changed\)/);
  });

  it('dp diff --against-db refuses a file outside the project or missing', async () => {
    const root = copyShop();
    const outside = await runInProcess(['diff', '--project', root, '--against-db', '../elsewhere.duckdb', '--json']);
    assert.equal(outside.code, 1);
    assert.match(outside.stderr, /outside the project/);
    const missing = await runInProcess(['diff', '--project', root, '--against-db', 'nothing.duckdb', '--json']);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /--against-db: no database file at nothing\.duckdb/);
  });
});
