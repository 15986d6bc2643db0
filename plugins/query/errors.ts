/** Error codes of the query plugin (generated into docs/errors.md); the query runner's codes are the kernel's. */
import { defineErrors } from '../../sdk/index.js';

export const errors = defineErrors({
  invalid_param: { status: 400, meaning: '--param is not name=value.' },
  invalid_param_name: { status: 400, meaning: 'A query parameter name is not an identifier.' },
});
