/**
 * The notebooks plugin's part of project.yml: `notebooks` (docs/configuration.md). One TypeBox
 * source gives the schema the kernel validates at boot and the type ctx.config() returns.
 */
import { defineConfig, Type } from '../../sdk/index.js';

export const NOTEBOOKS_CONFIG = defineConfig(
  'notebooks',
  Type.Object(
    {
      session_idle_seconds: Type.Integer({ minimum: 1, default: 900, description: 'A notebook session (its cells\' exported values) is released after this many seconds without a cell run' }),
      max_pending_runs: Type.Integer({
        minimum: 1,
        default: 8,
        description: 'Cell runs one user may have waiting or running at once, across all notebooks; past it a run answers 429 notebook_queue_full',
      }),
      row_limit: Type.Integer({ minimum: 1, maximum: 100000, default: 1000, description: 'Rows a sql cell returns (truncated: true when there are more)' }),
    },
    { additionalProperties: false, default: {} },
  ),
  { restartRequired: 'notebook sessions take their idle time and limits when the plugin sets up' },
);
