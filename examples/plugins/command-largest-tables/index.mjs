// A third-party plugin that adds a CLI command, in plain JavaScript. A project loads it with
//   plugins:
//     paths: [path/to/command-largest-tables]
// `dp --help` lists `dp largest-tables` from plugin.json alone; running it imports this file
// and no other plugin's (docs/plugins.md "Activation on demand").
export default {
  setup(ctx) {
    ctx.command('largest-tables', async (args, io) => {
      const limit = Number(args.limit);
      if (!Number.isInteger(limit) || limit < 1) {
        io.err('error: --limit takes a whole number of at least 1');
        return 1;
      }
      // DuckDB's catalog keeps an estimate of each table's rows: listing sizes reads no data.
      const rows = await ctx.db.all(
        `SELECT schema_name AS schema, table_name AS "table", estimated_size AS rows, column_count AS columns
           FROM duckdb_tables()
          WHERE database_name = current_database() AND NOT internal AND NOT temporary AND schema_name NOT LIKE '\\_%' ESCAPE '\\'
          ORDER BY estimated_size DESC, schema_name, table_name
          LIMIT ${limit}`,
      );
      const out = rows.map((r) => ({ ...r, rows: Number(r.rows), columns: Number(r.columns) }));
      if (io.wantsJson) io.json(out);
      else io.table(out, ['schema', 'table', 'rows', 'columns']);
    });
  },
};
