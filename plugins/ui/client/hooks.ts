import { useCallback, useEffect, useRef, useState } from 'react';
import { ApiError } from './api';

export interface Loaded<T> {
  data: T | undefined;
  error: ApiError | Error | null;
  loading: boolean;
  /** Runs the loader again (keeps the old data until the new arrives). */
  reload(): void;
  setData(data: T): void;
}

/**
 * Loads data for a page: `const tables = useApi((signal) => api.get('/api/tables', {signal}), [])`.
 * A newer load or unmounting aborts the older one.
 */
export function useApi<T>(load: (signal: AbortSignal) => Promise<T>, deps: unknown[]): Loaded<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<ApiError | Error | null>(null);
  const [loading, setLoading] = useState(true);
  const [tick, setTick] = useState(0);
  const loadRef = useRef(load);
  loadRef.current = load;
  useEffect(() => {
    const ctl = new AbortController();
    setLoading(true);
    loadRef
      .current(ctl.signal)
      .then((d) => {
        if (ctl.signal.aborted) return;
        setData(d);
        setError(null);
      })
      .catch((e: Error) => {
        if (ctl.signal.aborted || e.name === 'AbortError') return;
        setError(e);
      })
      .finally(() => {
        if (!ctl.signal.aborted) setLoading(false);
      });
    return () => ctl.abort();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { data, error, loading, reload, setData };
}

/** State kept in localStorage under `dp.<key>` (survives reloads; per browser). */
export function usePersistentState<T>(key: string, initial: T): [T, (v: T | ((old: T) => T)) => void] {
  const storageKey = `dp.${key}`;
  const [value, setValue] = useState<T>(() => {
    try {
      const raw = localStorage.getItem(storageKey);
      return raw === null ? initial : (JSON.parse(raw) as T);
    } catch {
      return initial;
    }
  });
  const set = useCallback(
    (v: T | ((old: T) => T)) => {
      setValue((old) => {
        const next = typeof v === 'function' ? (v as (o: T) => T)(old) : v;
        try {
          localStorage.setItem(storageKey, JSON.stringify(next));
        } catch {
          // Storage full or disabled: keep it in memory.
        }
        return next;
      });
    },
    [storageKey],
  );
  return [value, set];
}

/** Calls `fn` on a key combination: `useHotkey('mod+enter', run)` (mod is Ctrl, or Cmd on a Mac). */
export function useHotkey(combo: string, fn: (e: KeyboardEvent) => void, enabled = true): void {
  const ref = useRef(fn);
  ref.current = fn;
  useEffect(() => {
    if (!enabled) return;
    const parts = combo.toLowerCase().split('+');
    const key = parts[parts.length - 1];
    const handler = (e: KeyboardEvent) => {
      const mod = e.ctrlKey || e.metaKey;
      if (parts.includes('mod') !== mod) return;
      if (parts.includes('shift') !== e.shiftKey) return;
      if (parts.includes('alt') !== e.altKey) return;
      if (e.key.toLowerCase() !== key) return;
      e.preventDefault();
      ref.current(e);
    };
    window.addEventListener('keydown', handler);
    return () => window.removeEventListener('keydown', handler);
  }, [combo, enabled]);
}
