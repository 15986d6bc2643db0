/**
 * Shared helpers of the quality plugin: which relation a name means, whether it exists,
 * UTC timestamps for the service tables, and masking of data values shown in diagnostics.
 */
import { badRequest, MASKING_SERVICE, redactErrorValues, VIEWER_AUDIENCE, MODELS_SERVICE, notFound, schemaHiddenFrom, type Caller, type ModelsService, type PluginContext } from '../../sdk/index.js';

export interface Relation {
  schema: string;
  table: string;
  /** `schema.table`. */
  full: string;
}

/** Splits `schema.table`; a bare name has no schema. */
export function splitRelation(name: string): { schema: string | null; table: string } {
  const at = name.indexOf('.');
  return at < 0 ? { schema: null, table: name } : { schema: name.slice(0, at), table: name.slice(at + 1) };
}

export function relation(schema: string, table: string): Relation {
  return { schema, table, full: `${schema}.${table}` };
}

/** True when a table or view `schema.table` exists in the warehouse. */
export function relationExists(ctx: PluginContext, schema: string, table: string): Promise<boolean> {
  return ctx.db.catalog.exists(schema, table);
}

export interface ColumnInfo {
  name: string;
  /** DuckDB's type name, as DESCRIBE shows it. */
  type: string;
}

/**
 * Columns of several relations (tables or views of the open database) in one catalog query, in
 * column order, keyed by `columnsKey(schema, table)`; a relation that does not exist has no entry.
 * Names match case-insensitively, as DuckDB resolves them.
 */
export async function relationColumns(ctx: PluginContext, relations: ReadonlyArray<{ schema: string; table: string }>): Promise<Map<string, ColumnInfo[]>> {
  const out = new Map<string, ColumnInfo[]>();
  if (relations.length === 0) return out;
  const wanted = new Set(relations.map((r) => columnsKey(r.schema, r.table)));
  // One read of the whole (cached) catalog answers any number of relations.
  for (const c of await ctx.db.catalog.allColumns({ includeInternal: true })) {
    const key = columnsKey(c.schema, c.table);
    if (!wanted.has(key)) continue;
    const list = out.get(key) ?? [];
    list.push({ name: c.name, type: c.type });
    out.set(key, list);
  }
  return out;
}

export function columnsKey(schema: string, table: string): string {
  return `${schema}.${table}`.toLowerCase();
}

export function modelsService(ctx: PluginContext): ModelsService | undefined {
  return ctx.services.find(MODELS_SERVICE);
}

/**
 * Resolves a model name (`schema.name` or bare name) to its relation: through the models service
 * when that plugin is enabled, else as a literal `schema.table`, else by the names this plugin has
 * recorded builds for. Throws 404 `model_not_found`.
 */
export async function resolveModel(ctx: PluginContext, name: string): Promise<Relation & { assertions: string[] | null }> {
  const models = modelsService(ctx);
  if (models) {
    const m = await models.get(name);
    if (m) return { ...relation(m.schema, m.name), assertions: [...m.assertions] };
  }
  const { schema, table } = splitRelation(name);
  if (schema) {
    if (models === undefined || (await relationExists(ctx, schema, table))) return { ...relation(schema, table), assertions: null };
  } else {
    const known = await ctx.db.all<{ model: string }>(
      `SELECT DISTINCT model FROM (
         SELECT model FROM _service.model_freshness UNION ALL SELECT model FROM _service.assertion_results
       ) WHERE split_part(model, '.', 2) = $1`,
      [table],
    );
    if (known.length === 1) {
      const s = splitRelation(known[0].model);
      return { ...relation(s.schema as string, s.table), assertions: null };
    }
    if (known.length > 1) {
      throw badRequest('ambiguous_model', `'${name}' matches several models: ${known.map((k) => k.model).join(', ')}; name it as schema.name`, { model: name });
    }
  }
  throw notFound('model_not_found', `No model named '${name}'`, { model: name });
}

/** Now in UTC as a naive timestamp string, the form the service tables store. */
export function utcNow(): string {
  return new Date().toISOString().replace('T', ' ').replace('Z', '');
}

/** A naive UTC timestamp from a service table (or an ISO string) as epoch milliseconds. */
export function parseUtc(value: unknown): number | null {
  if (value === null || value === undefined || value === '') return null;
  const text = String(value).trim().replace(' ', 'T');
  const ms = Date.parse(/[zZ]|[+-]\d\d(:?\d\d)?$/.test(text) ? text : text + 'Z');
  return Number.isNaN(ms) ? null : ms;
}

/** A service-table timestamp as ISO-8601 UTC for API responses. */
export function isoUtc(value: unknown): string | null {
  const ms = parseUtc(value);
  return ms === null ? null : new Date(ms).toISOString();
}

/** JSON column values come back as text. */
export function parseJson<T>(value: unknown, fallback: T): T {
  if (value === null || value === undefined) return fallback;
  if (typeof value !== 'string') return value as T;
  try {
    return JSON.parse(value) as T;
  } catch {
    return fallback;
  }
}

/**
 * Who reads stored diagnostics: any signed-in viewer, so stored values are masked as a viewer would
 * see them (the debug endpoint re-runs with the real caller for unmasked values where allowed).
 */
export const STORED_AUDIENCE: Caller = VIEWER_AUDIENCE;

export const MASKED_VALUE = '***';

/** Columns of `schema.table` the audience sees masked (none when the masking plugin is disabled). */
export async function maskedColumnsFor(ctx: PluginContext, audience: Caller, schema: string, table: string): Promise<Set<string>> {
  const masking = ctx.services.find(MASKING_SERVICE);
  if (!masking) return new Set();
  return new Set((await masking.maskedColumns(audience, schema, table)).map((c) => c.toLowerCase()));
}

/** Lower-case names of every column some policy masks for the audience, on any table (docs/decisions.md "Masking policy" rule 4). */
export async function maskedNamesFor(ctx: PluginContext, audience: Caller): Promise<Set<string>> {
  const masking = ctx.services.find(MASKING_SERVICE);
  if (!masking) return new Set();
  return new Set(await masking.maskedColumnNames(audience));
}

/** The kernel's bookkeeping schema (DuckDB names are case-insensitive). */
export const SERVICE_SCHEMA = '_service';

export function isServiceSchema(schema: string | null | undefined): boolean {
  return typeof schema === 'string' && schema.toLowerCase() === SERVICE_SCHEMA;
}

/**
 * A relation in a schema hidden from the caller (schemaHiddenFrom) answers 404 exactly like a
 * relation that does not exist, so its tables cannot even be probed.
 */
export function assertVisible(caller: Caller, schema: string, table: string, code = 'table_not_found'): void {
  if (schemaHiddenFrom(schema, caller.role)) {
    const message = code === 'model_not_found' ? `No model named '${schema}.${table}'` : `No table or view ${schema}.${table}`;
    throw notFound(code, message, code === 'model_not_found' ? { model: `${schema}.${table}` } : { schema, table });
  }
}

/** Rows about relations the caller may see (schemaHiddenFrom: `_service` ones only for admins, `_masking` ones never). */
export function visibleTo<T>(caller: Caller, rows: T[], nameOf: (row: T) => string | null | undefined): T[] {
  return rows.filter((r) => !schemaHiddenFrom(splitRelation(nameOf(r) ?? '').schema, caller.role));
}

/**
 * DuckDB's error messages quote the values they failed on (`Could not convert string
 * '123-45-6789' to INT32`): for an audience bound by a masking policy, quoted values are
 * replaced by the sdk's one redaction of error texts (identifiers stay).
 */
export const redactQuoted = redactErrorValues;
