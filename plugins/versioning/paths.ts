/**
 * Every path the plugin reads or deletes is checked here first: version files must lie inside
 * `_snapshots/` and backups inside `_backups/`, judged on the real path (links followed), so
 * neither a version id nor a hand-edited manifest can reach a file elsewhere.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { badRequest, noSpaceLeft, type ProjectInfo } from '../../sdk/index.js';

export const SNAPSHOTS_DIR = '_snapshots';
export const BACKUPS_DIR = '_backups';
/** `v<n>-<YYYYMMDD>-<HHMMSS>`: the only shape of a version id (and so of a version folder's name). */
export const VERSION_ID = /^v(\d{1,9})-(\d{8})-(\d{6})$/;

/** `<root>/<dir>`, created when missing; its real path (the project root may sit behind a link). */
export function ownFolder(project: Pick<ProjectInfo, 'root'>, dir: string): string {
  const abs = path.join(project.root, dir);
  fs.mkdirSync(abs, { recursive: true });
  return fs.realpathSync(abs);
}

/** True when `candidate` is `folder` itself or inside it. */
function within(folder: string, candidate: string): boolean {
  const rel = path.relative(folder, candidate);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

/**
 * The real path of `rel` under `folder`, refused with `code` (400) when it leaves the folder by
 * its name or through a link. A path that does not exist yet is judged by its nearest existing parent.
 */
export function insideFolder(folder: string, rel: string, code: string, what: string, shown: string = rel): string {
  const joined = path.resolve(folder, rel);
  if (!within(folder, joined)) throw badRequest(code, `${what} lies outside ${path.basename(folder)}/`, { path: shown });
  let probe = joined;
  while (!fs.existsSync(probe) && probe !== folder) probe = path.dirname(probe);
  const real = fs.realpathSync(probe);
  if (!within(folder, real)) throw badRequest(code, `${what} lies outside ${path.basename(folder)}/ (through a link)`, { path: shown });
  return joined;
}

export function assertVersionId(id: string): void {
  if (!VERSION_ID.test(id)) throw badRequest('invalid_version_id', `'${id.slice(0, 80)}' is not a version id (v<n>-<YYYYMMDD>-<HHMMSS>)`, { version_id: id.slice(0, 80) });
}

/** `YYYYMMDD-HHMMSS` in UTC. */
export function stamp(at: Date): string {
  const iso = at.toISOString();
  return `${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}-${iso.slice(11, 13)}${iso.slice(14, 16)}${iso.slice(17, 19)}`;
}

/** fsync of a file or folder (a rename is durable only once its folder is synced). */
export function fsyncPath(p: string): void {
  const fd = fs.openSync(p, 'r');
  try {
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/** Writes a file atomically and durably: hidden temp file beside it, fsync, rename, folder fsync. */
export function writeFileDurably(file: string, content: string): void {
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.tmp`);
  fs.writeFileSync(tmp, content);
  fsyncPath(tmp);
  fs.renameSync(tmp, file);
  fsyncPath(path.dirname(file));
}

/** A DuckDB error message with the project's absolute paths made relative (messages never carry them). */
export function withoutRoot(message: string, root: string): string {
  return message.split(root + path.sep).join('').split(root).join('.');
}

/** SHA-256 of a file's bytes (hex), read as a stream. */
export async function hashFile(file: string): Promise<string> {
  const h = crypto.createHash('sha256');
  await pipeline(fs.createReadStream(file, { highWaterMark: 1 << 20 }), async function* (source: AsyncIterable<Buffer>) {
    for await (const chunk of source) h.update(chunk);
  });
  return h.digest('hex');
}

/** A failed write as the caller should see it: 507 `no_space_left` when the disk is full, else the error itself. */
export function noSpaceOr(e: unknown): unknown {
  return noSpaceLeft(e, 'the backup') ?? e;
}
