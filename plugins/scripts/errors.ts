/** Error codes of the scripts plugin (generated into docs/errors.md); file_not_found and invalid_notebook are shared (sdk). */
import { defineErrors } from '../../sdk/index.js';

export const errors = defineErrors({
  script_path_refused: { status: 400, meaning: 'The script path is not inside ingest/, export/ or notebooks/ of the project (symlinks resolved); nothing ran.' },
  unsupported_script_language: { status: 400, meaning: 'The script is not .ts, .js, .mjs or .dpnb (a .py file can be saved but not run); the message lists the supported kinds.' },
  script_compile_error: { status: 400, meaning: 'The script does not compile (esbuild); the message names the file and line.' },
  invalid_script: { status: 400, meaning: 'The script module has no default-exported function `async (ctx) => {}`.' },
});
