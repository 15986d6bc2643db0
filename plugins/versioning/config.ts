/**
 * The versioning plugin's part of project.yml: `versioning`. One TypeBox source gives the schema
 * the kernel validates at boot and the type ctx.config() returns.
 */
import { defineConfig, Type } from '../../sdk/index.js';

export const VERSIONING_CONFIG = defineConfig(
  'versioning',
  Type.Object(
    {
      after_pipeline: Type.Boolean({ default: false, description: 'Create a version (trigger `pipeline`) after each successful pipeline run' }),
      compression: Type.Union([Type.Literal('zstd'), Type.Literal('snappy'), Type.Literal('gzip'), Type.Literal('uncompressed')], {
        default: 'zstd',
        description: 'Parquet compression of version files',
      }),
    },
    { default: {}, additionalProperties: false },
  ),
  { restartRequired: 'the version store takes its compression when the plugin sets up (after_pipeline applies at once)' },
);
