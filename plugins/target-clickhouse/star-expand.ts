/**
 * Masking wrappers on a server without `SELECT * REPLACE` (ClickHouse before 21.1, so Debian's
 * 18.16). Masking writes each scan of a masked table as `(SELECT * REPLACE (<mask> AS col, ...)
 * FROM <table>)`; on such a server the star is expanded, on DuckDB's parse tree and with the
 * target's catalog, into the table's every column in order, each masked one as `<mask> AS col`:
 * the same relation, column for column. The text is then transpiled as any other.
 *
 * What the target runs is still checked like the DuckDB text (query.ts): the transpiled text is
 * read back into DuckDB SQL, and there every SELECT of one table that lists exactly that table's
 * columns in order (bare, or an expression named after the column it stands in) is written back
 * as `* REPLACE (...)` before the runner's masking checks see it. A transpile that dropped or
 * changed a mask then reads back as a scan without its exact wrapper, and is refused; the
 * contraction never adds a mask, it only names the same relation the way the checks know it.
 */
import { badRequest, readTreeJson, type DatabasePort, type SerializedSql, type SqlNode } from '../../sdk/index.js';

/** `SELECT * REPLACE (...)` (the REPLACE column transformer of 21.1). */
export function hasStarReplace(version: string): boolean {
  const [major = 0] = version.split('.').map((n) => Number(n) || 0);
  return major >= 21;
}

/** The columns of a table on the target, in order (unqualified names are in `defaultSchema`). */
export type ColumnsOf = (schema: string, table: string) => Promise<string[]>;

type Db = Pick<DatabasePort, 'parse' | 'deparse'>;

function selectNodes(root: unknown, visit: (n: SqlNode) => void): void {
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) return node.forEach(walk);
    if (!node || typeof node !== 'object') return;
    const n = node as SqlNode;
    if (n.type === 'SELECT_NODE') visit(n);
    for (const v of Object.values(n)) if (v && typeof v === 'object') walk(v);
  };
  walk(root);
}

const isStar = (n: SqlNode) => n?.class === 'STAR';
const baseTable = (n: SqlNode): SqlNode | null => (n.from_table?.type === 'BASE_TABLE' && !n.from_table.sample && !n.from_table.at_clause ? n.from_table : null);

function refusal(why: string) {
  return badRequest('unsupported_on_target', `The query cannot run on the ClickHouse target: ${why}`, { model: 'query' });
}

/** The DuckDB SQL with every `* REPLACE (...)` of one table expanded into its columns, or null when it has none. */
export async function expandStarReplace(db: Db, sql: string, columnsOf: ColumnsOf, defaultSchema: string): Promise<string | null> {
  const parsed = await db.parse(sql);
  if (!parsed.ok) return null;
  const tree = readTreeJson(parsed.json) as SerializedSql;
  const wrappers: SqlNode[] = [];
  selectNodes(tree.statements, (n) => {
    if ((n.select_list ?? []).some((item: SqlNode) => isStar(item) && item.replace_list?.length)) wrappers.push(n);
  });
  if (wrappers.length === 0) return null;
  for (const n of wrappers) {
    const [star, ...rest] = n.select_list as SqlNode[];
    const table = baseTable(n);
    if (rest.length || !table || star!.relation_name || star!.exclude_list?.length || star!.expr || star!.columns || star!.rename_list?.length) {
      throw refusal('ClickHouse before 21.1 has no SELECT * REPLACE, and this one is not a plain REPLACE over one table that dp can expand');
    }
    const columns = await columnsOf(table.schema_name || defaultSchema, table.table_name);
    const replaced = new Map<string, SqlNode>((star!.replace_list as Array<{ key: string; value: SqlNode }>).map((r) => [r.key.toLowerCase(), r.value]));
    for (const key of replaced.keys()) {
      if (!columns.some((c) => c.toLowerCase() === key)) throw refusal(`the table ${table.table_name} on the target has no column ${key}`);
    }
    n.select_list = columns.map((c) => {
      const value = replaced.get(c.toLowerCase());
      return value ? { ...value, alias: c } : { class: 'COLUMN_REF', type: 'COLUMN_REF', alias: '', query_location: star!.query_location, column_names: [c] };
    });
  }
  return db.deparse(tree);
}

/** The read-back DuckDB SQL with every SELECT that lists one table's columns in order written as `* REPLACE` (or `*`) again; the text as is when none does. */
export async function contractExpanded(db: Db, sql: string, columnsOf: ColumnsOf, defaultSchema: string): Promise<string> {
  const parsed = await db.parse(sql);
  if (!parsed.ok) return sql;
  const tree = readTreeJson(parsed.json) as SerializedSql;
  const candidates: Array<{ node: SqlNode; table: SqlNode }> = [];
  selectNodes(tree.statements, (n) => {
    const table = baseTable(n);
    if (table && (n.select_list ?? []).length && !(n.select_list as SqlNode[]).some(isStar)) candidates.push({ node: n, table });
  });
  let changed = false;
  for (const { node, table } of candidates) {
    const columns = await columnsOf(table.schema_name || defaultSchema, table.table_name).catch(() => [] as string[]);
    const items = node.select_list as SqlNode[];
    if (columns.length !== items.length) continue;
    const replace: Array<{ key: string; value: SqlNode }> = [];
    const fits = items.every((item, i) => {
      const column = columns[i]!;
      if (item.alias === column) {
        const plain = item.class === 'COLUMN_REF' && item.column_names?.length === 1 && item.column_names[0] === column;
        if (!plain) replace.push({ key: column, value: { ...item, alias: '' } });
        return true;
      }
      return item.alias === '' && item.class === 'COLUMN_REF' && item.column_names?.length === 1 && item.column_names[0] === column;
    });
    if (!fits) continue;
    node.select_list = [
      { class: 'STAR', type: 'STAR', alias: '', query_location: items[0]!.query_location, relation_name: '', exclude_list: [], replace_list: replace, columns: false, expr: null, qualified_exclude_list: [], rename_list: [] },
    ];
    changed = true;
  }
  return changed ? db.deparse(tree) : sql;
}
