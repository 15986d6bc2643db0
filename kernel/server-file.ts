/**
 * `.dp/server.json`, the file `dp serve` writes for the CLI beside it (the supervisor writes it,
 * kernel/remote.ts reads it). Apart from remote-server.ts so that every CLI command, which looks
 * for a running server first, and the supervisor, which boots no app, import neither the server
 * side nor its HTTP errors.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/** The credential file, relative to the project root. */
export const SERVER_FILE = path.join('.dp', 'server.json');
/** The header the CLI sends the local token in (never Authorization: that is the user's login). */
export const LOCAL_TOKEN_HEADER = 'x-dp-local-token';

export interface ServerFile {
  url: string;
  host: string;
  port: number;
  pid: number;
  project_root: string;
  token: string;
  auth: boolean;
  started_at: string;
}

/** Writes `.dp/server.json` atomically with mode 0600 (created so, never widened) and returns what it wrote. */
export function writeServerFile(projectRoot: string, info: Omit<ServerFile, 'token' | 'pid' | 'started_at' | 'project_root'>): ServerFile {
  const file = path.join(projectRoot, SERVER_FILE);
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const content: ServerFile = {
    ...info,
    pid: process.pid,
    project_root: fs.realpathSync(projectRoot),
    token: crypto.randomBytes(32).toString('base64url'),
    started_at: new Date().toISOString(),
  };
  const tmp = `${file}.${process.pid}.tmp`;
  fs.rmSync(tmp, { force: true });
  // 'wx' with mode 0600: the file never exists with wider permissions, even for a moment.
  fs.writeFileSync(tmp, JSON.stringify(content, null, 2) + '\n', { mode: 0o600, flag: 'wx' });
  fs.chmodSync(tmp, 0o600);
  fs.renameSync(tmp, file);
  return content;
}

/** Removes the file on a clean shutdown, unless another server has written its own since. */
export function removeServerFile(projectRoot: string, token: string): void {
  const file = path.join(projectRoot, SERVER_FILE);
  try {
    const current = JSON.parse(fs.readFileSync(file, 'utf8')) as Partial<ServerFile>;
    if (current.token === token) fs.rmSync(file, { force: true });
  } catch {
    // Gone already, or not ours to remove.
  }
}
