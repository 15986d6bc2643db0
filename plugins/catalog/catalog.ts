/**
 * Sources, exposures and the overview (SPEC "Catalog"). Sources belong to the models plugin's
 * `sources:` key, read through its service; exposures (lineage's `exposures:` key), the
 * warehouse's relations (tables) and further overview counts (semantic's metrics) come from the
 * plugins that own them through `catalog.docs`. The catalog adds what the warehouse knows (does
 * the table exist, how many rows; which relations an exposure names that the project does not define).
 *
 * Every free-text value comes back with `.env` values shown as their `${VAR}` reference: project.yml
 * is expanded before plugins see it, and a token in an exposure URL must not reach a viewer.
 */
import {
  schemaHiddenFrom,
  type Caller,
  type QueryStopSignal,
  withEnvReferences,
  type DocContribution,
  type ExposureConfig,
  type ModelsService,
  type PluginContext,
  type SourceConfig,
} from '../../sdk/index.js';

export interface CatalogDeps {
  ctx: PluginContext;
  models: () => ModelsService;
  /**
   * What other plugins contribute to `catalog.docs`: without lineage no exposures (its key) and no
   * column lineage; without tables no table listing or row counts; without semantic no metric count.
   */
  contributions: readonly DocContribution[];
}

/** A copy of a config value with every string passed through withEnvReferences. */
export function shownAsWritten<T>(value: T, env: Readonly<Record<string, string>>): T {
  if (typeof value === 'string') return withEnvReferences(value, env) as T;
  if (Array.isArray(value)) return value.map((v) => shownAsWritten(v, env)) as T;
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, shownAsWritten(v, env)])) as T;
  return value;
}

const relationKey = (schema: string, name: string) => `${schema}.${name}`.toLowerCase();

/** Who reads, and when they left: row counts run as the caller's read (TablesService.list). */
export interface CatalogReader {
  caller: Caller;
  signal?: QueryStopSignal;
}

/** Row counts of every visible table by lower-case `schema.name` (views: null). */
async function warehouse(deps: CatalogDeps, reader: CatalogReader) {
  const all = (await Promise.all(deps.contributions.map((c) => c.relations?.(reader) ?? []))).flat();
  const visible = all.filter((t) => !schemaHiddenFrom(t.schema, reader.caller.role));
  return { list: visible, byName: new Map(visible.map((t) => [relationKey(t.schema, t.name), t])) };
}

export interface SourceEntry extends SourceConfig {
  tables: Array<SourceConfig['tables'][number] & { exists: boolean; type: 'table' | 'view' | null; rows: number | null }>;
}

/** `sources:` with each table's presence in the warehouse and its row count. */
export async function listSources(deps: CatalogDeps, reader: CatalogReader): Promise<SourceEntry[]> {
  const { byName } = await warehouse(deps, reader);
  return deps
    .models()
    .sources()
    .map((src) => ({
      ...shownAsWritten(src, deps.ctx.env),
      tables: src.tables.map((t) => {
        const found = byName.get(relationKey(src.schema, t.name));
        return { ...shownAsWritten(t, deps.ctx.env), exists: Boolean(found), type: found?.type ?? null, rows: found?.rows ?? null };
      }),
    }));
}

export interface ExposureEntry extends ExposureConfig {
  /** Names in depends_on that are no model, seed or declared source of the project. */
  unknown_dependencies: string[];
}

const exposuresOf = (deps: CatalogDeps): ExposureConfig[] => deps.contributions.flatMap((c) => c.exposures?.() ?? []);

/** `exposures:` with the names they depend on that the project does not define. */
export async function listExposures(deps: CatalogDeps): Promise<ExposureEntry[]> {
  const models = deps.models();
  const known = new Set<string>();
  for (const m of await models.list()) {
    known.add(m.full_name.toLowerCase());
    known.add(m.name.toLowerCase());
  }
  for (const s of await models.seeds()) known.add(s.full_name.toLowerCase());
  for (const src of models.sources()) for (const t of src.tables) known.add(relationKey(src.schema, t.name));
  return exposuresOf(deps).map((e) => ({
    ...shownAsWritten(e, deps.ctx.env),
    depends_on: e.depends_on ?? [],
    unknown_dependencies: (e.depends_on ?? []).filter((d) => !known.has(d.toLowerCase())),
  }));
}

/** The overview (SPEC: schemas, tables, rows, recent runs, connectors). */
export async function overview(deps: CatalogDeps, reader: CatalogReader) {
  const role = reader.caller.role;
  const { list } = await warehouse(deps, reader);
  const schemas = new Map<string, { name: string; tables: number; views: number; rows: number }>();
  for (const t of list) {
    const s = schemas.get(t.schema) ?? { name: t.schema, tables: 0, views: 0, rows: 0 };
    if (t.type === 'table') {
      s.tables += 1;
      s.rows += t.rows ?? 0;
    } else s.views += 1;
    schemas.set(t.schema, s);
  }
  const models = deps.models();
  const project = deps.ctx.project;
  // Names and types only: a connection's other keys hold hosts, users and secrets.
  const connections = Object.entries(project.config.connections ?? {}).map(([name, c]) => ({ name, type: typeof c.type === 'string' ? c.type : null }));
  const modelList = (await models.list()).filter((m) => !schemaHiddenFrom(m.schema, role));
  return {
    project: project.config.name,
    environment: project.env,
    totals: {
      schemas: schemas.size,
      tables: list.filter((t) => t.type === 'table').length,
      views: list.filter((t) => t.type === 'view').length,
      rows: [...schemas.values()].reduce((n, s) => n + s.rows, 0),
      models: modelList.length,
      seeds: (await models.seeds()).length,
      sources: models.sources().reduce((n, s) => n + s.tables.length, 0),
      exposures: exposuresOf(deps).length,
      ...Object.assign({}, ...(await Promise.all(deps.contributions.map((c) => c.overviewTotals?.() ?? {})))),
    },
    schemas: [...schemas.values()],
    tables: list.map((t) => ({ schema: t.schema, name: t.name, type: t.type, rows: t.rows ?? null })),
    recent_runs: await models.runs(10),
    connectors: connections,
  };
}
