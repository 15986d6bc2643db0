/** Error codes of the models plugin (generated into docs/errors.md); model_not_found, file_not_found and invalid_sql are shared (sdk). */
import { defineErrors } from '../../sdk/index.js';

export const errors = defineErrors({
  duplicate_model: { status: 409, meaning: 'Two model files (or a new model and an existing one) share a name; names are unique across schemas.' },
  model_exists: { status: 409, meaning: 'The model file to create already exists (pass force to overwrite).' },
  dependency_cycle: { status: 400, meaning: 'Models depend on each other in a cycle; the message lists the files.' },
  unknown_reference: { status: 400, meaning: 'A model references a relation that is neither a model, a seed, a source nor a table.' },
  unknown_model: { status: 400, meaning: 'A selector names no model.' },
  unknown_seed: { status: 400, meaning: 'No seed file with that name in seeds/.' },
  invalid_directive: { status: 400, meaning: 'A -- @config line is not key=value pairs, or a value is not allowed.' },
  invalid_materialization: { status: 400, meaning: "A model file's materialized is not 'table' or 'view'." },
  invalid_materialized: { status: 400, meaning: "The requested materialized is not 'table' or 'view'." },
  invalid_model_name: { status: 400, meaning: 'A model file name is not letters, digits and underscores (not starting with a digit).' },
  invalid_model_schema: { status: 400, meaning: 'A model folder (its schema) is not letters, digits and underscores.' },
  invalid_seed_name: { status: 400, meaning: 'A seed file name is not letters, digits and underscores.' },
  invalid_name: { status: 400, meaning: 'A new model name is not letters, digits and underscores (starting with a letter or _).' },
  invalid_schema_name: { status: 400, meaning: 'A new model schema is not letters, digits and underscores (starting with a letter or _).' },
  invalid_schema: { status: 400, meaning: 'The --schema option is not a valid schema name.' },
  invalid_target_schema: { status: 400, meaning: 'target_schema is not a valid schema name.' },
  no_sql_cell: { status: 400, meaning: 'The notebook to promote has no non-empty SQL cell.' },
  invalid_lint_dialect: { status: 400, meaning: 'lint.dialect names a dialect the formatter does not know.' },
  invalid_lint_option: { status: 400, meaning: 'A lint option has a value outside its allowed set.' },
  unknown_lint_rule: { status: 400, meaning: 'lint.rules names a rule that does not exist.' },
  invalid_branch: { status: 400, meaning: 'The --against value is not a valid git branch name.' },
  unknown_branch: { status: 400, meaning: 'git knows no branch or commit with that name.' },
  duplicate_model_view_section: { status: 500, meaning: 'Two plugins contribute a models.view section with the same name (start-up error).' },
  not_a_git_repository: { status: 400, meaning: '--against needs the project inside a git repository.' },
});
