/**
 * The JSON-safe rendering of a cell's value: what JSON.stringify would lose or refuse (bigint,
 * undefined, Map, Set, cycles, functions, huge arrays) becomes something a page can show, and
 * `.env` values show as their `${VAR}` reference (as in script output).
 */
import { withEnvReferences } from '../../sdk/index.js';

const MAX_ITEMS = 1000;
const MAX_DEPTH = 8;
const MAX_STRING = 100_000;

export function jsonSafe(value: unknown, env: Readonly<Record<string, string>>): unknown {
  const seen = new Set<object>();
  const walk = (v: unknown, depth: number): unknown => {
    if (v === undefined || v === null) return null;
    if (typeof v === 'string') return withEnvReferences(v.length > MAX_STRING ? `${v.slice(0, MAX_STRING)}…` : v, env);
    if (typeof v === 'number') return Number.isFinite(v) ? v : String(v);
    if (typeof v === 'boolean') return v;
    if (typeof v === 'bigint') return Number.isSafeInteger(Number(v)) ? Number(v) : v.toString();
    if (typeof v === 'symbol') return v.toString();
    if (typeof v === 'function') return `[Function ${v.name || 'anonymous'}]`;
    if (v instanceof Date) return Number.isNaN(v.getTime()) ? null : v.toISOString();
    if (v instanceof Error) return { name: v.name, message: withEnvReferences(v.message, env) };
    if (typeof v !== 'object') return String(v);
    if (seen.has(v)) return '[Circular]';
    if (depth >= MAX_DEPTH) return Array.isArray(v) ? `[Array(${v.length})]` : '[Object]';
    seen.add(v);
    try {
      const toJSON = (v as { toJSON?: () => unknown }).toJSON;
      if (typeof toJSON === 'function' && !(v instanceof Map) && !(v instanceof Set)) return walk(toJSON.call(v), depth);
      if (v instanceof Map) return walk(Object.fromEntries([...v.entries()].slice(0, MAX_ITEMS).map(([k, x]) => [String(k), x])), depth);
      if (v instanceof Set) return walk([...v].slice(0, MAX_ITEMS), depth);
      if (ArrayBuffer.isView(v)) return walk(Array.from(v as unknown as ArrayLike<number>).slice(0, MAX_ITEMS), depth);
      if (Array.isArray(v)) {
        const items = v.slice(0, MAX_ITEMS).map((x) => walk(x, depth + 1));
        if (v.length > MAX_ITEMS) items.push(`… ${v.length - MAX_ITEMS} more`);
        return items;
      }
      const out: Record<string, unknown> = {};
      const keys = Object.keys(v);
      for (const k of keys.slice(0, MAX_ITEMS)) out[k] = walk((v as Record<string, unknown>)[k], depth + 1);
      if (keys.length > MAX_ITEMS) out['…'] = `${keys.length - MAX_ITEMS} more keys`;
      return out;
    } finally {
      seen.delete(v);
    }
  };
  return walk(value, 0);
}
