/**
 * `GET /api/git/status` through the git command line (no library reimplements git's index and
 * ignore rules faithfully). Paths are shown relative to the project folder, and only files inside
 * it: a project may live in a subfolder of a larger repository. `GIT_OPTIONAL_LOCKS=0` keeps
 * `git status` from writing the index while the user's own git may be running.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { DpError } from '../../sdk/index.js';

export interface GitStatus {
  is_repo: true;
  branch: string | null;
  dirty: boolean;
  changed_files: Array<{ path: string; status: string }>;
  last_commit: { hash: string; message: string; author: string; date: string } | null;
}

function git(cwd: string, args: string[]): Promise<{ ok: boolean; stdout: string; stderr: string; missing?: boolean }> {
  return new Promise((resolve) => {
    execFile(
      'git',
      args,
      { cwd, encoding: 'utf8', maxBuffer: 32 * 1024 * 1024, timeout: 15_000, env: { ...process.env, GIT_OPTIONAL_LOCKS: '0', GIT_TERMINAL_PROMPT: '0', LC_ALL: 'C' } },
      (error, stdout, stderr) => {
        const missing = (error as NodeJS.ErrnoException | null)?.code === 'ENOENT';
        resolve({ ok: !error, stdout: stdout ?? '', stderr: stderr ?? '', missing });
      },
    );
  });
}

/** Porcelain XY → one word. */
function statusWord(xy: string): string {
  if (xy === '??') return 'untracked';
  if (xy.includes('U') || xy === 'AA' || xy === 'DD') return 'conflicted';
  const code = xy[0] !== ' ' ? xy[0] : xy[1];
  switch (code) {
    case 'M':
    case 'T':
      return 'modified';
    case 'A':
      return 'added';
    case 'D':
      return 'deleted';
    case 'R':
      return 'renamed';
    case 'C':
      return 'copied';
    default:
      return 'modified';
  }
}

function failed(what: string, stderr: string): DpError {
  return new DpError(500, 'git_failed', `git ${what} failed: ${stderr.split('\n')[0]?.trim() || 'no output'}`);
}

/** Variables that point git at a repository somewhere else than the folders above. */
const REPOSITORY_VARIABLES = ['GIT_DIR', 'GIT_WORK_TREE', 'GIT_COMMON_DIR'];

/**
 * Whether git could find a repository for `dir`: a `.git` (a folder, or a file for a worktree or
 * a submodule) in it or in a folder above it, where git's own discovery looks. The web UI asks
 * for the status on every page load; a project outside any repository then costs no process.
 */
function mayBeInRepository(dir: string): boolean {
  if (REPOSITORY_VARIABLES.some((v) => process.env[v])) return true;
  for (let d = path.resolve(dir); ; d = path.dirname(d)) {
    if (fs.existsSync(path.join(d, '.git'))) return true;
    if (path.dirname(d) === d) return false;
  }
}

export async function gitStatus(projectRoot: string): Promise<GitStatus | { is_repo: false; reason?: string }> {
  if (!mayBeInRepository(projectRoot)) return { is_repo: false };
  const inside = await git(projectRoot, ['rev-parse', '--is-inside-work-tree', '--show-prefix']);
  if (inside.missing) return { is_repo: false, reason: 'git is not installed' };
  if (!inside.ok || !inside.stdout.startsWith('true')) return { is_repo: false };
  const prefix = inside.stdout.split('\n')[1] ?? '';

  const status = await git(projectRoot, ['status', '--porcelain=v1', '-z', '--branch', '--untracked-files=all', '--', '.']);
  if (!status.ok) throw failed('status', status.stderr);
  const entries = status.stdout.split('\0');
  let branch: string | null = null;
  const changed: Array<{ path: string; status: string }> = [];
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i]!;
    if (!entry) continue;
    if (entry.startsWith('## ')) {
      const head = entry.slice(3);
      const noCommits = /^No commits yet on (.+)$/.exec(head) ?? /^Initial commit on (.+)$/.exec(head);
      if (noCommits) branch = noCommits[1]!;
      else if (head.startsWith('HEAD (no branch)')) branch = null;
      else branch = head.split('...')[0]!.split(' ')[0]!;
      continue;
    }
    const xy = entry.slice(0, 2);
    const file = entry.slice(3);
    // A rename or copy is followed by its source path as a separate entry.
    if (xy[0] === 'R' || xy[0] === 'C') i++;
    const relative = file.startsWith(prefix) ? file.slice(prefix.length) : file;
    changed.push({ path: relative, status: statusWord(xy) });
  }

  let lastCommit: GitStatus['last_commit'] = null;
  const log = await git(projectRoot, ['log', '-1', '--format=%H%x00%s%x00%an%x00%aI']);
  if (log.ok && log.stdout.trim()) {
    const [hash, message, author, date] = log.stdout.trim().split('\0');
    lastCommit = { hash: hash!, message: message ?? '', author: author ?? '', date: date ?? '' };
  }
  return { is_repo: true, branch, dirty: changed.length > 0, changed_files: changed, last_commit: lastCommit };
}
