/**
 * Column profiles (docs/decisions.md "Table records"): null counts, distinct counts, min/max and numeric
 * averages in one aggregate pass per table; sample values through the guarded query runner so
 * masking applies. A metrics-only profile of each built model is recorded for anomaly detection:
 * one INSERT … SELECT computes and stores the profiles of a whole batch of models.
 */
import { createHash, randomUUID } from 'node:crypto';
import { errorMessage, isDpError, qualified, quoteIdent, quoteLiteral, type Caller, type DbConnection, type PluginContext, type QueryStopSignal } from '../../sdk/index.js';
import type { ColumnProfile, TableProfile } from './api-types.js';
import { assertVisible, isoUtc, isServiceSchema, maskedColumnsFor, parseJson, type ColumnInfo } from './relations.js';

/** What is stored per build: metrics only, never data values. */
export interface StoredColumnMetrics {
  name: string;
  type: string;
  null_count: number;
  null_pct: number;
  distinct_count: number;
}

const NUMERIC = /^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|UHUGEINT|FLOAT|DOUBLE|REAL|DECIMAL)\b/i;
const NESTED = /\[|^(STRUCT|MAP|UNION)\b/i;
const SAMPLE_ROWS = 5;

/** The distinct-count aggregate of a column: nested values are counted by their text. */
function distinctCount(col: string, type: string): string {
  return `count(DISTINCT ${NESTED.test(type) ? `CAST(${col} AS VARCHAR)` : col})`;
}

function round(n: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}

/** Statistics of every column of `schema.table`, computed by DuckDB in one pass (through `reader`: a connection under a caller's deadline, else the database port). */
export async function computeStats(ctx: PluginContext, schema: string, table: string, reader: Pick<DbConnection, 'all' | 'query'> = ctx.db): Promise<TableProfile> {
  const R = qualified(schema, table);
  const described = await reader.all<{ column_name: string; column_type: string }>(`DESCRIBE SELECT * FROM ${R}`);
  const parts = ['count(*) AS dp_rows'];
  described.forEach((c, i) => {
    const col = quoteIdent(c.column_name);
    const nested = NESTED.test(c.column_type);
    const numeric = !nested && NUMERIC.test(c.column_type);
    parts.push(`count(*) - count(${col}) AS n${i}`);
    parts.push(`${distinctCount(col, c.column_type)} AS d${i}`);
    if (nested) parts.push(`NULL AS lo${i}`, `NULL AS hi${i}`);
    else if (numeric) parts.push(`min(${col}) AS lo${i}`, `max(${col}) AS hi${i}`);
    else parts.push(`CAST(min(${col}) AS VARCHAR) AS lo${i}`, `CAST(max(${col}) AS VARCHAR) AS hi${i}`);
    parts.push(numeric ? `CAST(avg(${col}) AS DOUBLE) AS av${i}` : `NULL AS av${i}`);
  });
  const res = await reader.query(`SELECT ${parts.join(', ')} FROM ${R}`);
  const row = res.rows[0] ?? [];
  const rowCount = Number(row[0] ?? 0);
  const columns: ColumnProfile[] = described.map((c, i) => {
    const at = 1 + i * 5;
    const nulls = Number(row[at] ?? 0);
    const avg = row[at + 4];
    return {
      name: c.column_name,
      type: c.column_type,
      null_count: nulls,
      null_pct: rowCount ? round((nulls / rowCount) * 100, 4) : 0,
      distinct_count: Number(row[at + 1] ?? 0),
      min: row[at + 2] ?? null,
      max: row[at + 3] ?? null,
      avg: avg === null || avg === undefined ? null : round(Number(avg), 6),
    };
  });
  return { schema, table, row_count: rowCount, column_count: columns.length, columns, profiled_at: new Date().toISOString() };
}

/**
 * The profile a caller sees: statistics plus sample values fetched through ctx.queries (purpose
 * `profile`, exact table), so masking policies apply; min/max of columns masked for the caller
 * are withheld because they are data values too.
 *
 * The statistics are computed on the raw table, so the caller must first pass the same check the
 * guarded runner applies to `SELECT * FROM <table>`: `_service` is 404 to non-admins, and tables
 * no query may read (credentials) are refused for everyone, before any aggregate runs. Profiles of
 * `_service` tables show counts only: min/max of a hash or a salt are secrets too.
 */
export async function profileForCaller(ctx: PluginContext, schema: string, table: string, caller: Caller, signal?: QueryStopSignal): Promise<TableProfile> {
  assertVisible(caller, schema, table);
  const sql = `SELECT * FROM ${qualified(schema, table)}`;
  await ctx.queries.prepare({ sql, caller, purpose: 'profile', table: { schema, table } });
  // A whole-table pass a viewer can start: under the role's deadline, in a query slot, stopped when the client leaves.
  const profile = await ctx.queries.withDeadline({ caller, purpose: 'profile', signal }, (c) => computeStats(ctx, schema, table, c));
  if (isServiceSchema(schema)) {
    for (const col of profile.columns) Object.assign(col, { min: null, max: null, avg: null, sample_values: [], masked: true });
    profile.notes = ["values of dp's internal tables are not shown"];
    return profile;
  }
  const masked = await maskedColumnsFor(ctx, caller, schema, table);
  const notes: string[] = [];
  let sample: { columns: string[]; rows: unknown[][] } = { columns: [], rows: [] };
  try {
    sample = await ctx.queries.run({ sql, limit: SAMPLE_ROWS, caller, purpose: 'profile', table: { schema, table }, signal });
  } catch (e) {
    if (signal?.aborted || (isDpError(e) && e.status === 408)) throw e;
    notes.push(`sample values unavailable: ${errorMessage(e)}`);
  }
  for (const col of profile.columns) {
    const i = sample.columns.indexOf(col.name);
    const seen = new Set<string>();
    const values: unknown[] = [];
    if (i >= 0) {
      for (const r of sample.rows) {
        const v = r[i];
        const key = JSON.stringify(v);
        if (v === null || v === undefined || seen.has(key)) continue;
        seen.add(key);
        values.push(v);
      }
    }
    col.sample_values = values;
    if (masked.has(col.name.toLowerCase())) {
      col.masked = true;
      col.min = null;
      col.max = null;
      col.avg = null;
    }
  }
  if (notes.length) profile.notes = notes;
  return profile;
}

/** A model whose metrics profile is to be recorded: its relation and columns as the catalog has them now. */
export interface ProfileTarget {
  runId: string | null;
  model: string;
  schema: string;
  table: string;
  columns: ColumnInfo[];
}

const TARGETS_SHAPE = `'[{"k":"INTEGER","id":"VARCHAR","run_id":"VARCHAR","model":"VARCHAR","sig":"VARCHAR","cols":[{"name":"VARCHAR","type":"VARCHAR"}]}]'`;

/**
 * The part of a relation's fingerprint known without reading it: its column names and types, in order.
 * (A profile stores names and types, so a relation whose columns changed never shares a profile.)
 */
function columnsSignature(columns: readonly ColumnInfo[]): string {
  return createHash('sha256')
    .update(JSON.stringify(columns.map((c) => [c.name, c.type])))
    .digest('hex')
    .slice(0, 32);
}

/**
 * The aggregate that fingerprints a relation's content: its row count and the sum of a hash of
 * every whole row. Equal fingerprints mean the same multiset of rows (but for a 64-bit hash
 * collision), so the same counts, null counts and distinct counts; a hash and a sum per row cost a
 * small part of the exact distinct counts of every column (bench/README.md "Transform overhead").
 * The stored fingerprint is `<columns signature>|<this>`.
 */
function contentFingerprint(t: ProfileTarget): string {
  const row = t.columns.map((c) => quoteIdent(c.name)).join(', ');
  return `CAST(count(*) AS VARCHAR) || ':' || CAST(coalesce(sum(hash(${row})), 0) AS VARCHAR)`;
}

/**
 * Each model's latest stored profile: its `seq`, metrics and fingerprint (null when it was stored
 * without one), rows `{model, seq, row_count, columns, fingerprint}`. The recorder reads it once
 * per transform run (recorder.ts), not once per batch: it scans every stored profile, and nothing
 * deletes one.
 */
export const LATEST_FINGERPRINTS_SQL = `SELECT p.model, p.seq, p.row_count, CAST(p.columns AS VARCHAR) AS columns, x.fingerprint
  FROM _service.model_profiles p LEFT JOIN _service.model_profile_fingerprints x ON x.id = p.id
  QUALIFY row_number() OVER (PARTITION BY p.model ORDER BY p.seq DESC) = 1`;

/** A stored profile as LATEST_FINGERPRINTS_SQL reads it: what a copy stores again. */
export interface LatestProfile {
  seq: number;
  rowCount: number | null;
  /** The stored `columns` JSON, as text. */
  columns: string;
  fingerprint: string | null;
}

/** One query that fingerprints every target's content: rows `{k, f}` (k is the target's index; see storedFingerprint). */
export function fingerprintsSql(targets: readonly ProfileTarget[]): string {
  return targets.map((t, k) => `SELECT ${k} AS k, ${contentFingerprint(t)} AS f FROM ${qualified(t.schema, t.table)}`).join('\nUNION ALL ');
}

/** A target's fingerprint as a profile stores it, from the content part fingerprintsSql answered. */
export function storedFingerprint(t: ProfileTarget, content: string): string {
  return `${columnsSignature(t.columns)}|${content}`;
}

/**
 * Stores, for each target, a copy of a stored profile with its fingerprint (same content, so the
 * same metrics) under the target's run: two plain inserts of the values the recorder read, no
 * join over the stored profiles.
 */
export function copyProfilesSql(copies: ReadonlyArray<{ target: ProfileTarget; stored: LatestProfile }>, profiledAt: string): string {
  const rows = copies.map((c) => ({ id: randomUUID(), ...c }));
  const runId = (t: ProfileTarget) => (t.runId === null ? 'NULL' : quoteLiteral(t.runId));
  const rowCount = (s: LatestProfile) => (s.rowCount === null ? 'NULL' : String(s.rowCount));
  return `INSERT INTO _service.model_profiles (id, run_id, model, row_count, columns, profiled_at) VALUES ${rows
    .map((r) => `(${quoteLiteral(r.id)}, ${runId(r.target)}, ${quoteLiteral(r.target.model)}, ${rowCount(r.stored)}, ${quoteLiteral(r.stored.columns)}, TIMESTAMP ${quoteLiteral(profiledAt)})`)
    .join(', ')};
INSERT INTO _service.model_profile_fingerprints (id, fingerprint) VALUES ${rows.map((r) => `(${quoteLiteral(r.id)}, ${quoteLiteral(r.stored.fingerprint ?? '')})`).join(', ')}`;
}

const PASS = 'temp.main.__dp_profile_pass';

/**
 * The statements that compute the metrics profile of every target and store it in
 * `_service.model_profiles`, with the relation's content fingerprint in
 * `_service.model_profile_fingerprints` (taken in the same pass, so a stored fingerprint always
 * describes the rows its profile was computed on). Per target, one aggregate pass returns a plain
 * list: `[rows, non-NULL count of column 1, distinct count of column 1, …]`; the targets' names and
 * column names/types come in as one JSON literal, and a single lambda shapes each list into the
 * stored JSON. (Keeping the per-target SQL this small matters: DuckDB plans a UNION ALL of 25 of
 * these in a third of the time it takes for 25 branches that each build their own JSON.) The
 * passes' one row per target is kept in a temporary table for the two inserts. `profiledAt` is
 * naive UTC text.
 */
export function recordProfilesSql(targets: readonly ProfileTarget[], profiledAt: string): string {
  const passes = targets.map((t, k) => {
    const aggregates = ['count(*)'];
    for (const c of t.columns) {
      const col = quoteIdent(c.name);
      aggregates.push(`count(${col})`, distinctCount(col, c.type));
    }
    return `SELECT ${k} AS k, [${aggregates.join(', ')}] AS v, ${contentFingerprint(t)} AS f FROM ${qualified(t.schema, t.table)}`;
  });
  const meta = JSON.stringify(targets.map((t, k) => ({ k, id: randomUUID(), run_id: t.runId, model: t.model, sig: columnsSignature(t.columns), cols: t.columns })));
  const targetsJoin = `JOIN (SELECT unnest(from_json(${quoteLiteral(meta)}, ${TARGETS_SHAPE})) AS t) m ON m.t.k = s.k`;
  // Lambda index i is 1-based: v[2i] is the non-NULL count of column i, v[2i + 1] its distinct count.
  const nulls = '(s.v[1] - s.v[2 * i])';
  const metrics = `{'name': c.name, 'type': c.type, 'null_count': ${nulls}, 'null_pct': CASE WHEN s.v[1] = 0 THEN 0 ELSE round(${nulls} * 100 / s.v[1]::DOUBLE, 4) END, 'distinct_count': s.v[2 * i + 1]}`;
  return `CREATE OR REPLACE TEMP TABLE __dp_profile_pass AS ${passes.join('\n  UNION ALL ')};
INSERT INTO _service.model_profiles (id, run_id, model, row_count, columns, profiled_at)
SELECT m.t.id, m.t.run_id, m.t.model, s.v[1], to_json(list_transform(m.t.cols, lambda c, i: ${metrics})), TIMESTAMP ${quoteLiteral(profiledAt)}
  FROM ${PASS} s ${targetsJoin};
INSERT INTO _service.model_profile_fingerprints (id, fingerprint) SELECT m.t.id, m.t.sig || '|' || s.f FROM ${PASS} s ${targetsJoin};
DROP TABLE ${PASS}`;
}

export interface StoredProfile {
  seq: number;
  id: string;
  run_id: string | null;
  model: string;
  row_count: number;
  columns: StoredColumnMetrics[];
  profiled_at: string;
}

function toStored(r: Record<string, unknown>): StoredProfile {
  return {
    seq: Number(r.seq),
    id: String(r.id),
    run_id: (r.run_id as string | null) ?? null,
    model: String(r.model),
    row_count: Number(r.row_count),
    columns: parseJson<StoredColumnMetrics[]>(r.columns, []),
    profiled_at: isoUtc(r.profiled_at) as string,
  };
}

const STORED_COLUMNS = 'seq, id, run_id, model, row_count, columns, CAST(profiled_at AS VARCHAR) AS profiled_at';

/** Recorded profiles of a model, newest first. */
export async function profileHistory(ctx: PluginContext, model: string, limit: number): Promise<StoredProfile[]> {
  const rows = await ctx.db.all(`SELECT ${STORED_COLUMNS} FROM _service.model_profiles WHERE model = $1 ORDER BY seq DESC LIMIT ${Math.max(1, Math.floor(limit))}`, [model]);
  return rows.map(toStored);
}
