/**
 * `.dp/server.json`, the file `dp serve` writes for the CLI beside it (kernel/remote-server.ts
 * writes it, kernel/remote.ts reads it). Apart from remote-server.ts so that every CLI command,
 * which looks for a running server first, imports neither the server side nor its HTTP errors.
 */
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
