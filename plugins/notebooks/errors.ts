/** Error codes of the notebooks plugin (generated into docs/errors.md); invalid_notebook, file_not_found and query_timeout are shared. */
import { defineErrors } from '../../sdk/index.js';
import { collaborationErrors } from './collaboration/errors.js';

export const errors = defineErrors({
  ...collaborationErrors,
  notebook_path_refused: { status: 400, meaning: 'The path is not a .dpnb file under notebooks/, ingest/ or export/ of the project (symlinks resolved).' },
  invalid_cell_index: { status: 400, meaning: 'cell_index is not an integer naming a cell of the notebook.' },
  notebook_cell_error: { status: 400, meaning: 'A code or ingest cell threw or did not compile; details carry cell_index and the line within the cell.' },
  notebook_queue_full: { status: 429, meaning: 'The caller already has notebooks.max_pending_runs cell runs waiting or running; nothing was queued. Other users are not affected.' },
  notebook_route_not_found: { status: 404, meaning: 'A POST under /api/notebooks/ that is not <file>.dpnb/execute.' },
  invalid_script_for_notebook: { status: 400, meaning: 'dp notebook from-script: the file is not a .ts, .js or .mjs script, or its cell markers are malformed.' },
});
