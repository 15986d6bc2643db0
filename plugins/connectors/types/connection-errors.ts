/**
 * The cause of a failed connection in words a user acts on (`connection refused`, `host not
 * found`, `authentication failed`, `timed out`), from the driver's error. Never the password,
 * never a stack.
 */
export function connectionCause(e: unknown): string {
  const err = e as { code?: string; errno?: string | number; message?: string; name?: string };
  const code = String(err?.code ?? '');
  const message = String(err?.message ?? e);
  if (code === 'ECONNREFUSED') return 'connection refused';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'EAI_NONAME') return 'host not found';
  if (code === 'ETIMEDOUT' || code === 'ABORT_ERR' || err?.name === 'AbortError' || /timeout|timed out/i.test(message)) return 'timed out';
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH') return 'host unreachable';
  if (code === 'ECONNRESET') return 'connection reset by the server';
  // PostgreSQL SQLSTATEs and MySQL error codes for a refused login.
  if (code === '28P01' || code === '28000' || code === 'ER_ACCESS_DENIED_ERROR' || code === 'ER_DBACCESS_DENIED_ERROR' || /password authentication failed|access denied/i.test(message)) {
    return 'authentication failed';
  }
  if (code === '3D000' || code === 'ER_BAD_DB_ERROR') return `database does not exist (${message})`;
  return message;
}

/** Rejects after `ms` with a timeout error, or when `signal` aborts; clears its timer either way. */
export async function withTimeout<T>(work: Promise<T>, ms: number, signal: AbortSignal | undefined, onGiveUp: () => void): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      onGiveUp();
      reject(Object.assign(new Error(`timed out after ${Math.round(ms / 1000)} s`), { code: 'ETIMEDOUT' }));
    }, ms);
    if (signal) {
      onAbort = () => {
        onGiveUp();
        reject(Object.assign(new Error('cancelled'), { name: 'AbortError' }));
      };
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
    }
  });
  try {
    return await Promise.race([work, limit]);
  } finally {
    clearTimeout(timer);
    if (onAbort) signal?.removeEventListener('abort', onAbort);
    // The losing promise must not surface as an unhandled rejection.
    work.catch(() => undefined);
  }
}
