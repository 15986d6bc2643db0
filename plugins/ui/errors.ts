/** Error codes of the ui plugin (generated into docs/errors.md). */
import { defineErrors } from '../../sdk/index.js';

export const errors = defineErrors({
  ui_page_conflict: { status: 500, meaning: 'Two enabled plugins contribute a web UI page at the same path.' },
  ui_page_entry_missing: { status: 500, meaning: 'A prebuilt page module named in contributes.ui does not exist in its plugin folder.' },
  ui_module_not_found: { status: 404, meaning: 'No prebuilt page file of an enabled plugin at that path.' },
});
