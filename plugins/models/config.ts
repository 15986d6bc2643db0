/**
 * The models plugin's part of project.yml: `lint` and `sources` (SPEC.md "Project configuration").
 * One TypeBox source gives the schema the kernel validates at boot and the type ctx.config() returns.
 */
import { defineConfig, Type } from '../../sdk/index.js';

export const LINT_CONFIG = defineConfig(
  'lint',
  Type.Object(
    {
      dialect: Type.String({ default: 'duckdb', description: "sql-formatter dialect (default 'duckdb')" }),
      rules: Type.Union([Type.Array(Type.String()), Type.Literal('all')], { default: 'all', description: "Rule names, or 'all'" }),
      keyword_case: Type.Optional(Type.String({ description: "'upper' (default) or 'lower'" })),
      max_line_length: Type.Optional(Type.Number({ description: 'Default 120' })),
      marts_schemas: Type.Optional(Type.Array(Type.String(), { description: "Schemas holding marts (default ['marts'])" })),
    },
    { default: {} },
  ),
);

const SourceTableSchema = Type.Object({
  name: Type.String(),
  description: Type.Optional(Type.String()),
  loaded_at_column: Type.Optional(Type.String()),
  columns: Type.Optional(Type.Array(Type.Object({ name: Type.String(), description: Type.Optional(Type.String()) }))),
});

export const SOURCES_CONFIG = defineConfig(
  'sources',
  Type.Array(
    Type.Object({
      name: Type.String(),
      /** Defaults to `name` (the models service fills it in). */
      schema: Type.Optional(Type.String()),
      description: Type.Optional(Type.String()),
      connection: Type.Optional(Type.String()),
      freshness_hours: Type.Optional(Type.Number()),
      tables: Type.Array(SourceTableSchema, { default: [] }),
    }),
    { default: [] },
  ),
);
