/** Error codes of the ci plugin (generated into docs/errors.md). */
import { defineErrors } from '../../sdk/index.js';

export const errors = defineErrors({
  ci_file_exists: { status: 409, meaning: 'dp ci generate would overwrite an existing workflow or script (pass --force).' },
  ci_invalid_branch: { status: 400, meaning: 'The --base branch name holds characters a git branch name cannot (or starts with -).' },
  ci_database_path_absolute: { status: 400, meaning: "The project's database.path is absolute: the base branch's build would overwrite it, so CI needs a path inside the project." },
});
