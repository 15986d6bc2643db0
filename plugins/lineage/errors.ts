/** Error codes of the lineage plugin (generated into docs/errors.md); model_not_found is shared (sdk). */
import { defineErrors } from '../../sdk/index.js';

export const errors = defineErrors({
  column_not_found: { status: 404, meaning: 'The model or table has no column with that name.' },
});
