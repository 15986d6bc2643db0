/** Error codes of the quality plugin (generated into docs/errors.md); model_not_found and table_not_found are shared (sdk). */
import { defineErrors } from '../../sdk/index.js';

export const errors = defineErrors({
  ambiguous_model: { status: 400, meaning: 'A bare model name matches models in several schemas; name it schema.name.' },
  model_not_built: { status: 404, meaning: 'The model exists as a file but not in the warehouse; run a transform first.' },
  contract_not_found: { status: 404, meaning: 'No contract has that name or checks a model of that name.' },
  invalid_hours: { status: 400, meaning: '--hours is not a positive number.' },
  invalid_url: { status: 400, meaning: 'An alert webhook URL is not http or https.' },
});
