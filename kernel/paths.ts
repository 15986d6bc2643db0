import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { badRequest } from '../sdk/errors.js';
import { isHiddenName } from '../sdk/project-files.js';


/**
 * Resolves a project-relative path, refusing anything that lands outside the root:
 * absolute paths, `..` segments that climb out, NUL bytes, and symlinks (at any level of the
 * existing part of the path) whose target is outside.
 */
export function resolveInside(root: string, relativePath: string): string {
  const refuse = () =>
    badRequest('path_outside_project', `Path '${relativePath}' is outside the project`, { path: relativePath });
  if (typeof relativePath !== 'string' || relativePath.length === 0 || relativePath.includes('\0')) throw refuse();
  const cleaned = relativePath.replace(/\\/g, '/');
  if (path.isAbsolute(cleaned) || /^[A-Za-z]:/.test(cleaned)) throw refuse();
  const realRoot = fs.realpathSync(root);
  const target = path.resolve(realRoot, cleaned);
  if (!isWithin(realRoot, target)) throw refuse();
  // Follow symlinks on the deepest part of the path that exists.
  let probe = target;
  while (!fs.existsSync(probe) && probe !== realRoot) {
    // A dangling symlink does not "exist" but still points somewhere: check it too.
    try {
      const link = fs.readlinkSync(probe);
      if (!isWithin(realRoot, path.resolve(path.dirname(probe), link))) throw refuse();
    } catch (e) {
      if ((e as { code?: string }).code !== 'ENOENT' && (e as { code?: string }).code !== 'EINVAL') throw e;
    }
    probe = path.dirname(probe);
  }
  const realProbe = fs.realpathSync(probe);
  if (!isWithin(realRoot, realProbe)) throw refuse();
  return target;
}

/** A DuckDB file, its WAL or a temp/spill file, whatever the environment calls it. */
function isServiceFileName(name: string): boolean {
  return isHiddenName(name) || /\.(duckdb|db|wal|tmp)$/i.test(name) || /\.duckdb\./i.test(name);
}

/**
 * The one rule for a project file a feature reads (connectors, import, script and notebook
 * helpers, `dp query @file`), the files API's: resolves like `resolveInside`, then refuses
 * (400 `project_file_protected`) a hidden or service path (`.env*`, `.dp/`, `.git`,
 * `node_modules`, database and temp files) by the name as given **and** by its real target,
 * symlinks followed at every level, and a hard link to a `.env*` file by its inode.
 */
export function resolveReadableInside(root: string, relativePath: string): string {
  const target = resolveInside(root, relativePath);
  const realRoot = fs.realpathSync(root);
  const refuse = () =>
    badRequest('project_file_protected', `'${relativePath}' is a hidden or service file (.env, .dp/, .git, databases): no feature reads it`, { path: relativePath });
  const hiddenSegment = (rel: string) => rel.split(/[\\/]/).some((seg) => seg !== '' && seg !== '.' && isServiceFileName(seg));
  if (hiddenSegment(path.relative(realRoot, target))) throw refuse();
  let real: string;
  try {
    real = fs.realpathSync(target);
  } catch {
    return target; // absent: the caller says so; nothing hidden is read
  }
  if (!isWithin(realRoot, real) || hiddenSegment(path.relative(realRoot, real))) throw refuse();
  const stat = fs.statSync(real);
  if (stat.isFile() && stat.nlink > 1) {
    for (const name of fs.readdirSync(realRoot)) {
      if (!/^\.(env|service-env)/.test(name)) continue;
      try {
        const secret = fs.statSync(path.join(realRoot, name));
        if (secret.ino === stat.ino && secret.dev === stat.dev) throw refuse();
      } catch (e) {
        if ((e as { code?: string }).code !== 'ENOENT') throw e;
      }
    }
  }
  return target;
}

export function isWithin(root: string, candidate: string): boolean {
  const rel = path.relative(root, candidate);
  // `..notes.sql` is a name inside the root; only `..` as a whole segment climbs out.
  return rel === '' || (rel !== '..' && !rel.startsWith('..' + path.sep) && !path.isAbsolute(rel));
}

export function toProjectRelative(root: string, absolutePath: string): string {
  return path.relative(fs.realpathSync(root), absolutePath).split(path.sep).join('/');
}

/**
 * Writes a file atomically and durably: a hidden temp file beside it (`.name.<random>.tmp`, which
 * no walker lists and `*.tmp` protects), written and fsynced with the old file's mode, renamed over
 * the target, then the folder fsynced, so a crash or kill -9 leaves the old content or the new,
 * never a torn file and never a visible stray. (write-file-atomic does the same steps but names its
 * temp file `name.<hash>`, which a kill -9 leaves visible beside the project's files.)
 */
export function writeFileAtomic(file: string, content: string | Buffer): void {
  const dir = path.dirname(file);
  fs.mkdirSync(dir, { recursive: true });
  let mode = 0o666;
  try {
    mode = fs.statSync(file).mode & 0o7777;
  } catch {
    /* a new file: the default mode (umask applies) */
  }
  const tmp = path.join(dir, `.${path.basename(file)}.${crypto.randomBytes(6).toString('hex')}.tmp`);
  let fd: number | null = null;
  try {
    fd = fs.openSync(tmp, 'w', mode);
    fs.writeFileSync(fd, content);
    fs.fchmodSync(fd, mode);
    fs.fsyncSync(fd);
    fs.closeSync(fd);
    fd = null;
    fs.renameSync(tmp, file);
  } catch (e) {
    if (fd !== null) fs.closeSync(fd);
    fs.rmSync(tmp, { force: true });
    throw e;
  }
  // The rename itself is durable once the folder's entry is on disk.
  try {
    const dirFd = fs.openSync(dir, 'r');
    try {
      fs.fsyncSync(dirFd);
    } finally {
      fs.closeSync(dirFd);
    }
  } catch {
    /* some file systems refuse fsync on a folder; the file itself is already synced */
  }
}
