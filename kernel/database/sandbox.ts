/** The engine's file sandbox and memory limit, applied and locked when a file opens. */
import os from 'node:os';
import path from 'node:path';
import type { DuckDBInstance } from '@duckdb/node-api';
import { DpError } from '../../sdk/errors.js';
import { quoteLiteral } from '../../sdk/sql.js';

/**
 * What the engine itself may touch besides its own database file, WAL and temp folder (DuckDB
 * allows those by itself). Applied right after the file opens, then locked: no SQL, whoever sends
 * it and whatever a validator misses, can widen it again.
 */
export interface EngineSandbox {
  /** Absolute folders DuckDB may read and write; the first is the project folder (seeds, exports, snapshots). */
  allowedDirectories: string[];
  /** DuckDB's memory_limit, e.g. `4GB` (default: half of the machine's RAM). */
  memoryLimit?: string;
}

/** Half the machine's memory: DuckDB spills to disk beyond it, and Node keeps room for itself. */
export function defaultMemoryLimit(): string {
  return `${Math.max(256, Math.floor(os.totalmem() / 2 / 1024 / 1024))}MB`;
}

/** `DP_MEMORY_LIMIT` (DuckDB syntax: `4GB`, `512MB`) from the process environment, else half the RAM. */
export function configuredMemoryLimit(env: NodeJS.ProcessEnv = process.env): string {
  const v = env.DP_MEMORY_LIMIT?.trim();
  if (!v) return defaultMemoryLimit();
  if (!/^\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)$/i.test(v)) {
    throw new DpError(400, 'invalid_memory_limit', `DP_MEMORY_LIMIT must be a size such as 4GB or 512MB (got '${v}')`, { value: v });
  }
  return v;
}

/**
 * Order matters: allowed_directories can only be set while external access is still on, and
 * lock_configuration comes last. Extension autoloading and installs stay off (the built-in
 * extensions are linked in).
 */
export async function applySandbox(inst: DuckDBInstance, sandbox: EngineSandbox | null): Promise<void> {
  if (!sandbox) return;
  const conn = await inst.connect();
  try {
    const dirs = sandbox.allowedDirectories.map((d) => quoteLiteral(d.endsWith(path.sep) ? d : d + path.sep));
    await conn.run(`SET allowed_directories = [${dirs.join(', ')}]`);
    await conn.run(`SET memory_limit = ${quoteLiteral(sandbox.memoryLimit ?? defaultMemoryLimit())}`);
    await conn.run('SET autoinstall_known_extensions = false');
    await conn.run('SET autoload_known_extensions = false');
    await conn.run('SET allow_community_extensions = false');
    await conn.run('SET enable_external_access = false');
    await conn.run('SET lock_configuration = true');
  } finally {
    conn.closeSync();
  }
}
