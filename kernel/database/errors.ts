/** DuckDB's errors in dp's terms: the caller's SQL, or the file held by another process. */
import fs from 'node:fs';
import path from 'node:path';
import { DpError, errorMessage } from '../../sdk/errors.js';
import { errorLocation } from '../sql-location.js';

/** Rewrites DuckDB's own errors into DpErrors where the cause is the caller's. */
export function translateDbError(e: unknown): unknown {
  if (e instanceof DpError) return e;
  const msg = errorMessage(e);
  if (/INTERRUPT/i.test(msg) || /Interrupted/i.test(msg)) return new DpError(408, 'query_interrupted', 'The query was interrupted');
  // The engine's sandbox or a missing/unreadable file: the caller's SQL asked for it. The message
  // names the path the SQL itself wrote, nothing the caller did not send.
  if (/^Permission Error:/i.test(msg)) return new DpError(400, 'file_access_denied', 'The query tries to read or write a file outside what the engine allows', { kind: 'permission' });
  if (/^IO Error:.*(No files found|Cannot open file|Could not open file|No such file|does not exist|Is a directory|Permission denied)/i.test(msg)) return new DpError(400, 'file_access_denied', 'The query tries to read or write a file the engine cannot open', { kind: 'io' });
  const m = /^(Parser|Binder|Catalog|Conversion|Invalid Input|Constraint|Out of Range|Not implemented|Invalid)\s*Error:\s*([\s\S]*)$/i.exec(msg);
  if (m) return new DpError(400, 'sql_error', msg.split('\n')[0], { kind: m[1].toLowerCase().replace(/\s+/g, '_'), ...errorLocation(msg) });
  return e;
}


/**
 * What a process is, from its command line: `dp transform`, `dp serve`, or the program's name.
 * Options are left out (a `--password` must not end up in a message), and so is every path.
 */
export function describeHolder(pid: number | null): string | null {
  if (pid === null) return null;
  let argv: string[];
  try {
    argv = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
  } catch {
    return null;
  }
  if (!argv.length) return null;
  // node /path/to/bin/dp.js transform --env x  →  dp transform
  const dpAt = argv.findIndex((a) => /(^|[\\/])dp(\.js)?$/.test(a));
  if (dpAt < 0) return path.basename(argv[0]);
  const words = ['dp'];
  for (const a of argv.slice(dpAt + 1)) {
    if (a.startsWith('-') || path.isAbsolute(a) || words.length >= 3) break;
    words.push(a);
  }
  return words.join(' ');
}

/**
 * Whether DuckDB refused to open a file because another process holds its lock. Only its own
 * message counts: a write-ahead-log replay that fails with "block …" or "mutex lock failed" is a
 * different problem, and must not send the user looking for a process that does not exist.
 */
export function isLockConflict(msg: string): boolean {
  return /Could not set lock on file/i.test(msg);
}

export function lockedError(file: string, msg: string): DpError {
  const m = /PID (\d+)/.exec(msg);
  const pid = m ? Number(m[1]) : null;
  const holder = describeHolder(pid);
  const who = holder ? ` ('${holder}', PID ${pid})` : pid !== null ? ` (PID ${pid})` : '';
  return new DpError(
    409,
    'database_locked',
    `The database file ${path.basename(file)} is in use by another process${who}. Wait for it to finish or stop it${holder?.startsWith('dp serve') ? ', or send the work through its API' : ''}.`,
    { file: path.basename(file), pid, holder },
  );
}
