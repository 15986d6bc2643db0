/** Error codes shared by the sdk's helpers and several plugins (one meaning each; see docs/errors.md). */
import { defineErrors } from './errors.js';

export const errors = defineErrors({
  insufficient_role: { status: 403, meaning: "The caller's role lacks the permission the route or action needs; details name the required permission and role." },
  invalid_sql: { status: 400, meaning: 'The SQL text is missing, empty, or not the single statement the endpoint expects.' },
  invalid_yaml: { status: 400, meaning: 'A YAML file or body does not parse; the message names the file and line.' },
  invalid_notebook: { status: 400, meaning: 'A .dpnb file is not JSON with a "cells" list.' },
  file_not_found: { status: 404, meaning: 'No project file at the given path.' },
  model_not_found: { status: 404, meaning: 'No model with the given name.' },
  no_space_left: { status: 507, meaning: 'The disk filled while dp was writing (a version, a backup, a model build): what the failed operation wrote was removed; free some space and retry. The message names no path.' },
  table_not_found: { status: 404, meaning: 'No table or view with the given schema and name in the warehouse.' },
});
