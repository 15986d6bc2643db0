/**
 * The listing on an environment whose target is not the DuckDB file (`dp tables --env prod`, a
 * server whose active environment builds into ClickHouse): the tables are the target's, read
 * through the warehouse-target port's catalog (`relations`, `columns`), never with DuckDB catalog
 * SQL. Row counts are the target's own (ClickHouse: the rows of the active parts on every shard,
 * nothing counted); a table whose engine keeps none (a Log or Memory table) shows none, as views do.
 */
import { notFound, WAREHOUSE_TARGET_SERVICE, type PluginContext, type WarehouseTarget } from '../../sdk/index.js';
import type { ColumnEntry, TableEntry } from './catalog.js';

/** The active environment's target, or null when it builds into the DuckDB file. */
export async function activeTarget(ctx: PluginContext): Promise<WarehouseTarget | null> {
  const service = ctx.services.find(WAREHOUSE_TARGET_SERVICE);
  return service?.config() ? service.target() : null;
}

export async function targetTables(target: WarehouseTarget, schema?: string): Promise<Array<TableEntry & { rows: number | null }>> {
  const relations = await target.relations(schema === undefined ? undefined : { schema });
  return relations
    .filter((r) => schema === undefined || r.schema === schema)
    .map((r) => ({ schema: r.schema, name: r.name, type: r.kind, rows: r.kind === 'table' ? (r.estimatedRows ?? null) : null }));
}

export async function describeOnTarget(target: WarehouseTarget, schema: string, table: string): Promise<{ schema: string; name: string; type: string; columns: ColumnEntry[] }> {
  const found = (await targetTables(target, schema)).find((t) => t.name === table);
  if (!found) throw notFound('table_not_found', `No table or view ${schema}.${table}`, { schema, table });
  const columns = (await target.columns({ schema, table })).map((c) => ({ name: c.name, type: c.type, nullable: c.nullable }));
  return { schema, name: table, type: found.type, columns };
}
