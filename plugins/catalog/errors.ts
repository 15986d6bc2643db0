/** Error codes of the catalog plugin (generated into docs/errors.md). */
import { defineErrors } from '../../sdk/index.js';

export const errors = defineErrors({
  wiki_page_not_found: { status: 404, meaning: 'No wiki page has that slug (GET /api/wiki lists them).' },
  git_failed: { status: 500, meaning: 'The git command failed inside a repository for a reason other than a missing repository; the message holds its first error line.' },
});
