import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { makeProject, startServer, tempDir, type TestServer } from '../../helpers.js';

const git = (cwd: string, ...args: string[]) =>
  execFileSync('git', ['-c', 'user.name=Ada Lovelace', '-c', 'user.email=ada@example.com', '-c', 'init.defaultBranch=main', '-c', 'commit.gpgsign=false', ...args], { cwd, encoding: 'utf8' });

describe('catalog: git status', () => {
  let repo: string;
  let s: TestServer;
  before(async () => {
    // The repository holds the project in a subfolder, and a file beside it that is not the project's.
    repo = makeProject({ 'README.md': 'outer\n', 'shop/project.yml': 'name: gitshop\ndatabase:\n  path: g.duckdb\n', 'shop/.gitignore': '*.duckdb*\n.dp/\n', 'shop/transform/marts/a.sql': 'SELECT 1 AS x\n' });
    fs.rmSync(path.join(repo, 'project.yml'));
    git(repo, 'init', '-q');
    git(repo, 'add', '-A');
    git(repo, 'commit', '-q', '-m', 'first models');
    fs.writeFileSync(path.join(repo, 'shop/transform/marts/a.sql'), 'SELECT 2 AS x\n');
    fs.writeFileSync(path.join(repo, 'shop/notes.txt'), 'untracked\n');
    fs.writeFileSync(path.join(repo, 'README.md'), 'changed outside the project\n');
    s = await startServer(path.join(repo, 'shop'));
  });
  after(async () => s?.close());

  it('reports branch, dirty flag, a modified and an untracked file, and the last commit', async () => {
    const r = await s.request('GET', '/api/git/status');
    assert.equal(r.status, 200, r.text);
    assert.equal(r.body.is_repo, true);
    assert.equal(r.body.branch, 'main');
    assert.equal(r.body.dirty, true);
    assert.deepEqual(
      [...r.body.changed_files].sort((a: { path: string }, b: { path: string }) => a.path.localeCompare(b.path)),
      [
        { path: 'notes.txt', status: 'untracked' },
        { path: 'transform/marts/a.sql', status: 'modified' },
      ],
    );
    const head = git(repo, 'rev-parse', 'HEAD').trim();
    assert.equal(r.body.last_commit.hash, head);
    assert.equal(r.body.last_commit.message, 'first models');
    assert.equal(r.body.last_commit.author, 'Ada Lovelace');
    assert.ok(!Number.isNaN(Date.parse(r.body.last_commit.date)));
  });

  it('is clean after a commit, and names staged, deleted and renamed files', async () => {
    git(repo, 'add', '-A');
    git(repo, 'commit', '-q', '-m', 'second');
    const clean = await s.request('GET', '/api/git/status');
    assert.equal(clean.body.dirty, false);
    assert.deepEqual(clean.body.changed_files, []);
    assert.equal(clean.body.last_commit.message, 'second');
    git(repo, 'mv', 'shop/notes.txt', 'shop/notes.md');
    fs.rmSync(path.join(repo, 'shop/transform/marts/a.sql'));
    fs.writeFileSync(path.join(repo, 'shop/new.sql'), 'SELECT 3\n');
    git(repo, 'add', 'shop/new.sql');
    const r = await s.request('GET', '/api/git/status');
    const byPath = Object.fromEntries(r.body.changed_files.map((f: { path: string; status: string }) => [f.path, f.status]));
    assert.deepEqual(byPath, { 'notes.md': 'renamed', 'transform/marts/a.sql': 'deleted', 'new.sql': 'added' });
  });
});

describe('catalog: git status outside a repository', () => {
  it('answers {is_repo: false} without running git (no .git in the folder or above it)', async () => {
    const s = await startServer(makeProject());
    // Git run from this PATH would answer that git is not installed.
    const path0 = process.env.PATH;
    const noGit = tempDir('dp-no-git-');
    process.env.PATH = noGit;
    try {
      const r = await s.request('GET', '/api/git/status');
      assert.equal(r.status, 200, r.text);
      assert.deepEqual(r.body, { is_repo: false });
    } finally {
      process.env.PATH = path0;
      fs.rmSync(noGit, { recursive: true, force: true });
      await s.close();
    }
  });

  it('answers a repository without commits with its branch and no last commit', async () => {
    const root = makeProject();
    git(root, 'init', '-q');
    fs.writeFileSync(path.join(root, '.gitignore'), '*.duckdb*\n.dp/\n');
    const s = await startServer(root);
    try {
      const r = await s.request('GET', '/api/git/status');
      assert.equal(r.body.branch, 'main');
      assert.equal(r.body.last_commit, null);
      assert.deepEqual(r.body.changed_files.map((f: { path: string }) => f.path).sort(), ['.gitignore', 'project.yml']);
    } finally {
      await s.close();
    }
  });
});
