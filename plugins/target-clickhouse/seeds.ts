/**
 * `dp seed` on a ClickHouse target: each seeds/*.csv is read by DuckDB on this machine (the same
 * `read_csv` auto-detection as a local seed, in a scratch connection that may read only the
 * seeds folder), its table created on the target with the mapped types, and its rows sent in one
 * streamed INSERT per file (DuckDB's chunks of 2048 rows, never row by row).
 */
import path from 'node:path';
import { errorMessage, quoteLiteral, type PluginContext, type SeedInfo, type SeedLoadResult } from '../../sdk/index.js';
import { chIdent, type ClickHouseTarget } from './client.js';
import { rebuildSteps, type TargetModel } from './materialize.js';
import { loadedSeedState, writeTargetState } from './state.js';

/** A DuckDB column type as ClickHouse declares it (Nullable: a CSV cell may be empty). */
export function clickhouseType(duck: string): string {
  const t = duck.toUpperCase();
  const decimal = /^DECIMAL\((\d+),\s*(\d+)\)$/.exec(t);
  const base =
    decimal ? `Decimal(${decimal[1]}, ${decimal[2]})`
    : ({ BIGINT: 'Int64', INTEGER: 'Int32', SMALLINT: 'Int16', TINYINT: 'Int8', HUGEINT: 'Int64', UBIGINT: 'UInt64', UINTEGER: 'UInt32', DOUBLE: 'Float64', FLOAT: 'Float32', BOOLEAN: 'UInt8', DATE: 'Date', TIMESTAMP: 'DateTime', 'TIMESTAMP WITH TIME ZONE': 'DateTime' } as Record<string, string>)[t] ?? 'String';
  return `Nullable(${base})`;
}

export async function seedOnTarget(ctx: PluginContext, target: ClickHouseTarget, seeds: SeedInfo[], options: { schema?: string; targets?: string[] | null } = {}): Promise<SeedLoadResult[]> {
  const wanted = options.targets?.length ? new Set(options.targets.map((t) => t.toLowerCase())) : null;
  const chosen = seeds.filter((s) => !wanted || wanted.has(s.name.toLowerCase()) || wanted.has(s.full_name.toLowerCase()));
  if (!chosen.length) return [];
  const results: SeedLoadResult[] = [];
  const on = target.cluster ? ` ON CLUSTER ${chIdent(target.cluster)}` : '';
  const dirs = [...new Set(chosen.map((s) => path.dirname(ctx.project.resolveReadable(s.path))))];
  const conn = await ctx.db.scratch({ readableDirectories: dirs });
  try {
    const existing = new Map((await target.relations()).map((r) => [`${r.schema}.${r.name}`.toLowerCase(), r.kind]));
    for (const seed of chosen) {
      const schema = options.schema ?? seed.schema;
      try {
        const read = `SELECT * FROM read_csv(${quoteLiteral(ctx.project.resolveReadable(seed.path))}, header = true, auto_detect = true)`;
        const described = await conn.all<{ column_name: string; column_type: string }>(`DESCRIBE ${read}`);
        const columns = described.map((d) => ({ name: d.column_name, type: clickhouseType(d.column_type) }));
        await target.command(`CREATE DATABASE IF NOT EXISTS ${chIdent(schema)}${on}`);
        // The seed is loaded into a new table, then swapped in like a table model.
        const model: TargetModel = { model: `${schema}.${seed.name}`, database: schema, name: seed.name, materialized: 'table', strategy: 'append', uniqueKey: [], orderBy: null, shardingKey: null, select: 'SELECT 1', filter: null, columns };
        const steps = rebuildSteps(model, existing.get(`${schema}.${seed.name}`.toLowerCase()) ?? null, target.cluster);
        // Instead of INSERT ... SELECT: the rows, streamed from DuckDB.
        const insertAt = steps.findIndex((s) => 'sql' in s && s.sql.startsWith('INSERT INTO'));
        for (const step of steps.slice(0, insertAt)) if ('sql' in step) await target.command(step.sql);
        const into = /^INSERT INTO `[^`]*`\.`([^`]*)`/.exec((steps[insertAt] as { sql: string }).sql)![1]!;
        const stream = await conn.stream(read);
        const loaded = await target.bulkInsert({ schema, name: into }, stream.columns, stream.chunks);
        for (const step of steps.slice(insertAt + 1)) if ('sql' in step) await target.command(step.sql);
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
