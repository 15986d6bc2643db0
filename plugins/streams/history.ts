/**
 * `_service.run_history`: one row per stream run and per script run (`kind`), with its steps as
 * JSON. `GET /api/history` and the UI's durations chart read it, newest first.
 */
import crypto from 'node:crypto';
import type { DatabasePort, PluginContext } from '../../sdk/index.js';
import type { HistoryRecord } from './api-types.js';

export const MIGRATIONS = [
  {
    id: 'streams-001',
    sql: `CREATE TABLE IF NOT EXISTS _service.run_history (
      run_id VARCHAR PRIMARY KEY,
      kind VARCHAR NOT NULL,
      name VARCHAR NOT NULL,
      trigger VARCHAR NOT NULL,
      status VARCHAR NOT NULL,
      started_at TIMESTAMP NOT NULL,
      finished_at TIMESTAMP NOT NULL,
      duration_ms DOUBLE NOT NULL,
      error VARCHAR,
      steps JSON
    )`,
  },
  // A script run's last output lines (the scripts plugin's record carries them), shown when the run is opened.
  { id: 'streams-002', sql: `ALTER TABLE _service.run_history ADD COLUMN IF NOT EXISTS output JSON` },
];

const COLUMNS = 'run_id, kind, name, trigger, status, started_at, finished_at, duration_ms, error, steps, output';

export function newRunId(prefix: string): string {
  const stamp = new Date().toISOString().replace(/[-:T]/g, '').slice(0, 14);
  return `${prefix}_${stamp}_${crypto.randomBytes(3).toString('hex')}`;
}

/**
 * A run's row as it starts (status `running`): a process killed mid-run still leaves a record,
 * which the next start marks `interrupted`; recordHistory replaces it when the run ends.
 */
export async function recordHistoryStart(db: DatabasePort, r: Pick<HistoryRecord, 'run_id' | 'kind' | 'name' | 'trigger' | 'started_at'>): Promise<void> {
  await db.run(`INSERT INTO _service.run_history (${COLUMNS}) VALUES ($1, $2, $3, $4, 'running', $5::TIMESTAMP, $5::TIMESTAMP, 0, NULL, NULL, NULL)`, [r.run_id, r.kind, r.name, r.trigger, r.started_at]);
}

/** At start: runs still `running` belong to a process that ended mid-run. */
export async function markInterruptedHistory(db: DatabasePort): Promise<number> {
  const marked = await db.all(
    `UPDATE _service.run_history SET status = 'interrupted', error = 'the process ended while this run was going (killed or crashed); it did not finish' WHERE status = 'running' RETURNING run_id`,
  );
  return marked.length;
}

export async function recordHistory(db: DatabasePort, r: HistoryRecord): Promise<void> {
  await db.run(`INSERT OR REPLACE INTO _service.run_history (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6::TIMESTAMP, $7::TIMESTAMP, $8, $9, $10::JSON, $11::JSON)`, [
    r.run_id,
    r.kind,
    r.name,
    r.trigger,
    r.status,
    r.started_at,
    r.finished_at,
    r.duration_ms,
    r.error ?? null,
    r.steps === undefined ? null : JSON.stringify(r.steps),
    r.output === undefined ? null : JSON.stringify(r.output),
  ]);
}

export async function readHistory(ctx: Pick<PluginContext, 'db'>, options: { limit: number; name?: string; kind?: 'stream' | 'script' }): Promise<HistoryRecord[]> {
  const where: string[] = [];
  const params: unknown[] = [options.limit];
  if (options.name) where.push(`name = $${params.push(options.name)}`);
  if (options.kind) where.push(`kind = $${params.push(options.kind)}`);
  const rows = await ctx.db.all<Record<string, unknown>>(
    `SELECT ${SHOWN_COLUMNS} FROM _service.run_history ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY started_at DESC, run_id DESC LIMIT $1`,
    params,
  );
  return rows.map(parsed);
}

/** One run with its script output (GET /api/history/:run_id); null when there is none with that id. */
export async function readRun(ctx: Pick<PluginContext, 'db'>, runId: string): Promise<HistoryRecord | null> {
  const rows = await ctx.db.all<Record<string, unknown>>(`SELECT ${SHOWN_COLUMNS}, output::VARCHAR AS output FROM _service.run_history WHERE run_id = $1`, [runId]);
  if (!rows.length) return null;
  const run = parsed(rows[0]);
  return { ...run, output: rows[0].output === null ? null : JSON.parse(String(rows[0].output)) };
}

/** The listing's columns (the output only when one run is opened). */
const SHOWN_COLUMNS = `run_id, kind, name, trigger, status, strftime(started_at, '%Y-%m-%dT%H:%M:%S.%gZ') AS started_at,
  strftime(finished_at, '%Y-%m-%dT%H:%M:%S.%gZ') AS finished_at, duration_ms, error, steps::VARCHAR AS steps`;

function parsed(r: Record<string, unknown>): HistoryRecord {
  const { output: _output, ...rest } = r;
  return { ...(rest as unknown as HistoryRecord), steps: r.steps === null ? null : JSON.parse(String(r.steps)) };
}
