/** Error codes of the masking plugin (generated into docs/errors.md). */
import { defineErrors } from '../../sdk/index.js';

export const errors = defineErrors({
  invalid_policy: { status: 400, meaning: 'A masking policy body is missing a field or names an invalid column.' },
  policy_exists: { status: 409, meaning: 'The column already has a masking policy.' },
  preview_role_above_caller: { status: 403, meaning: 'A masking preview asked for a role above the caller’s own.' },
  policy_not_found: { status: 404, meaning: 'No masking policy with this id.' },
  unknown_masking_method: { status: 400, meaning: 'The policy names a masking method no plugin provides.' },
  invalid_method_config: { status: 400, meaning: "A policy's method configuration fails the method's schema." },
  invalid_masking_command: { status: 400, meaning: 'A CREATE/SHOW/DROP MASKING POLICY command sent through /api/query is malformed.' },
  masked_column_in_predicate: { status: 403, meaning: 'The query filters, joins, groups or sorts on a column masked for the caller.' },
  masked_column_in_macro: { status: 403, meaning: 'The query calls a macro that reads a table with columns masked for the caller.' },
  masked_column_unverifiable: { status: 403, meaning: 'A masked column is reached by a statement masking could not check; select it by name.' },
  masking_policies_hidden: { status: 403, meaning: "Reading masking's own tables (they hold the masking seeds) needs the write permission." },
  masked_column_statistics: { status: 403, meaning: 'The query computes statistics (stats()) over a column masked for the caller.' },
  masked_condition_column: { status: 400, meaning: "A conditional policy's condition column is itself masked for the roles it binds." },
  masking_keys_unavailable: { status: 500, meaning: 'The keys of the keyed masking methods could not be read or written, so masking fails closed.' },
  masking_unverified: { status: 500, meaning: 'Masking could not confirm its rewrite of the query, so the query was not run (a bug to report).' },
  duplicate_masking_method: { status: 500, meaning: 'Two plugins contribute a masking method with the same name (start-up error).' },
  declassification_reason_required: { status: 400, meaning: "A policy with method 'none' (a declassification) needs a reason." },
  declassification_admin_only: { status: 403, meaning: "Only an admin may declassify a column (a policy with method 'none')." },
  invalid_masking_method: { status: 500, meaning: 'A contributed masking method is malformed (start-up error).' },
});
