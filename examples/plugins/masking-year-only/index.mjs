// A third-party masking method plugin in plain JavaScript. A project loads it with
//   plugins:
//     paths: [path/to/masking-year-only]
// Each method compiles to a DuckDB SQL expression; `apply` is the optional JavaScript twin
// used when masking has to happen after execution.
export default {
  setup(ctx) {
    ctx.extend('masking.methods', [
      {
        name: 'year_only',
        description: 'A date or timestamp reduced to its year (as text); anything else becomes NULL.',
        configSchema: { type: 'object', additionalProperties: false, properties: {} },
        expression: (column) => `CAST(year(TRY_CAST(${column} AS DATE)) AS VARCHAR)`,
        apply: (value) => {
          const m = /^(\d{4})-\d{2}-\d{2}/.exec(String(value ?? ''));
          return m ? m[1] : null;
        },
      },
      {
        name: 'fixed_text',
        description: 'Every non-NULL value replaced by the configured text.',
        configSchema: {
          type: 'object',
          additionalProperties: false,
          properties: { text: { type: 'string', maxLength: 100, default: 'hidden', description: 'Replacement text' } },
        },
        expression: (column, config) => `CASE WHEN ${column} IS NULL THEN NULL ELSE '${String(config.text).replace(/'/g, "''")}' END`,
        apply: (value, config) => (value == null ? null : String(config.text)),
      },
    ]);
  },
};
