/**
 * Freshness: how long ago each model was built (recorded by this plugin for every build it sees)
 * and how long ago each declared source table was loaded (max of its `loaded_at_column`, against
 * the source's `freshness_hours`).
 */
import { errorMessage, isDpError, qualified, quoteIdent, quoteLiteral, type Caller, type PluginContext, type QueryStopSignal } from '../../sdk/index.js';
import { isoUtc, isServiceSchema, maskedColumnsFor, maskedNamesFor, modelsService, parseUtc, redactQuoted, relationExists } from './relations.js';

export interface ModelFreshness {
  model: string;
  last_built_at: string | null;
  last_status: string | null;
  hours_since_build: number | null;
  status: 'fresh' | 'stale' | 'never_built';
}

export interface ModelFreshnessReport {
  max_hours: number;
  checked_at: string;
  stale_count: number;
  models: ModelFreshness[];
}

export interface SourceFreshness {
  source: string;
  schema: string;
  table: string;
  loaded_at_column: string | null;
  freshness_hours: number | null;
  max_loaded_at: string | null;
  hours_since_load: number | null;
  /** `unchecked`: no loaded_at_column or no freshness_hours to judge by. */
  status: 'fresh' | 'stale' | 'no_data' | 'missing_table' | 'unchecked' | 'error';
  error?: string;
  /**
   * True when loaded_at_column is masked for the caller: the status is judged on the raw values,
   * but max_loaded_at and hours_since_load (the value itself, to the minute) are withheld.
   */
  masked?: boolean;
}

export interface SourceFreshnessReport {
  checked_at: string;
  stale_count: number;
  sources: SourceFreshness[];
}

/** Past its SLA, or (with an SLA) never loaded at all: an empty or missing table is stale data too. */
export function isStaleSource(s: SourceFreshness): boolean {
  return s.status === 'stale' || ((s.status === 'no_data' || s.status === 'missing_table') && s.freshness_hours !== null);
}

const hours = (ms: number) => Math.round((ms / 3_600_000) * 100) / 100;

export interface BuildRecord {
  model: string;
  status: string;
  runId: string | null;
  /** When the build finished: naive UTC timestamp text. */
  builtAt: string;
}

/** A build waiting in the recorder's queue (recorder.ts) with what else it records. */
export interface QueuedBuild extends BuildRecord {
  schema: string;
  table: string;
  /** Record a metrics profile as well (anomaly detection is on). */
  profile: boolean;
}

/** One upsert of the last build of each model into `_service.model_freshness` (the latest record of a model wins). */
export function recordBuildsSql(records: readonly BuildRecord[]): string {
  const latest = new Map(records.map((r) => [r.model, r]));
  const rows = [...latest.values()].map(
    (r) => `(${quoteLiteral(r.model)}, TIMESTAMP ${quoteLiteral(r.builtAt)}, ${quoteLiteral(r.status)}, ${r.runId === null ? 'NULL' : quoteLiteral(r.runId)})`,
  );
  return `INSERT INTO _service.model_freshness (model, last_built_at, last_status, run_id) VALUES ${rows.join(', ')}
     ON CONFLICT (model) DO UPDATE SET last_built_at = excluded.last_built_at, last_status = excluded.last_status, run_id = excluded.run_id`;
}

/** Every model (from the models service when enabled, plus every model this plugin saw built). */
export async function modelFreshness(ctx: PluginContext, maxHours: number): Promise<ModelFreshnessReport> {
  const builds = await ctx.db.all<{ model: string; last_built_at: string; last_status: string }>(
    'SELECT model, CAST(last_built_at AS VARCHAR) AS last_built_at, last_status FROM _service.model_freshness',
  );
  const byModel = new Map(builds.map((b) => [b.model, b]));
  const names = new Set(builds.map((b) => b.model));
  const models = modelsService(ctx);
  if (models) for (const m of await models.list()) names.add(m.full_name);
  const now = Date.now();
  const out: ModelFreshness[] = [...names].sort().map((model) => {
    const b = byModel.get(model);
    const at = b ? parseUtc(b.last_built_at) : null;
    if (at === null) return { model, last_built_at: null, last_status: null, hours_since_build: null, status: 'never_built' };
    const age = hours(now - at);
    return { model, last_built_at: isoUtc(b?.last_built_at), last_status: b?.last_status ?? null, hours_since_build: age, status: age > maxHours ? 'stale' : 'fresh' };
  });
  return { max_hours: maxHours, checked_at: new Date(now).toISOString(), stale_count: out.filter((m) => m.status !== 'fresh').length, models: out };
}

/**
 * Each source table's newest `loaded_at_column` value against its source's `freshness_hours`, as
 * `caller` may see it: sources in `_service` are left out for non-admins and never queried (their
 * columns hold credentials); a masked loaded_at_column shows the status only.
 */
export async function sourceFreshness(ctx: PluginContext, caller: Caller, signal?: QueryStopSignal): Promise<SourceFreshnessReport> {
  const now = Date.now();
  const out: SourceFreshness[] = [];
  const maskedNames = await maskedNamesFor(ctx, caller);
  // `sources:` belongs to the models plugin; without it there are no sources to check.
  for (const source of modelsService(ctx)?.sources() ?? []) {
    const sla = typeof source.freshness_hours === 'number' ? source.freshness_hours : null;
    const internal = isServiceSchema(source.schema);
    if (internal && caller.role !== 'admin') continue;
    for (const t of source.tables ?? []) {
      const row: SourceFreshness = {
        source: source.name,
        schema: source.schema,
        table: t.name,
        loaded_at_column: t.loaded_at_column ?? null,
        freshness_hours: sla,
        max_loaded_at: null,
        hours_since_load: null,
        status: 'unchecked',
      };
      out.push(row);
      if (internal) {
        row.status = 'error';
        row.error = "dp's internal schema is not checked for freshness";
        continue;
      }
      if (!(await relationExists(ctx, source.schema, t.name))) {
        row.status = 'missing_table';
        continue;
      }
      if (!t.loaded_at_column) continue;
      const column = t.loaded_at_column.toLowerCase();
      const masked = maskedNames.has(column) || (await maskedColumnsFor(ctx, caller, source.schema, t.name)).has(column);
      try {
        const col = quoteIdent(t.loaded_at_column);
        const R = qualified(source.schema, t.name);
        // max() over a whole table a viewer asked for: under the role's deadline, in a query slot, stopped when the client leaves.
        const r = await ctx.queries.withDeadline({ caller, purpose: 'freshness', signal }, async (c) => {
          const type = (await c.all<{ column_type: string }>(`DESCRIBE SELECT ${col} FROM ${R}`))[0]?.column_type ?? '';
          // TIMESTAMPTZ is an instant; naive timestamps and dates are read as UTC.
          const epoch = /WITH TIME ZONE/i.test(type) ? `epoch_ms(max(${col}))` : `epoch_ms(CAST(max(${col}) AS TIMESTAMP))`;
          return (await c.all(`SELECT ${epoch} AS ms, CAST(max(${col}) AS VARCHAR) AS max_text FROM ${R}`))[0];
        });
        if (r.ms === null || r.ms === undefined) {
          row.status = 'no_data';
          continue;
        }
        const ms = Number(r.ms);
        const age = hours(now - ms);
        if (sla !== null) row.status = age > sla ? 'stale' : 'fresh';
        if (masked) row.masked = true;
        else {
          row.max_loaded_at = new Date(ms).toISOString();
          row.hours_since_load = age;
        }
      } catch (e) {
        if (signal?.aborted || (isDpError(e) && e.status === 408)) throw e;
        row.status = 'error';
        // Conversion errors quote the value they failed on.
        const message = errorMessage(e).split('\n')[0];
        row.error = masked ? redactQuoted(message) : message;
        if (masked) row.masked = true;
      }
    }
  }
  return { checked_at: new Date(now).toISOString(), stale_count: out.filter(isStaleSource).length, sources: out };
}
