/**
 * `dp seed` on a ClickHouse target: each seeds/*.csv is read by DuckDB on this machine (the same
 * `read_csv` auto-detection as a local seed, in a scratch connection that may read only the
 * seeds folder), its table created on the target with the mapped types, and its rows sent in one
 * streamed INSERT per file (DuckDB's chunks of 2048 rows, never row by row).
 */
import path from 'node:path';
import { errorMessage, quoteLiteral, type PluginContext, type SeedInfo, type SeedLoadResult } from '../../sdk/index.js';
import type { ClickHouseTarget } from './client.js';
import { loadRowsOnTarget } from './loads.js';
import { loadedSeedState, writeTargetState } from './state.js';

export async function seedOnTarget(ctx: PluginContext, target: ClickHouseTarget, seeds: SeedInfo[], options: { schema?: string; targets?: string[] | null } = {}): Promise<SeedLoadResult[]> {
  const wanted = options.targets?.length ? new Set(options.targets.map((t) => t.toLowerCase())) : null;
  const chosen = seeds.filter((s) => !wanted || wanted.has(s.name.toLowerCase()) || wanted.has(s.full_name.toLowerCase()));
  if (!chosen.length) return [];
  const results: SeedLoadResult[] = [];
  const dirs = [...new Set(chosen.map((s) => path.dirname(ctx.project.resolveReadable(s.path))))];
  const conn = await ctx.db.scratch({ readableDirectories: dirs });
  try {
    const existing = new Map((await target.relations()).map((r) => [`${r.schema}.${r.name}`.toLowerCase(), r.kind]));
    for (const seed of chosen) {
      const schema = options.schema ?? seed.schema;
      try {
        const read = `SELECT * FROM read_csv(${quoteLiteral(ctx.project.resolveReadable(seed.path))}, header = true, auto_detect = true)`;
        const described = await conn.all<{ column_name: string; column_type: string }>(`DESCRIBE ${read}`);
        const columns = described.map((d) => ({ name: d.column_name, type: d.column_type }));
        const stream = await conn.stream(read);
        const loaded = await loadRowsOnTarget(target, { schema, table: seed.name, mode: 'replace', columns, rows: stream.chunks }, existing.get(`${schema}.${seed.name}`.toLowerCase()) ?? null);
        existing.set(`${schema}.${seed.name}`.toLowerCase(), 'table');
        await writeTargetState(ctx, target, loadedSeedState(`${schema}.${seed.name}`.toLowerCase(), seed.content_hash));
        results.push({ seed: `${schema}.${seed.name}`, status: 'built', rows: loaded.rows });
      } catch (e) {
        results.push({ seed: `${schema}.${seed.name}`, status: 'error', error: `${seed.path}: ${errorMessage(e).split('\n')[0]}` });
      }
    }
  } finally {
    conn.close();
  }
  return results;
}
