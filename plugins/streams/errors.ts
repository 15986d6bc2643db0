/** Error codes of the streams plugin (generated into docs/errors.md). */
import { defineErrors } from '../../sdk/index.js';

export const errors = defineErrors({
  stream_not_found: { status: 404, meaning: 'No stream with that name in project.yml.' },
  invalid_stream_target: { status: 400, meaning: 'A stream step names a script, seed or model that does not exist.' },
  invalid_history_limit: { status: 400, meaning: 'limit is not an integer between 1 and 1000.' },
});
