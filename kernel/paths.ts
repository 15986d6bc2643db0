import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { badRequest } from '../sdk/errors.js';

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

export function isWithin(root: string, candidate: string): boolean {
  const rel = path.relative(root, candidate);
  // `..notes.sql` is a name inside the root; only `..` as a whole segment climbs out.
  return rel === '' || (rel !== '..' && !rel.startsWith('..' + path.sep) && !path.isAbsolute(rel));
}

export function toProjectRelative(root: string, absolutePath: string): string {
  return path.relative(fs.realpathSync(root), absolutePath).split(path.sep).join('/');
}

/** Writes a file atomically: temp file in the same folder, then rename. */
export function writeFileAtomic(file: string, content: string | Buffer): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  // A random suffix: two writers of one file never share a temp file.
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${crypto.randomBytes(6).toString('hex')}.tmp`);
  try {
    fs.writeFileSync(tmp, content);
    fs.renameSync(tmp, file);
  } catch (e) {
    fs.rmSync(tmp, { force: true });
    throw e;
  }
}
