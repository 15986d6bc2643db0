// A third-party plugin in plain JavaScript with a web UI page. A project loads it with
//   plugins:
//     paths: [path/to/ui-page-example]
// The server side is one read-only route; the page (ui/page.js) is a prebuilt ES module.
export default {
  setup(ctx) {
    ctx.route({
      method: 'GET',
      url: '/api/ui-page-example/largest-tables',
      permission: 'read',
      summary: 'The ten tables with the most rows (DuckDB estimates)',
      handler: async () => {
        const rows = await ctx.db.all(
          `SELECT schema_name AS schema, table_name AS name, estimated_size AS row_estimate
           FROM duckdb_tables() WHERE NOT internal AND schema_name NOT IN ('_service', '_masking')
           ORDER BY estimated_size DESC, schema_name, table_name LIMIT 10`,
        );
        return { tables: rows.map((r) => ({ ...r, row_estimate: Number(r.row_estimate) })) };
      },
    });
  },
};
