/** Small SQL text helpers shared by plugins (quoting only; parsing is DuckDB's job). */

/** Quotes an identifier: `my "col"` → `"my ""col"""`. */
export function quoteIdent(name: string): string {
  return '"' + name.replace(/"/g, '""') + '"';
}

/** Quotes a string literal: `it's` → `'it''s'`. */
export function quoteLiteral(value: string): string {
  return "'" + value.replace(/'/g, "''") + "'";
}

/** `schema.table` quoted. */
export function qualified(schema: string, table: string): string {
  return `${quoteIdent(schema)}.${quoteIdent(table)}`;
}

/** Identifier rule for names users give (models, schemas, metrics). */
export const SAFE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Calls visit on every object node of a parse tree (json_serialize_sql), depth first, parents before children. */
export function walkSqlTree(value: unknown, visit: (node: Record<string, any>) => void): void {
  if (Array.isArray(value)) {
    for (const child of value) walkSqlTree(child, visit);
  } else if (value && typeof value === 'object') {
    visit(value as Record<string, any>);
    for (const child of Object.values(value)) if (child && typeof child === 'object') walkSqlTree(child, visit);
  }
}
