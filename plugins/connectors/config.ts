/**
 * The connectors plugin's part of project.yml: `connectors` (docs/decisions.md "CDC"): per
 * connector its `type`, the `connection` it reads through (a key of `connections`), the
 * `target_schema`, a cron `schedule` and its `tables` with their CDC options.
 */
import { defineConfig, Type } from '../../sdk/index.js';

export const CDC_MODES = ['high_watermark', 'file_tracking', 'full_refresh'] as const;

export const TableOptions = Type.Object(
  {
    name: Type.String({ minLength: 1, description: 'Source table name (schema-qualified where the source has schemas)' }),
    cdc_mode: Type.Optional(Type.Union(CDC_MODES.map((m) => Type.Literal(m)), { default: 'full_refresh' })),
    cdc_column: Type.Optional(Type.Union([Type.String({ minLength: 1 }), Type.Null()], { default: null, description: 'Column to track; required for high_watermark' })),
    source_query: Type.Optional(Type.Union([Type.String({ minLength: 1 }), Type.Null()], { default: null, description: 'Custom SELECT in the source dialect; default all columns of the table' })),
  },
  { additionalProperties: false },
);

export const ConnectorOptions = Type.Object(
  {
    type: Type.String({ minLength: 1 }),
    connection: Type.Optional(Type.String({ minLength: 1, description: 'Key of `connections`; default the connector name' })),
    target_schema: Type.Optional(Type.String({ default: 'landing', pattern: '^[A-Za-z_][A-Za-z0-9_]*$' })),
    schedule: Type.Optional(Type.Union([Type.String(), Type.Null()], { default: null, description: '5-field cron expression' })),
    tables: Type.Optional(Type.Array(Type.Union([Type.String({ minLength: 1 }), TableOptions]), { default: [] })),
  },
  { additionalProperties: false },
);

export const CONNECTORS_CONFIG = defineConfig('connectors', Type.Record(Type.String({ pattern: '^[A-Za-z_][A-Za-z0-9_]*$' }), ConnectorOptions, { default: {} }));

export interface TableConfig {
  name: string;
  cdc_mode: (typeof CDC_MODES)[number];
  cdc_column: string | null;
  source_query: string | null;
}
export interface ConnectorConfig {
  name: string;
  type: string;
  connection: string;
  target_schema: string;
  schedule: string | null;
  tables: TableConfig[];
}
