/** Error codes of the streams plugin (generated into docs/errors.md). */
import { defineErrors } from '../../sdk/index.js';

export const errors = defineErrors({
  stream_not_found: { status: 404, meaning: 'No stream with that name in project.yml.' },
  invalid_stream_target: { status: 400, meaning: 'A stream step names a script, seed or model that does not exist.' },
  run_not_found: { status: 404, meaning: 'No stream or script run with that run_id in the run history (GET /api/history/:run_id).' },
  nothing_to_rerun: { status: 400, meaning: 'The run is not a stream run with a failed, cancelled or interrupted step to run again (POST /api/history/:run_id/rerun-failed).' },
  stream_changed_since_run: { status: 409, meaning: "The stream's steps were edited since the run: its failed step is no longer the same step; start the stream instead." },
  invalid_history_limit: { status: 400, meaning: 'limit is not an integer between 1 and 1000.' },
});
