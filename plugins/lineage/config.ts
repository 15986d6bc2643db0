/**
 * The lineage plugin's part of project.yml: `exposures` (SPEC.md "Project configuration"), the
 * downstream uses the full DAG shows. One TypeBox source gives the schema and the type.
 */
import { defineConfig, Type } from '../../sdk/index.js';

export const EXPOSURES_CONFIG = defineConfig(
  'exposures',
  Type.Array(
    Type.Object({
      name: Type.String(),
      description: Type.Optional(Type.String()),
      owner: Type.Optional(Type.String()),
      type: Type.Optional(Type.String()),
      url: Type.Optional(Type.String()),
      depends_on: Type.Array(Type.String(), { default: [] }),
    }),
    { default: [] },
  ),
);
