/** Error codes of the tables plugin (generated into docs/errors.md): only the shared table_not_found (sdk). */
import { defineErrors } from '../../sdk/index.js';

export const errors = defineErrors({});
