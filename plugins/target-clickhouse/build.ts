/**
 * `dp transform` on a ClickHouse target: the models in dependency order under the shared run lock,
 * each once the models it reads are built and up to DEFAULT_CONCURRENCY side by side (the cluster
 * parallelizes each statement; what overlaps is the waiting: the DDL queue of `ON CLUSTER`
 * statements, mutations, the network). Per model: the DuckDB SQL is
 * checked for constructs the server cannot run (on DuckDB's own parse tree), transpiled, and
 * verified with `DESCRIBE (SELECT ...)` before any statement changes the target; then dp's
 * statements for its materialization run (materialize.ts). A model whose upstream failed is not
 * built. dp's run history stays in the local DuckDB file (`_service.target_runs`, migrations.ts).
 */
import crypto from 'node:crypto';
import {
  badRequest,
  errorMessage,
  isDpError,
  nativeDialect,
  quoteIdent,
  runInDependencyOrder,
  type ModelBuildResult,
  type ModelInfo,
  type PluginContext,
  type TargetTransformOptions,
  type TransformSummary,
} from '../../sdk/index.js';
import { chIdent, chLiteral, serverMessage, systemTableEverywhere, type ClickHouseTarget } from './client.js';
import { acquireRunLock } from './lock.js';
import { incrementalSteps, rebuildSteps, type Step, type TargetModel } from './materialize.js';
import { checkedTranspile } from './reads.js';
import { accumulatedToken, modelToken, readTargetStates, writeTargetState } from './state.js';
import { transpileToClickHouse } from './transpile.js';

const THIS = /\{\{\s*this\s*\}\}/g;

/** Models built at once on the target when the caller does not say: as many as a transform on the DuckDB file builds at most. */
const DEFAULT_CONCURRENCY = 4;

/** The models in an order where each comes after the models it reads. */
export function dependencyOrder(models: ModelInfo[]): ModelInfo[] {
  const byName = new Map(models.map((m) => [m.full_name.toLowerCase(), m]));
  const done = new Set<string>();
  const out: ModelInfo[] = [];
  const visit = (m: ModelInfo) => {
    const key = m.full_name.toLowerCase();
    if (done.has(key)) return;
    done.add(key);
    for (const d of m.depends_on) {
      const up = byName.get(d.toLowerCase());
      if (up) visit(up);
    }
    out.push(m);
  };
  models.forEach(visit);
  return out;
}

function list(value: string | undefined): string[] {
  return (value ?? '')
    .replace(/^[([]\s*|\s*[)\]]$/g, '')
    .split(',')
    .map((s) => s.trim().replace(/^"(.*)"$/, '$1'))
    .filter(Boolean);
}

/** A model's body without directive comments' effect and without the final semicolon. */
function bodyOf(m: ModelInfo): string {
  return (m.query ?? m.sql).trim().replace(/;\s*$/, '');
}

/** The model's SELECT for ClickHouse: native as written, or checked and transpiled from DuckDB SQL. */
export async function selectFor(ctx: PluginContext, target: ClickHouseTarget, m: ModelInfo): Promise<string> {
  if (nativeDialect(m.config)) return bodyOf(m);
  return checkedTranspile(ctx, target, bodyOf(m), m.full_name);
}

/** `DESCRIBE (SELECT ...)` on the server: the columns, or an error naming the model and what the server refused. */
export async function verifySelect(target: ClickHouseTarget, model: string, select: string): Promise<Array<{ name: string; type: string }>> {
  try {
    return await target.describe(select);
  } catch (e) {
    const caps = await target.capabilities();
    throw badRequest('unsupported_on_target', `${model}: ClickHouse ${caps.version} cannot run the model's SELECT: ${serverMessage(e).replace(/^ClickHouse: /, '')}`, { model, version: caps.version });
  }
}

/** scd2 is refused on this target (for now); the model's materialization otherwise. */
export function refuseScd2(m: ModelInfo): Exclude<ModelInfo['materialized'], 'scd2'> {
  if (m.materialized === 'scd2') {
    throw badRequest('unsupported_on_target', `${m.full_name}: materialized=scd2 is not supported on a ClickHouse target yet (build it on the DuckDB file, or use incremental)`, { model: m.full_name });
  }
  return m.materialized;
}

async function targetModel(ctx: PluginContext, target: ClickHouseTarget, m: ModelInfo): Promise<TargetModel> {
  const materialized = refuseScd2(m);
  const select = await selectFor(ctx, target, m);
  const columns = await verifySelect(target, m.full_name, select);
  let filter: string | null = null;
  if (m.config.incremental_filter) {
    const duck = m.config.incremental_filter.replace(THIS, `${quoteIdent(m.schema)}.${quoteIdent(m.name)}`);
    const native = nativeDialect(m.config) !== null;
    const expr = native ? m.config.incremental_filter.replace(THIS, `${chIdent(m.schema)}.${chIdent(m.name)}`) : (await transpileToClickHouse(`SELECT ${duck}`, m.full_name)).replace(/^SELECT\s+/i, '');
    filter = expr;
  }
  return {
    model: m.full_name,
    database: m.schema,
    name: m.name,
    materialized,
    strategy: (m.config.incremental_strategy ?? 'append').toLowerCase() as TargetModel['strategy'],
    uniqueKey: list(m.config.unique_key),
    orderBy: m.config.order_by ?? null,
    shardingKey: m.config.sharding_key ?? null,
    select,
    filter,
    columns,
  };
}

/** Waits until every mutation of the table is applied (on every shard of the cluster). */
async function waitMutations(target: ClickHouseTarget, database: string, table: string, signal?: AbortSignal): Promise<void> {
  const where = `database = ${chLiteral(database)} AND table = ${chLiteral(table)} AND is_done = 0`;
  const source = target.cluster ? await systemTableEverywhere(target, 'mutations') : 'system.mutations';
  for (let delay = 20; ; delay = Math.min(delay * 2, 500)) {
    const r = await target.query(`SELECT count() FROM ${source} WHERE ${where}`);
    if (Number(r.rows[0]?.[0] ?? 0) === 0) return;
    if (signal?.aborted) throw badRequest('query_cancelled', 'Cancelled while waiting for a mutation');
    await new Promise((res) => setTimeout(res, delay));
  }
}

async function runSteps(target: ClickHouseTarget, steps: Step[], signal?: AbortSignal): Promise<void> {
  for (const step of steps) {
    if (signal?.aborted) throw badRequest('query_cancelled', 'Cancelled');
    if ('sql' in step) await target.command(step.sql, { signal });
    else await waitMutations(target, step.waitMutations.database, step.waitMutations.table, signal);
  }
}

/** Builds the models on the target; the summary has the shape of a DuckDB transform's. */
export async function transformOnTarget(ctx: PluginContext, target: ClickHouseTarget, all: ModelInfo[], options: TargetTransformOptions = {}): Promise<TransformSummary> {
  const wanted = options.targets?.length ? new Set(options.targets.map((t) => t.toLowerCase())) : null;
  const models = dependencyOrder(all).filter((m) => !wanted || wanted.has(m.full_name.toLowerCase()) || wanted.has(m.name.toLowerCase()));
  const hooks = options.hooks;
  const runId = hooks?.runId ?? `run_${new Date().toISOString().replace(/[-:T]/g, '').slice(0, 14)}_${crypto.randomBytes(3).toString('hex')}`;
  hooks?.planned?.(models.length);
  const started = performance.now();
  const startedAt = new Date();
  const lock = await acquireRunLock(target, 'transform');
  const results: ModelBuildResult[] = [];
  try {
    const on = target.cluster ? ` ON CLUSTER ${chIdent(target.cluster)}` : '';
    for (const db of new Set(models.map((m) => m.schema))) await target.command(`CREATE DATABASE IF NOT EXISTS ${chIdent(db)}${on}`);
    const relations = await target.relations();
    const existing = new Map(relations.map((r) => [`${r.schema}.${r.name}`.toLowerCase(), r.kind]));
    const rows = new Map(relations.map((r) => [`${r.schema}.${r.name}`.toLowerCase(), r.estimatedRows ?? null]));
    const states = await readTargetStates(ctx, target);
    /** Models of this run that failed or were not built because an upstream failed: their downstream is not built. */
    const failed = new Set<string>();
    /** A model's key in the run, the states and the relations: its lower-case full name. */
    const keyOf = (m: ModelInfo) => m.full_name.toLowerCase();
    const buildOne = async (m: ModelInfo): Promise<ModelBuildResult> => {
      const t0 = performance.now();
      const key = keyOf(m);
      const blocker = m.depends_on.find((d) => failed.has(d.toLowerCase()));
      const token = modelToken(m, states, rows);
      // As on DuckDB: a table or view whose SQL and upstreams are unchanged and that is still there is not rebuilt.
      const unchanged = !options.force && !options.fullRefresh && m.materialized !== 'incremental' && states.get(key)?.state_hash === token && existing.get(key) === (m.materialized === 'view' ? 'view' : 'table');
      const invalid = options.invalid?.get(key);
      if (blocker) return { model: m.full_name, status: 'upstream_failed', duration_ms: 0, error: `Upstream model ${blocker} failed` };
      if (invalid) return { model: m.full_name, status: 'error', duration_ms: 0, error: invalid };
      if (unchanged) return { model: m.full_name, status: 'skipped', duration_ms: 0 };
      hooks?.started?.(m);
      let result: ModelBuildResult;
      try {
        const tm = await targetModel(ctx, target, m);
        const kind = existing.get(key) ?? null;
        // An incremental model that exists takes its new rows; everything else is rebuilt.
        const applies = m.materialized === 'incremental' && !options.fullRefresh && kind !== null && (tm.strategy === 'merge' ? kind === 'view' : kind === 'table');
        await runSteps(target, applies ? incrementalSteps(tm, target.cluster) : rebuildSteps(tm, kind, target.cluster), ctx.signal);
        existing.set(key, m.materialized === 'view' || tm.strategy === 'merge' && m.materialized === 'incremental' ? 'view' : 'table');
        const state = { name: key, kind: 'model' as const, content_hash: m.content_hash, state_hash: m.materialized === 'incremental' ? accumulatedToken(token) : token, materialized: m.materialized };
        await writeTargetState(ctx, target, state);
        states.set(key, state);
        result = { model: m.full_name, status: 'built', duration_ms: Math.round(performance.now() - t0) };
      } catch (e) {
        result = { model: m.full_name, status: 'error', duration_ms: Math.round(performance.now() - t0), error: `${m.path}: ${isDpError(e) ? e.message : errorMessage(e).split('\n')[0]}` };
      }
      // Assertions, profiles and freshness as on DuckDB: a model they flag is not a failure for its downstream.
      return hooks?.finished ? hooks.finished(m, result) : result;
    };
    results.push(
      ...(await runInDependencyOrder(models, {
        key: keyOf,
        dependsOn: (m) => m.depends_on.map((d) => d.toLowerCase()),
        concurrency: options.concurrency ?? DEFAULT_CONCURRENCY,
        run: buildOne,
        onDone: (m, result, done) => {
          if (result.status === 'error' || result.status === 'upstream_failed') failed.add(keyOf(m));
          options.onModel?.(result, done, models.length);
        },
      })),
    );
  } finally {
    await lock.release();
  }
  const status = results.some((r) => r.status === 'error' || r.status === 'upstream_failed') ? 'error' : 'success';
  const duration = Math.round(performance.now() - started);
  await ctx.db.run(`INSERT INTO _service.target_runs VALUES ($1, $2, $3, $4, $5, $6)`, [runId, `clickhouse:${target.database}`, status, startedAt.toISOString(), duration, JSON.stringify(results)]);
  return { run_id: runId, status, duration_ms: duration, results };
}

/** `dp check`'s binding of a model on the target: what a transform does before it builds (checked, transpiled, described). */
export async function verifyModelOnTarget(ctx: PluginContext, target: ClickHouseTarget, m: ModelInfo): Promise<void> {
  refuseScd2(m);
  await verifySelect(target, m.full_name, await selectFor(ctx, target, m));
}
