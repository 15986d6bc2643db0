/**
 * Seeds: seeds/<stem>.csv loaded with DuckDB's CSV reader (header row, types auto-detected) into
 * <schema>.<stem>. A seed whose SHA-256 matches the hash stored at its last load (and whose table
 * still exists) is skipped unless forced. An empty file (only whitespace) becomes a table with one
 * BOOLEAN column `empty_file`, since a CSV reader cannot infer columns from nothing.
 *
 * Seeds load only through `dp seed` / POST /api/seeds (or a stream's seed step): a transform
 * never loads them implicitly, so it never rewrites reference data behind the user's back.
 */
import fs from 'node:fs';
import { badRequest, errorMessage, qualified, quoteIdent, quoteLiteral, SAFE_NAME, type PluginContext, type SeedLoadResult } from '../../sdk/index.js';
import { keyOf } from './dag.js';
import type { Discovery, SeedFile } from './discovery.js';
import { readCatalog, readStates, writeState } from './state.js';

export interface SeedOptions {
  force?: boolean;
  schema?: string;
  targets?: string[] | null;
  onSeed?: (result: SeedLoadResult, done: number, total: number) => void;
}

export function selectSeeds(all: SeedFile[], targets: string[] | null | undefined): SeedFile[] {
  if (!targets || targets.length === 0 || targets.includes('all')) return all;
  return targets.map((t) => {
    const bare = t.includes('.') ? t.split('.').pop()! : t;
    const seed = all.find((s) => keyOf(s.name) === keyOf(bare));
    if (!seed) throw badRequest('unknown_seed', `No seed named '${t}' in seeds/`, { target: t, available: all.map((s) => s.name) });
    return seed;
  });
}

export async function loadSeeds(ctx: PluginContext, discovery: Discovery, options: SeedOptions): Promise<SeedLoadResult[]> {
  if (options.schema !== undefined && !SAFE_NAME.test(options.schema)) {
    throw badRequest('invalid_schema', `Schema '${options.schema}' must be letters, digits and underscores, not starting with a digit`, { field: 'schema' });
  }
  const seeds = selectSeeds(discovery.seedFiles(options.schema), options.targets);
  if (seeds.length === 0) return [];
  const [states, catalog] = await Promise.all([ctx.db.withConnection((c) => readStates(c)), readCatalog(ctx)]);
  const schemas = [...new Set(seeds.map((s) => s.schema))];
  await ctx.db.run(schemas.map((s) => `CREATE SCHEMA IF NOT EXISTS ${quoteIdent(s)};`).join('\n'));
  const results: SeedLoadResult[] = [];
  for (const seed of seeds) {
    const key = keyOf(seed.full_name);
    const stored = states.get(key);
    let result: SeedLoadResult;
    if (!options.force && stored?.content_hash === seed.content_hash && catalog.get(key)?.kind === 'table') {
      result = { seed: seed.full_name, status: 'skipped', rows: stored.rows ?? undefined };
    } else {
      try {
        const rows = await loadOne(ctx, seed, key, catalog.get(key)?.kind);
        result = { seed: seed.full_name, status: 'built', rows };
      } catch (e) {
        result = { seed: seed.full_name, status: 'error', error: `${seed.path}: ${errorMessage(e).split('\n')[0].split(seed.absPath).join(seed.path)}` };
      }
    }
    results.push(result);
    options.onSeed?.(result, results.length, seeds.length);
  }
  return results;
}

async function loadOne(ctx: PluginContext, seed: SeedFile, key: string, existingKind: 'table' | 'view' | undefined): Promise<number> {
  const target = qualified(seed.schema, seed.name);
  const empty = fs.readFileSync(seed.absPath, 'utf8').trim() === '';
  const create = empty
    ? `CREATE OR REPLACE TABLE ${target} (empty_file BOOLEAN)`
    : `CREATE OR REPLACE TABLE ${target} AS SELECT * FROM read_csv(${quoteLiteral(seed.absPath)}, header = true, auto_detect = true)`;
  // Table and state commit together, so a killed load never leaves a table its stored hash does not describe.
  return ctx.db.withConnection((c) =>
    c.transaction(async () => {
      if (existingKind === 'view') await c.run(`DROP VIEW ${target}`);
      await c.run(create);
      const rows = Number((await c.value(`SELECT count(*) FROM ${target}`)) ?? 0);
      await writeState(c, { name: key, kind: 'seed', content_hash: seed.content_hash, state_hash: seed.content_hash, materialized: 'table', rows });
      return rows;
    }),
  );
}
