/**
 * dp installed as a user installs it (issue 33 point 1): `npm pack` of this checkout, unpacked
 * where `npm install -g --prefix <tmp>` puts a package (lib/node_modules/dp, bin/dp a link to
 * its bin), then `dp init`, and the next steps exactly as `dp init` prints them, run through the
 * PATH from a folder outside the checkout. The package's dependencies are the checkout's
 * installed node_modules (linked, so the test needs no network and stays fast); what is under
 * test is the package's file list and the bin working from an installed copy.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { REPO_ROOT, tempDir } from '../helpers.js';

const made: string[] = [];
after(() => {
  for (const d of made) fs.rmSync(d, { recursive: true, force: true });
});

describe('dp packed and installed into a prefix', () => {
  it('runs dp init and the printed next steps from outside the checkout', () => {
    const tmp = tempDir('dp-install-');
    made.push(tmp);
    // --ignore-scripts: dist/ is built already (a user's `npm pack` runs the build through `prepare`).
    const packed = JSON.parse(execFileSync('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', tmp], { cwd: REPO_ROOT, encoding: 'utf8' }));
    const files = (packed[0].files as Array<{ path: string }>).map((f) => f.path);
    for (const f of ['bin/dp.js', 'dist/kernel/cli.js', 'plugins/models/plugin.json', 'plugins/models/template/gitignore', 'dist/ui/index.html']) assert.ok(files.includes(f), `${f} is in the package`);
    assert.ok(!files.some((f) => f.startsWith('dist/test/') || f.startsWith('test/')), 'no tests in the package');

    const prefix = path.join(tmp, 'prefix');
    const pkg = path.join(prefix, 'lib', 'node_modules', 'dp');
    fs.mkdirSync(path.dirname(pkg), { recursive: true });
    fs.mkdirSync(path.join(prefix, 'bin'));
    execFileSync('tar', ['-xzf', path.join(tmp, packed[0].filename), '-C', path.dirname(pkg)]);
    fs.renameSync(path.join(path.dirname(pkg), 'package'), pkg);
    fs.symlinkSync(path.join(REPO_ROOT, 'node_modules'), path.join(pkg, 'node_modules'));
    fs.symlinkSync(path.join('..', 'lib', 'node_modules', 'dp', 'bin', 'dp.js'), path.join(prefix, 'bin', 'dp'));

    // Only the prefix's bin and node's own folder on PATH: no checkout, no node_modules/.bin.
    const env = { ...process.env, DP_LOG_SILENT: '1', PATH: [path.join(prefix, 'bin'), path.dirname(process.execPath), '/usr/bin', '/bin'].join(path.delimiter) };
    const work = path.join(tmp, 'work');
    fs.mkdirSync(work);
    const dp = (cwd: string, args: string[]) => spawnSync('dp', args, { cwd, env, encoding: 'utf8', timeout: 120_000 });
    const init = dp(work, ['init', 'my_project']);
    assert.equal(init.status, 0, init.stdout + init.stderr);
    const next = /^Next: (.*)$/m.exec(init.stdout)?.[1];
    assert.equal(next, 'cd my_project && dp seed && dp transform && dp test');
    const root = path.join(work, 'my_project');
    for (const step of next!.split(' && ').slice(1)) {
      const r = dp(root, step.split(' ').slice(1));
      assert.equal(r.status, 0, `${step}: ${r.stdout}${r.stderr}`);
    }
    assert.ok(fs.existsSync(path.join(root, 'warehouse.duckdb')));
  });
});
