/** Error codes of the connectors-cloud plugin (generated into docs/errors.md). */
import { defineErrors } from '../../sdk/index.js';

export const errors = defineErrors({
  remote_unreachable: { status: 502, meaning: 'A remote source (HTTP API, object store, warehouse) could not be reached: connection refused, host not found, timed out.' },
  remote_auth_failed: { status: 502, meaning: 'A remote source refused the configured credentials.' },
  remote_request_failed: { status: 502, meaning: 'A remote source answered an error (its status and message are in the details, never a secret).' },
  remote_response_invalid: { status: 502, meaning: "A remote source's answer is not what its connector type expects (not JSON, no records at the configured path, an unreadable file)." },
  remote_schema_changed: { status: 502, meaning: 'A value read from a remote source does not fit the column type discovered earlier in the same read.' },
  source_table_not_found: { status: 404, meaning: "A connector read names a table (resource, sheet, folder, warehouse table) the source does not have." },
  connector_param_invalid: { status: 400, meaning: "A connector's parameters are missing a required value or hold an unusable one (the field is named)." },
});
