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
  nesting_too_deep: { status: 400, meaning: 'A query or an upload nests values or types (lists, structs, JSON arrays and objects, JSON structures given to json_transform/from_json) deeper than the engine is trusted with; details give the depth found and the limit.' },
  workbook_too_large: { status: 413, meaning: 'An .xlsx would expand past what a spreadsheet read may take (all parts uncompressed, one part held in memory such as the shared-string table, or cells in the sheet); details name the part, the size and the limit.' },
  workbook_unreadable: { status: 400, meaning: "An .xlsx is not a well-formed zip: its directory does not read, its entries overlap or leave unlisted data between them, or a part does not inflate." },
});
