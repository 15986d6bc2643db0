/**
 * The plugin's service tables. `_service.model_state` holds, per built model and loaded seed, the
 * content hash and the state hash (content plus upstream states) of what is in the warehouse now:
 * the basis for skipping unchanged work. Transform runs and their per-model results are history.
 */
import crypto from 'node:crypto';
import { BEFORE_TRANSFORM, quoteLiteral, type DbConnection, type PluginContext, type TransformRunContext } from '../../sdk/index.js';

export const MIGRATIONS = [
  {
    id: 'models-001',
    sql: `CREATE TABLE IF NOT EXISTS _service.model_state (
     name VARCHAR PRIMARY KEY,
     kind VARCHAR NOT NULL,
     content_hash VARCHAR NOT NULL,
     state_hash VARCHAR NOT NULL,
     materialized VARCHAR,
     rows BIGINT,
     updated_at TIMESTAMP NOT NULL DEFAULT current_timestamp
   )`,
  },
  {
    id: 'models-002',
    sql: `CREATE TABLE IF NOT EXISTS _service.transform_runs (
     run_id VARCHAR PRIMARY KEY,
     trigger VARCHAR NOT NULL,
     targets JSON,
     force BOOLEAN NOT NULL,
     status VARCHAR NOT NULL,
     started_at TIMESTAMP NOT NULL,
     finished_at TIMESTAMP NOT NULL,
     duration_ms DOUBLE NOT NULL,
     built INTEGER NOT NULL,
     skipped INTEGER NOT NULL,
     failed INTEGER NOT NULL
   )`,
  },
  {
    id: 'models-003',
    sql: `CREATE TABLE IF NOT EXISTS _service.model_runs (
     run_id VARCHAR NOT NULL,
     model VARCHAR NOT NULL,
     status VARCHAR NOT NULL,
     duration_ms DOUBLE NOT NULL,
     error VARCHAR,
     finished_at TIMESTAMP NOT NULL
   )`,
  },
];

export interface StateRow {
  name: string;
  kind: 'model' | 'seed';
  content_hash: string;
  state_hash: string;
  materialized: string | null;
  rows: number | null;
}

/** Stored state by lower-case `schema.name`. */
export async function readStates(c: Pick<DbConnection, 'all'>): Promise<Map<string, StateRow>> {
  const rows = await c.all<StateRow & Record<string, unknown>>('SELECT name, kind, content_hash, state_hash, materialized, rows FROM _service.model_state');
  return new Map(rows.map((r) => [r.name, r]));
}

/**
 * The statement that writes one state row, its values written as literals: it is sent in the same
 * text as the build's CREATE, so the whole build is one call into DuckDB (a statement with
 * parameters costs the node client an extract and a prepare on top of the run).
 *
 * A row the run read at its start (`stored`) is UPDATEd in place: DuckDB's `INSERT OR REPLACE`
 * on the keyed table cost 10–15 ms of CPU per row, more than the build of a small model, where
 * the UPDATE costs about 2 ms (bench/README.md "Transform overhead"). A new row is upserted, so a
 * row written since the run read the states cannot make the build fail. Were the row deleted in
 * between, the UPDATE changes nothing and the next run rebuilds the model: never a wrong skip.
 */
export function stateWriteSql(row: StateRow, stored: boolean): string {
  const text = (v: string | null) => (v === null ? 'NULL' : quoteLiteral(v));
  const rows = row.rows === null ? 'NULL' : String(Math.trunc(row.rows));
  if (stored) {
    return `UPDATE _service.model_state SET kind = ${text(row.kind)}, content_hash = ${text(row.content_hash)}, state_hash = ${text(row.state_hash)},
       materialized = ${text(row.materialized)}, rows = ${rows}, updated_at = current_timestamp WHERE name = ${text(row.name)}`;
  }
  return `INSERT OR REPLACE INTO _service.model_state (name, kind, content_hash, state_hash, materialized, rows, updated_at)
     VALUES (${text(row.name)}, ${text(row.kind)}, ${text(row.content_hash)}, ${text(row.state_hash)}, ${text(row.materialized)}, ${rows}, current_timestamp)`;
}

/** Forgets a model's or seed's build state (lower-case `schema.name`): the next run rebuilds it. */
export async function forgetState(c: Pick<DbConnection, 'run'>, name: string): Promise<void> {
  await c.run('DELETE FROM _service.model_state WHERE name = $1', [name]);
}

/** Upserts one state row inside the caller's transaction. */
export async function writeState(c: Pick<DbConnection, 'run'>, row: StateRow): Promise<void> {
  await c.run(stateWriteSql(row, false));
}

export interface Relation {
  kind: 'table' | 'view';
  /** Cheap change signature of a relation no model or seed produces (row count estimate and width). */
  signature: string;
}

/** Every user table and view, by lower-case `schema.name`. */
export async function readCatalog(ctx: PluginContext): Promise<Map<string, Relation>> {
  const relations = await ctx.db.catalog.relations({ includeInternal: true });
  // A table's width comes with the list of relations where the engine gives it; otherwise from its columns.
  const width = new Map<string, number>();
  if (relations.some((r) => r.kind === 'table' && r.columnCount === undefined)) {
    for (const c of await ctx.db.catalog.allColumns({ includeInternal: true })) {
      const key = `${c.schema}.${c.table}`.toLowerCase();
      width.set(key, (width.get(key) ?? 0) + 1);
    }
  }
  return new Map(
    relations.map((r) => {
      const key = `${r.schema}.${r.name}`.toLowerCase();
      const signature = r.kind === 'table' ? `${r.estimatedRows ?? 0}:${r.columnCount ?? width.get(key) ?? 0}` : crypto.createHash('md5').update(r.definition ?? '').digest('hex');
      return [key, { kind: r.kind, signature }];
    }),
  );
}

export interface RunRecord {
  run_id: string;
  trigger: string;
  targets: string[] | null;
  force: boolean;
  status: string;
  started_at: string;
  finished_at: string;
  duration_ms: number;
  built: number;
  skipped: number;
  failed: number;
  models: Array<{ model: string; status: string; duration_ms: number; error?: string }>;
}

/**
 * The run's row as it starts (status `running`), so a process killed mid-run still leaves a
 * record; `recordRun` replaces it at the end, and the next start marks any left `running` as
 * `interrupted` (markInterruptedRuns).
 */
export async function recordRunStart(ctx: PluginContext, run: Pick<RunRecord, 'run_id' | 'trigger' | 'targets' | 'force' | 'started_at'>): Promise<void> {
  await ctx.db.run(`INSERT INTO _service.transform_runs VALUES ($1, $2, $3::JSON, $4, 'running', $5::TIMESTAMP, $5::TIMESTAMP, 0, 0, 0, 0)`, [
    run.run_id,
    run.trigger,
    JSON.stringify(run.targets),
    run.force,
    run.started_at,
  ]);
}

/** A transform run's context, its `running` record and the beforeTransform hook: how every run starts (on the file or a target). */
export async function beginRun(ctx: PluginContext, run: { runId: string; trigger?: string; targets?: string[] | null; force: boolean; startedAt: Date; signal: AbortSignal }): Promise<TransformRunContext> {
  const runCtx: TransformRunContext = {
    runId: run.runId,
    trigger: run.trigger ?? 'manual',
    targets: run.targets && run.targets.length ? run.targets : null,
    results: [],
    status: 'running',
    signal: run.signal,
  };
  await recordRunStart(ctx, { run_id: run.runId, trigger: runCtx.trigger, targets: runCtx.targets, force: run.force, started_at: run.startedAt.toISOString() });
  await ctx.hook(BEFORE_TRANSFORM).promise(runCtx);
  return runCtx;
}

/** At start: runs still `running` belong to a process that ended mid-run (killed, crashed, power lost). */
export async function markInterruptedRuns(ctx: PluginContext): Promise<number> {
  return (await ctx.db.all(`UPDATE _service.transform_runs SET status = 'interrupted' WHERE status = 'running' RETURNING run_id`)).length;
}

export async function recordRun(ctx: PluginContext, run: RunRecord): Promise<void> {
  await ctx.db.withConnection(async (c) => {
    await c.run(
      `INSERT OR REPLACE INTO _service.transform_runs VALUES ($1, $2, $3::JSON, $4, $5, $6::TIMESTAMP, $7::TIMESTAMP, $8, $9, $10, $11)`,
      [run.run_id, run.trigger, JSON.stringify(run.targets), run.force, run.status, run.started_at, run.finished_at, run.duration_ms, run.built, run.skipped, run.failed],
    );
    if (run.models.length === 0) return;
    await c.run(
      `INSERT INTO _service.model_runs
       SELECT $1, r.model, r.status, r.duration_ms, r.error, $2::TIMESTAMP
         FROM (SELECT unnest(from_json($3::VARCHAR, '[{"model":"VARCHAR","status":"VARCHAR","duration_ms":"DOUBLE","error":"VARCHAR"}]'), recursive := true)) AS r`,
      [run.run_id, run.finished_at, JSON.stringify(run.models)],
    );
  });
}

/** One transform run with each model's step (status, time, error), or null when no run has that id. */
export async function runDetail(ctx: PluginContext, runId: string): Promise<Record<string, unknown> | null> {
  const [run] = await ctx.db.all(
    `SELECT run_id, trigger, targets, force, status, started_at::VARCHAR AS started_at, finished_at::VARCHAR AS finished_at, duration_ms, built, skipped, failed
       FROM _service.transform_runs WHERE run_id = $1`,
    [runId],
  );
  if (!run) return null;
  const models = await ctx.db.all(
    `SELECT model, status, duration_ms, error, finished_at::VARCHAR AS finished_at FROM _service.model_runs WHERE run_id = $1 ORDER BY finished_at, model`,
    [runId],
  );
  return { ...run, models };
}

/** A model's latest build that did something (a skipped model keeps its older table), and its latest run of any outcome. */
export async function lastModelRun(ctx: PluginContext, model: string): Promise<{ last_build: Record<string, unknown> | null; last_run: Record<string, unknown> | null }> {
  const runs = await ctx.db.all<Record<string, unknown>>(
    `(SELECT 'last_build' AS which, run_id, status, duration_ms, error, finished_at::VARCHAR AS finished_at FROM _service.model_runs
        WHERE lower(model) = $1 AND status <> 'skipped' ORDER BY finished_at DESC LIMIT 1)
     UNION ALL
     (SELECT 'last_run', run_id, status, duration_ms, error, finished_at::VARCHAR FROM _service.model_runs WHERE lower(model) = $1 ORDER BY finished_at DESC LIMIT 1)`,
    [model.toLowerCase()],
  );
  const pick = (which: string) => {
    const r = runs.find((x) => x.which === which);
    if (!r) return null;
    const { which: _which, ...rest } = r;
    return rest;
  };
  return { last_build: pick('last_build'), last_run: pick('last_run') };
}

export async function recentRuns(ctx: PluginContext, limit: number): Promise<Array<Record<string, unknown>>> {
  return ctx.db.all(
    `SELECT run_id, trigger, targets, force, status, started_at::VARCHAR AS started_at, finished_at::VARCHAR AS finished_at, duration_ms, built, skipped, failed
       FROM _service.transform_runs ORDER BY started_at DESC LIMIT $1`,
    [limit],
  );
}
