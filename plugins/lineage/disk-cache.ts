/**
 * Column lineage kept across processes in `.dp/lineage-cache.json`, so that a restarted server
 * (or any CLI command) answers the lineage of an unchanged project without parsing and analysing
 * every model again. An entry holds what the engine keeps in memory: the model's content hash
 * and references, the column lists of the relations it read when it was computed (checked again
 * before the entry is used), the result and its method. The file is tagged with DuckDB's version
 * (its parser decides the trees) and a format number; a file of another tag, or one that does not
 * read, is ignored and rewritten. Like the model parse cache, it lives in dp's hidden state folder.
 */
import fs from 'node:fs';
import { errorMessage, type Logger, type PluginContext } from '../../sdk/index.js';
import type { ColumnLineageResult } from './columns.js';

export const LINEAGE_CACHE_FILE = '.dp/lineage-cache.json';
/** Bumped when the analysis changes what it answers for the same SQL and upstream columns. */
const LINEAGE_CACHE_FORMAT = 1;

export interface StoredLineage {
  contentHash: string;
  dependsOn: string;
  signature: Map<string, string>;
  result: ColumnLineageResult;
  method: 'parser' | 'regex';
}

interface LineageCacheDoc {
  format: number;
  duckdb: string;
  /** Lower-case model name → entry (signature as [relation, columns] pairs). */
  entries: Record<string, Omit<StoredLineage, 'signature'> & { signature: Array<[string, string]> }>;
}

export interface LineageDiskCache {
  /** The stored entries, when the file is there and of this DuckDB version and format. */
  load(): Promise<Map<string, StoredLineage>>;
  /**
   * Writes these entries a moment after the last change (once per burst of changes), and at the
   * latest when the plugin stops: never on the request that computed them, whose answer would
   * wait behind the serialization of every entry (seconds for 10,000 models).
   */
  save(entries: () => Map<string, StoredLineage>): void;
  flush(): void;
}

/** How long after a change the file is written (a burst of requests writes it once). */
const SAVE_DELAY_MS = 2000;

export function lineageDiskCache(ctx: Pick<PluginContext, 'project' | 'db' | 'clock'>, log?: Logger): LineageDiskCache {
  let version: string | null = null;
  let pending: (() => Map<string, StoredLineage>) | null = null;
  let timer: unknown = null;
  const flush = () => {
    if (timer !== null) ctx.clock.clearTimeout(timer);
    timer = null;
    const entries = pending?.();
    pending = null;
    if (!entries || version === null) return;
    const doc: LineageCacheDoc = { format: LINEAGE_CACHE_FORMAT, duckdb: version, entries: {} };
    for (const [name, e] of entries) doc.entries[name] = { ...e, signature: [...e.signature] };
    try {
      ctx.project.writeFile(LINEAGE_CACHE_FILE, JSON.stringify(doc));
    } catch (e) {
      // A read-only project folder still works, only without the cache.
      log?.debug('lineage cache not written', { error: errorMessage(e) });
    }
  };
  return {
    async load() {
      version ??= String(await ctx.db.value('SELECT library_version FROM pragma_version()'));
      const out = new Map<string, StoredLineage>();
      let doc: LineageCacheDoc;
      try {
        doc = JSON.parse(fs.readFileSync(ctx.project.resolve(LINEAGE_CACHE_FILE), 'utf8')) as LineageCacheDoc;
      } catch {
        return out; // no cache yet, or unreadable: everything is computed (and the cache rewritten)
      }
      if (doc?.format !== LINEAGE_CACHE_FORMAT || doc.duckdb !== version || !doc.entries || typeof doc.entries !== 'object') return out;
      for (const [name, e] of Object.entries(doc.entries)) {
        if (!e || typeof e.contentHash !== 'string' || !Array.isArray(e.signature) || !e.result || !Array.isArray(e.result.order)) continue;
        out.set(name, { ...e, signature: new Map(e.signature) });
      }
      return out;
    },
    save(entries) {
      pending = entries;
      timer ??= ctx.clock.setTimeout(flush, SAVE_DELAY_MS);
    },
    flush,
  };
}
