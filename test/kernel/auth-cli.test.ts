import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { fileDpRelay, makeProject } from '../helpers.js';
import { startKernelServer } from './auth-server.js';

/** The file's `dp` process: each command line through the binary's entry, a process apart from the server. */
const relay = fileDpRelay();

describe('dp users (straight on the database, no server)', () => {
  it('creates the first admin from stdin, manages users, and the server then accepts their logins', async () => {
    const root = makeProject();
    const run = (args: string[], input?: string) => ({ args: [...args, '--project', root], input });

    const [add, ann, short, lastAdmin, setRole, setPassword, list] = await relay.batch([
      run(['users', 'add', 'root', '--role', 'admin'], 'from-stdin-pw\n'),
      run(['users', 'add', 'ann', '--role', 'viewer', '--password', 'pw-ann', '--display-name', 'Ann']),
      run(['users', 'add', 'bo', '--role', 'viewer', '--password', 'abc']),
      run(['users', 'remove', 'root']),
      run(['users', 'set-role', 'ann', 'editor']),
      run(['users', 'set-password', 'ann'], 'pw-ann-2\n'),
      run(['--json', 'users', 'list']),
    ]);
    assert.equal(add.code, 0, add.stderr);
    assert.match(add.stdout, /User root \(admin\) created/);
    assert.ok(!add.stdout.includes('from-stdin-pw') && !add.stderr.includes('from-stdin-pw'));

    assert.equal(ann.code, 0, ann.stderr);

    assert.equal(short.code, 1);
    assert.match(short.stderr, /'password' must be at least 4 characters/);

    assert.equal(lastAdmin.code, 1);
    assert.match(lastAdmin.stderr, /only admin/);

    assert.equal(setRole.code, 0, setRole.stderr);
    assert.equal(setPassword.code, 0, setPassword.stderr);

    assert.equal(list.code, 0, list.stderr);
    const users = JSON.parse(list.stdout) as Array<Record<string, unknown>>;
    assert.deepEqual(
      users.map((u) => [u.username, u.role, u.display_name]),
      [
        ['ann', 'editor', 'Ann'],
        ['root', 'admin', null],
      ],
    );
    assert.ok(!list.stdout.includes('hash') && !list.stdout.includes('salt'));

    const s = await startKernelServer(root, { auth: true });
    try {
      assert.deepEqual((await s.request('GET', '/api/auth/status')).body, { auth_enabled: true, needs_setup: false });
      assert.equal((await s.request('POST', '/api/auth/login', { username: 'root', password: 'from-stdin-pw' })).status, 200);
      assert.equal((await s.request('POST', '/api/auth/login', { username: 'ann', password: 'pw-ann' })).status, 401, 'old password no longer works');
      const login = await s.request('POST', '/api/auth/login', { username: 'ann', password: 'pw-ann-2' });
      assert.equal(login.body.role, 'editor');
      const locked = await relay.run(['users', 'list', '--project', root]);
      assert.equal(locked.code, 1, 'the serving process holds the database');
      assert.match(locked.stderr, /in use by another process/);
    } finally {
      await s.close();
    }

    const [removed, after] = await relay.batch([run(['users', 'remove', 'ann']), run(['--json', 'users', 'list'])]);
    assert.equal(removed.code, 0, removed.stderr);
    assert.deepEqual(
      (JSON.parse(after.stdout) as Array<{ username: string }>).map((u) => u.username),
      ['root'],
    );
  });
});
