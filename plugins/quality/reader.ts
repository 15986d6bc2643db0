/**
 * Where assertions and contracts read: the relations the models are built in. On the DuckDB file
 * that is the kernel's database; on an environment whose target is another engine (ClickHouse)
 * it is the warehouse-target service: the checks' SQL is written in DuckDB SQL as always and the
 * service transpiles and verifies it there, and existence and column types come from the
 * target's catalog port. Results are recorded in the local file either way.
 */
import { qualified, quoteIdent, WAREHOUSE_TARGET_SERVICE, type PluginContext, type Row, type TabularResult } from '../../sdk/index.js';
import { relationExists } from './relations.js';

export interface CheckReader {
  /** The rows of a DuckDB-SQL read as objects. */
  all(sql: string): Promise<Row[]>;
  query(sql: string): Promise<TabularResult>;
  exists(schema: string, table: string): Promise<boolean>;
  /** The column's type as the engine names it, or null when the relation has no such column. */
  columnType(schema: string, table: string, column: string): Promise<string | null>;
}

const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

/** The reader of the active environment; `what` names the check in a target's errors. */
export function checkReader(ctx: PluginContext, what: string): CheckReader {
  const service = ctx.services.find(WAREHOUSE_TARGET_SERVICE);
  if (!service?.config()) {
    return {
      all: (sql) => ctx.db.all(sql),
      query: (sql) => ctx.db.query(sql),
      exists: (schema, table) => relationExists(ctx, schema, table),
      async columnType(schema, table, column) {
        const described = await ctx.db.all<{ column_type: string }>(`DESCRIBE SELECT ${quoteIdent(column)} FROM ${qualified(schema, table)}`);
        return described[0]?.column_type ?? null;
      },
    };
  }
  const query = (sql: string) => service.readDuckdbSql(sql, what);
  return {
    query,
    async all(sql) {
      const r = await query(sql);
      return r.rows.map((row) => Object.fromEntries(r.columns.map((c, i) => [c, row[i]])));
    },
    async exists(schema, table) {
      const relations = await (await service.target()).relations({ schema });
      return relations.some((r) => same(r.name, table));
    },
    async columnType(schema, table, column) {
      const columns = await (await service.target()).columns({ schema, table });
      return columns.find((c) => same(c.name, column))?.type ?? null;
    },
  };
}
