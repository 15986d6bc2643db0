/**
 * Which project path a request names, and whether the API may touch it. The name is checked as
 * written and again on the file it really reaches (symlinks followed at every level, dangling ones
 * included): a link named `notes.txt` that points at `.env` or the database's WAL is as protected
 * as its target.
 */
import fs from 'node:fs';
import path from 'node:path';
import { badRequest, DpError, forbidden, isDpError, notFound, type PluginContext } from '../../sdk/index.js';
import { isHiddenPath } from './rules.js';

/** Linux's NAME_MAX: a longer segment can never name a file (ENAMETOOLONG). */
export const MAX_NAME_BYTES = 255;
/** Far below PATH_MAX, far above any real project path. */
export const MAX_PATH_BYTES = 1024;
/** Symlinks followed before giving up (the kernel's own limit is 40). */
const MAX_LINKS = 40;

export interface ProjectPath {
  /** The path as requested, inside the project. */
  abs: string;
  /** Project-relative, forward slashes. */
  rel: string;
  /** Project-relative form of the file the path really reaches. */
  realRel: string;
}

/**
 * The URL's path, decoded once (Fastify has already decoded the wildcard parameter: decoding
 * again turned `%41.sql` into `A.sql` and `%25zz` into a URIError).
 */
export function requestedPath(raw: string | undefined): string {
  // An absolute path (`/api/files/%2Ftmp%2Fx.sql`) names no project file: saving it as tmp/x.sql would surprise.
  if (raw && (raw.startsWith('/') || raw.startsWith('\\') || /^[A-Za-z]:[\\/]/.test(raw))) {
    throw badRequest('path_outside_project', 'An absolute path names no project file: give it relative to the project, e.g. transform/marts/orders.sql', { field: 'path' });
  }
  const rel = raw ?? '';
  if (!rel) throw badRequest('invalid_path', 'Name a file path after /api/files/', { field: 'path' });
  const bytes = Buffer.byteLength(rel);
  if (bytes > MAX_PATH_BYTES) throw badRequest('path_too_long', `A file path may have at most ${MAX_PATH_BYTES} bytes (this one has ${bytes})`, { field: 'path', bytes, max: MAX_PATH_BYTES });
  for (const segment of rel.split('/')) {
    const n = Buffer.byteLength(segment);
    if (n > MAX_NAME_BYTES) throw badRequest('name_too_long', `A file or folder name may have at most ${MAX_NAME_BYTES} bytes (one has ${n})`, { field: 'path', bytes: n, max: MAX_NAME_BYTES });
  }
  return rel;
}

/** The real location of `abs`: realpath when it exists, else its link target or its real parent plus its name. */
function realTarget(abs: string, hops = 0): string {
  if (hops > MAX_LINKS) throw badRequest('symlink_loop', 'The path goes through too many symbolic links', {});
  try {
    return fs.realpathSync(abs);
  } catch {
    /* missing, dangling or looping: resolved by hand below */
  }
  let link: string | null = null;
  try {
    if (fs.lstatSync(abs).isSymbolicLink()) link = fs.readlinkSync(abs);
  } catch {
    /* does not exist */
  }
  const parent = path.dirname(abs);
  if (link !== null) return realTarget(path.resolve(realTarget(parent, hops + 1), link), hops + 1);
  if (parent === abs) return abs;
  return path.join(realTarget(parent, hops + 1), path.basename(abs));
}

/** Database files of every environment, with their WAL: never served, whatever their names. */
function databaseFiles(ctx: PluginContext, realRoot: string): Set<string> {
  const config = ctx.project.config;
  const paths = [config.database?.path, ...Object.values(config.environments ?? {}).map((e) => e?.database?.path)];
  const out = new Set<string>();
  for (const p of paths) {
    if (typeof p !== 'string' || !p || p === ':memory:') continue;
    const real = realTarget(path.resolve(realRoot, p));
    for (const suffix of ['', '.wal', '.tmp']) out.add(real + suffix);
  }
  return out;
}

/** True when `real` is a database file, its WAL, or inside its temporary folder (`<db>.tmp/`). */
function isDatabasePath(real: string, dbFiles: Set<string>): boolean {
  for (const f of dbFiles) if (real === f || real.startsWith(f + path.sep)) return true;
  return false;
}

/**
 * True when `real` is a second hard link to `.env`, `.service-env` or a database file: a hard link
 * has no target to resolve, so it is recognized by its inode (only files with several links are
 * compared).
 */
function hardLinkToProtected(realRoot: string, real: string, dbFiles: Set<string>): boolean {
  let stat: fs.Stats;
  try {
    stat = fs.statSync(real);
  } catch {
    return false;
  }
  if (!stat.isFile() || stat.nlink < 2) return false;
  const candidates = [...dbFiles];
  try {
    for (const name of fs.readdirSync(realRoot)) if (isHiddenPath(name)) candidates.push(path.join(realRoot, name));
  } catch {
    /* an unreadable root hides nothing more */
  }
  return candidates.some((c) => {
    try {
      const other = fs.statSync(c);
      return other.ino === stat.ino && other.dev === stat.dev;
    } catch {
      return false;
    }
  });
}

/**
 * Resolves a requested path inside the project and refuses hidden or forbidden paths, judged both
 * on the name as written and on the real target.
 */
export function projectPath(ctx: PluginContext, raw: string | undefined): ProjectPath {
  const requested = requestedPath(raw);
  const abs = guardFs(() => ctx.project.resolve(requested));
  const rel = ctx.project.relative(abs);
  const realRoot = fs.realpathSync(ctx.project.root);
  const real = guardFs(() => realTarget(abs));
  const realRel = path.relative(realRoot, real).split(path.sep).join('/');
  if (realRel === '..' || realRel.startsWith('../') || path.isAbsolute(realRel)) {
    throw badRequest('path_outside_project', `Path '${rel}' is outside the project`, { path: rel });
  }
  const dbFiles = databaseFiles(ctx, realRoot);
  if (isHiddenPath(rel) || isHiddenPath(realRel) || isDatabasePath(real, dbFiles) || hardLinkToProtected(realRoot, real, dbFiles)) {
    throw badRequest('protected_path', `'${rel}' cannot be read or changed through the API`, { path: rel });
  }
  return { abs, rel, realRel };
}

/** A test for the database files and hard links to protected files (listed by no tree, whatever their names), built once per listing. */
export function protectedFileTest(ctx: PluginContext): (abs: string) => boolean {
  const realRoot = fs.realpathSync(ctx.project.root);
  const files = databaseFiles(ctx, realRoot);
  return (abs) => {
    const real = realTarget(abs);
    return isDatabasePath(real, files) || hardLinkToProtected(realRoot, real, files);
  };
}

/** True when a directory entry that is a symlink reaches a file the API may serve. */
export function servableLink(ctx: PluginContext, abs: string): boolean {
  try {
    const p = projectPath(ctx, ctx.project.relative(abs));
    return fs.statSync(p.abs).isFile();
  } catch {
    return false;
  }
}

/**
 * Runs a file-system step, turning its errors into DpErrors without the absolute paths Node puts
 * in their messages.
 */
export function guardFs<T>(step: () => T, rel?: string): T {
  try {
    return step();
  } catch (e) {
    if (isDpError(e)) throw e;
    const code = (e as { code?: string }).code;
    const details = rel === undefined ? {} : { path: rel };
    const name = rel === undefined ? 'the path' : `'${rel}'`;
    switch (code) {
      case 'ENAMETOOLONG':
        throw badRequest('name_too_long', `A file or folder name in ${name} is too long`, details);
      case 'ENOENT':
      case 'ENOTDIR':
        throw notFound('file_not_found', `No file ${name}`, details);
      case 'EISDIR':
        throw badRequest('is_directory', `${name} is a folder`, details);
      case 'ELOOP':
        throw badRequest('symlink_loop', `${name} goes through too many symbolic links`, details);
      case 'EACCES':
      case 'EPERM':
        throw forbidden('file_not_accessible', `The server may not access ${name}`, details);
      default:
        if (code) throw new DpError(500, 'file_system_error', `The file system refused the operation on ${name} (${code})`, details);
        throw e;
    }
  }
}
