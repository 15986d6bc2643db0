/** Error codes of the files plugin (generated into docs/errors.md). */
import { defineErrors } from '../../sdk/index.js';

export const errors = defineErrors({
  invalid_path: { status: 400, meaning: 'No file path was given after /api/files/.' },
  protected_path: { status: 400, meaning: 'The path is never read or written through the API (.env, databases, .git, node_modules, temp files).' },
  extension_not_allowed: { status: 400, meaning: 'The file extension is not on the list of saveable extensions.' },
  file_too_large: { status: 400, meaning: 'The file is larger than 5 MiB, the most the API reads, or a save (files API, collaboration) would make it so; nothing was written.' },
  is_directory: { status: 400, meaning: 'The path is a folder, not a file.' },
  path_too_long: { status: 400, meaning: 'The file path is longer than the API accepts.' },
  name_too_long: { status: 400, meaning: 'A file or folder name in the path is longer than the file system or the API accepts.' },
  symlink_loop: { status: 400, meaning: 'The path goes through too many symbolic links.' },
  file_not_accessible: { status: 403, meaning: 'The server process may not read or write the file (file-system permissions).' },
  masked_data_file: { status: 403, meaning: 'The data file (a seed or a CSV/TSV/text file) holds a column masked for the caller.' },
  file_conflict: { status: 409, meaning: 'The file changed on disk since the caller read it (its base_sha256 no longer matches): reload and apply the change again.' },
  file_system_error: { status: 500, meaning: 'The file system refused the operation for another reason (the message names the error code).' },
});
