/**
 * The fixtures test files share (test/support/templates.ts, test/helpers.ts): a template folder is
 * built once and copied, never seen half-built by a file running beside the builder, and never
 * written through a copy; runCliBatch answers as the binary does, one command line after another.
 */
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { runCommand } from '../../sdk/testing.js';
import { bootApp, builtShop, closeInProcessClis, makeProject, runCli, runCliBatch, runInProcess } from '../helpers.js';
import { sharedTemplate, TEMPLATES_DIR } from '../support/templates.js';

describe('shared templates', () => {
  it('two builders at once end with one complete template; a later call copies it without building', async () => {
    const key = crypto.randomBytes(8).toString('hex');
    const final = path.join(TEMPLATES_DIR, `selftest-${key}`);
    try {
      let builds = 0;
      const build = (id: string) => async (folder: string) => {
        builds++;
        fs.writeFileSync(path.join(folder, 'first.txt'), id);
        // Both builders are under way before either renames its folder into place.
        await new Promise((resolve) => setImmediate(resolve));
        fs.writeFileSync(path.join(folder, 'last.txt'), id);
      };
      const [a, b] = await Promise.all([sharedTemplate('selftest', key, build('a')), sharedTemplate('selftest', key, build('b'))]);
      assert.equal(builds, 2);
      assert.equal(a, final);
      assert.equal(b, final);
      const first = fs.readFileSync(path.join(final, 'first.txt'), 'utf8');
      assert.equal(fs.readFileSync(path.join(final, 'last.txt'), 'utf8'), first, 'the template is one builder\'s whole folder');
      assert.deepEqual(
        fs.readdirSync(TEMPLATES_DIR).filter((n) => n.startsWith('.selftest-building-')),
        [],
        'the losing builder removed its folder',
      );
      const again = await sharedTemplate('selftest', key, () => {
        throw new Error('built again');
      });
      assert.equal(again, final);
    } finally {
      fs.rmSync(final, { recursive: true, force: true });
    }
  });

  it('builtShop copies a seeded and transformed shop; a change to one copy is not in the next', async () => {
    const one = await builtShop({ 'notes.txt': 'only here' });
    const app = await bootApp(one);
    try {
      const r = await runCommand(app, ['--json', 'query', 'SELECT count(*) AS n FROM marts.customer_orders']);
      assert.equal(r.code, 0, r.stderr);
      assert.ok(Number(JSON.parse(r.stdout).rows[0][0]) > 0, 'the marts are built');
      await app.db.run('DROP TABLE marts.customer_orders');
    } finally {
      await app.close();
    }
    const two = await builtShop();
    assert.notEqual(two, one);
    assert.ok(!fs.existsSync(path.join(two, 'notes.txt')));
    try {
      const r = await runInProcess(['--json', 'query', 'SELECT count(*) AS n FROM marts.customer_orders', '--project', two]);
      assert.equal(r.code, 0, r.stderr);
    } finally {
      await closeInProcessClis();
    }
  });
});

describe('runCliBatch', () => {
  it('answers each command line as the binary does: output, exit code, stdin and environment of its own', async () => {
    const root = makeProject();
    const runs = [
      { args: ['users', 'add', 'root', '--role', 'admin', '--project', root], input: 'from-stdin-pw\n' },
      { args: ['--json', 'users', 'list', '--project', root] },
      { args: ['query', 'SELECT 42 AS answer', '--project', root] },
      { args: ['no-such-command', '--project', root] },
      { args: ['--help', '--project', root] },
      { args: ['env', 'show', '--json', '--project', root], env: { DP_ENV: 'ignored-by-dp' } },
    ];
    const batch = await runCliBatch(runs);
    assert.equal(batch.length, runs.length);
    assert.equal(batch[0].code, 0, batch[0].stderr);
    assert.match(batch[0].stdout, /User root \(admin\) created/);
    assert.deepEqual(
      (JSON.parse(batch[1].stdout) as Array<{ username: string }>).map((u) => u.username),
      ['root'],
    );
    assert.equal(batch[3].code, 1);
    assert.equal(batch[4].code, 0);
    // The same as a process of its own, for the commands that change nothing (timings aside).
    const timeless = (r: { code: number; stdout: string; stderr: string }) => ({ ...r, stdout: r.stdout.replace(/\d+(\.\d+)? ?ms\b/g, '<n> ms') });
    for (const i of [1, 2, 3, 4, 5]) {
      const alone = runCli(runs[i].args, { env: runs[i].env });
      assert.deepEqual(timeless(batch[i]), timeless(alone), `dp ${runs[i].args.join(' ')}`);
    }
  });
});
