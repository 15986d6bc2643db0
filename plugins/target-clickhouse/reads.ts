/**
 * Reads on a ClickHouse target that dp writes in DuckDB SQL: the SELECTs of `dp check`,
 * contracts and assertions (quality plugin) go the way model bodies go (build.ts): DuckDB's parse
 * tree is searched for what the server lacks, the text is transpiled (cached) and verified with
 * `DESCRIBE (SELECT ...)` before its first run, then it runs. Also the catalog's row counts, read
 * from `system.parts` on every shard.
 */
import { badRequest, type ModelInfo, type PluginContext, type TabularResult } from '../../sdk/index.js';
import { chIdent, chLiteral, serverMessage, type ClickHouseTarget } from './client.js';
import { transpileToClickHouse, unsupportedConstructs, unsupportedError } from './transpile.js';

/** DuckDB SQL as ClickHouse SQL: refused naming the construct the server cannot run, else transpiled. */
export async function checkedTranspile(ctx: PluginContext, target: ClickHouseTarget, sql: string, what: string): Promise<string> {
  const caps = await target.capabilities();
  const parsed = await ctx.db.parse(sql);
  if (parsed.ok) {
    const constructs = parsed.tree.statements.flatMap((s) => unsupportedConstructs(s.node, caps));
    if (constructs.length) throw unsupportedError(what, constructs, caps.version);
  }
  return transpileToClickHouse(sql, what);
}

const MAX_VERIFIED = 2000;
/** Transpiled texts the server has described once: a check that runs again is not verified again. */
const verified = new Set<string>();

/** A check reads: `readonly=2` lets the server refuse any write (settings such as join_use_nulls still apply). */
const READ_ONLY = { settings: { readonly: 2 } };

/** A read in DuckDB SQL, run on the target (transpiled and verified before its first run). */
export async function readOnTarget(ctx: PluginContext, target: ClickHouseTarget, sql: string, what: string): Promise<TabularResult> {
  const select = await checkedTranspile(ctx, target, sql, what);
  if (!verified.has(select)) {
    try {
      await target.describe(select, READ_ONLY);
    } catch (e) {
      const caps = await target.capabilities();
      throw badRequest('unsupported_on_target', `${what}: ClickHouse ${caps.version} cannot run the check: ${serverMessage(e).replace(/^ClickHouse: /, '')}`, { check: what, version: caps.version });
    }
    if (verified.size >= MAX_VERIFIED) verified.delete(verified.values().next().value!);
    verified.add(select);
  }
  return target.query(select, READ_ONLY);
}

