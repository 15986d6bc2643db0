/** Error codes of notebook collaboration (merged into the notebooks plugin's catalogue, generated into docs/errors.md). */
import { defineErrors } from '../../../sdk/index.js';

export const collaborationErrors = defineErrors({
  doc_required: { status: 400, meaning: '/ws/collaborate or the collaboration save was called without `doc` (a project-relative file path).' },
  document_not_open: { status: 404, meaning: 'No collaboration session holds that file (nobody joined it, or it was released after being idle); nothing was saved.' },
  awareness_update_too_large: { status: 413, meaning: 'A collaboration socket sent an awareness message (cursor, name) over 8 KiB; the socket is closed with 4413.' },
  invalid_collaboration_message: { status: 400, meaning: 'A collaboration socket sent a message that is not the Yjs sync/awareness framing; the socket is closed with 4400.' },
});
