/**
 * Scratch files of this plugin (import uploads in `.dp/imports/`, the named pipes of bulk syncs in
 * `.dp/sync/`) are named `<pid>-<uuid><ext>`: a process killed mid-import or mid-sync cannot
 * remove its own, so the next start removes every entry whose process is gone.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

export const IMPORTS_SCRATCH = '.dp/imports';
export const SYNC_SCRATCH = '.dp/sync';

/** A fresh scratch name owned by this process. */
export function scratchName(ext: string): string {
  return `${process.pid}-${crypto.randomUUID()}${ext}`;
}

function alive(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    // EPERM: the process exists but belongs to another user.
    return (e as { code?: string }).code === 'EPERM';
  }
}

/** Removes the entries of `dir` whose owning process is gone (or whose name carries no owner). */
export function sweepScratch(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  const removed: string[] = [];
  for (const name of fs.readdirSync(dir)) {
    const owner = /^(\d+)-/.exec(name);
    if (owner && alive(Number(owner[1]))) continue;
    fs.rmSync(path.join(dir, name), { force: true, recursive: true });
    removed.push(name);
  }
  return removed;
}
