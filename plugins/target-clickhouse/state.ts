/**
 * What is built on each ClickHouse target, kept in the local DuckDB file (the control plane) as
 * `_service.model_state` is for the file itself: per model and seed, its content hash and its
 * state hash (content, materialization and the upstreams' states). A transform skips a model
 * whose state hash is unchanged and whose relation is still on the target, as on DuckDB.
 * As on DuckDB, a seed's table changed by something other than dp (an INSERT) is not seen:
 * `--force` rebuilds.
 */
import crypto from 'node:crypto';
import type { ModelInfo, PluginContext } from '../../sdk/index.js';
import type { ClickHouseTarget } from './client.js';

export const STATE_MIGRATION = {
  id: 'target-clickhouse-002',
  sql: `CREATE TABLE IF NOT EXISTS _service.target_model_state (
    target VARCHAR NOT NULL, name VARCHAR NOT NULL, kind VARCHAR NOT NULL, content_hash VARCHAR NOT NULL,
    state_hash VARCHAR NOT NULL, materialized VARCHAR, updated_at TIMESTAMP NOT NULL DEFAULT current_timestamp,
    PRIMARY KEY (target, name))`,
};

export interface TargetState {
  name: string;
  kind: 'model' | 'seed';
  content_hash: string;
  state_hash: string;
  materialized: string | null;
}

/** The key of a target in the state table: its server, database and cluster (never its credentials). */
export function targetKey(target: ClickHouseTarget): string {
  return `clickhouse:${target.url}/${target.database}${target.cluster ? `@${target.cluster}` : ''}`;
}

const sha256 = (text: string) => crypto.createHash('sha256').update(text).digest('hex');

/** The stored states of a target, by lower-case `schema.name`. */
export async function readTargetStates(ctx: PluginContext, target: ClickHouseTarget): Promise<Map<string, TargetState>> {
  const rows = await ctx.db.all<TargetState & Record<string, unknown>>(
    'SELECT name, kind, content_hash, state_hash, materialized FROM _service.target_model_state WHERE target = $1',
    [targetKey(target)],
  );
  return new Map(rows.map((r) => [r.name, r]));
}

export async function writeTargetState(ctx: PluginContext, target: ClickHouseTarget, s: TargetState): Promise<void> {
  await ctx.db.run(
    `INSERT OR REPLACE INTO _service.target_model_state (target, name, kind, content_hash, state_hash, materialized, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, current_timestamp)`,
    [targetKey(target), s.name, s.kind, s.content_hash, s.state_hash, s.materialized],
  );
}

export async function forgetTargetState(ctx: PluginContext, target: ClickHouseTarget, name: string): Promise<void> {
  await ctx.db.run('DELETE FROM _service.target_model_state WHERE target = $1 AND name = $2', [targetKey(target), name]);
}

/** A seed's state after a load: a new one each load (the rows may differ even when the file does not). */
export function loadedSeedState(name: string, contentHash: string): TargetState {
  return { name, kind: 'seed', content_hash: contentHash, state_hash: sha256(`${contentHash}\n${crypto.randomUUID()}`), materialized: null };
}

/**
 * The state hash a model would have if built now: the formula of the models plugin's DuckDB
 * transform (content, materialization, each upstream's stored state, or for a relation dp did not
 * build its row estimate), so `/api/models/status` reads a target's states as it reads the file's.
 */
export function modelToken(m: ModelInfo, states: Map<string, TargetState>, catalog: Map<string, number | null>): string {
  const upstream = m.depends_on.map((u) => {
    const k = u.toLowerCase();
    return `${k}=${states.get(k)?.state_hash ?? (catalog.has(k) ? `external:${catalog.get(k) ?? ''}` : 'absent')}`;
  });
  return sha256([m.content_hash, m.materialized, ...upstream.sort()].join('\n'));
}

/** A state after an incremental run: new every run (the model took new rows), so its downstream builds. */
export function accumulatedToken(token: string): string {
  return sha256(`${token}\n${crypto.randomUUID()}`);
}
