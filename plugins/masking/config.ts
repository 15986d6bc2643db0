/** The masking plugin's part of project.yml: `masking` (one TypeBox source for schema and type). */
import { defineConfig, Type } from '../../sdk/index.js';

export const MASKING_CONFIG = defineConfig(
  'masking',
  Type.Object(
    {
      enforce_without_auth: Type.Boolean({ default: false, description: 'Mask for callers of a server started without --auth (by default they are admins and exempt)' }),
    },
    { default: {} },
  ),
);
