/** Error codes of the files plugin (generated into docs/errors.md). */
import { defineErrors } from '../../sdk/index.js';

export const errors = defineErrors({
  invalid_path: { status: 400, meaning: 'No file path was given after /api/files/.' },
  protected_path: { status: 400, meaning: 'The path is never read or written through the API (.env, databases, .git, node_modules, temp files).' },
  extension_not_allowed: { status: 400, meaning: 'The file extension is not on the list of saveable extensions.' },
  file_too_large: { status: 400, meaning: 'The file is larger than 5 MiB, the most the API reads.' },
  is_directory: { status: 400, meaning: 'The path is a folder, not a file.' },
});
