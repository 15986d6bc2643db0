// The baseline of bench/cli-start/run.mjs: a bare Node process that does the work of `dp tables`
// (list tables and views with exact row counts, print a text table) or of `dp query <sql>`
// (run it, print a text table) on one DuckDB file with @duckdb/node-api and nothing else.
// Usage: node bare-duckdb.mjs [--require] <file.duckdb> tables | query <sql>
// The package is CommonJS: imported (the default) Node runs its export lexer over every file of
// it; with --require it loads through require(), as dp does (kernel/database/duckdb-api.ts).
import { createRequire } from 'node:module';

const args = process.argv.slice(2);
const viaRequire = args[0] === '--require';
const [file, what, sql] = viaRequire ? args.slice(1) : args;
const { DuckDBInstance } = viaRequire ? createRequire(import.meta.url)('@duckdb/node-api') : await import('@duckdb/node-api');
const instance = await DuckDBInstance.create(file);
const connection = await instance.connect();
const rows = async (text) => (await connection.runAndReadAll(text)).getRowObjectsJS();
const print = (list, columns) => {
  const widths = columns.map((c) => Math.max(c.length, ...list.map((r) => String(r[c] ?? '').length)));
  const line = (cells) => cells.map((v, i) => String(v).padEnd(widths[i])).join('  ').trimEnd();
  process.stdout.write([line(columns), line(widths.map((w) => '-'.repeat(w))), ...list.map((r) => line(columns.map((c) => r[c] ?? ''))), `(${list.length} rows)`].join('\n') + '\n');
};
if (what === 'tables') {
  const tables = await rows(
    `SELECT schema_name AS schema, table_name AS name, 'table' AS type FROM duckdb_tables() WHERE database_name = current_database() AND NOT internal AND NOT temporary
     UNION ALL SELECT schema_name, view_name, 'view' FROM duckdb_views() WHERE database_name = current_database() AND NOT internal AND NOT temporary ORDER BY 1, 2`,
  );
  const visible = tables.filter((t) => !t.schema.startsWith('_'));
  const base = visible.filter((t) => t.type === 'table');
  const counts = base.length ? await rows(base.map((t, i) => `SELECT ${i} AS i, count(*) AS n FROM "${t.schema}"."${t.name}"`).join(' UNION ALL ')) : [];
  for (const c of counts) base[c.i].rows = Number(c.n);
  print(visible, ['schema', 'name', 'type', 'rows']);
} else {
  const result = await rows(sql);
  print(result, result.length ? Object.keys(result[0]) : []);
}
connection.closeSync();
instance.closeSync();
