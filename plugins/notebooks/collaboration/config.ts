/** `collaboration:` in project.yml: how long an idle shared document stays in memory. */
import { defineConfig, Type } from '../../../sdk/index.js';

export const COLLABORATION_CONFIG = defineConfig(
  'collaboration',
  Type.Object(
    {
      idle_release_seconds: Type.Number({
        minimum: 0,
        default: 30,
        description: 'Seconds a shared document stays in memory after its last editor left; then its unsaved changes are saved (unless the file changed on disk meanwhile: then they are discarded) and it is released',
      }),
    },
    { additionalProperties: false, default: {} },
  ),
  { restartRequired: 'the collaboration hub takes its idle release time when the server starts' },
);
