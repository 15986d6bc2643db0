/** Error codes of the connectors plugin (generated into docs/errors.md). */
import { defineErrors } from '../../sdk/index.js';

export const errors = defineErrors({
  unknown_connector_type: { status: 404, meaning: 'No installed plugin provides this connector type (GET /api/connectors/available lists them).' },
  invalid_connector_params: { status: 400, meaning: "A connector's parameters are missing a field or give one of the wrong type; details name the field." },
  invalid_connector_request: { status: 400, meaning: 'A connectors request body is malformed (connection name, tables, target schema, schedule); details name the field.' },
  connection_failed: { status: 400, meaning: 'The source could not be reached or refused the login; the message gives the cause (refused, host not found, authentication failed, timeout).' },
  connector_exists: { status: 409, meaning: 'project.yml already has a connection or connector with this name.' },
  connector_not_found: { status: 404, meaning: 'project.yml has no connector with this name.' },
  connector_table_not_found: { status: 400, meaning: 'A requested table is not among the tables the source has (discover lists them).' },
  invalid_cdc_config: { status: 400, meaning: "A connector's table options are inconsistent (high_watermark without cdc_column, a mode the type does not support)." },
  unresolved_variable: { status: 400, meaning: "A connection parameter references ${VAR} that .env does not define." },
  duplicate_connector_type: { status: 500, meaning: 'Two plugins contribute a connector type with the same identifier (start-up error).' },
  invalid_connector_type: { status: 500, meaning: 'A contributed connector type is malformed (start-up error).' },
  invalid_webhook_payload: { status: 400, meaning: 'A webhook body is not JSON; nothing was stored.' },
  invalid_import: { status: 400, meaning: 'An import upload is missing its file, has an unsupported format, or names an invalid table or schema.' },
  import_parse_failed: { status: 400, meaning: 'The uploaded file could not be read as the format its name says.' },
  import_table_exists: { status: 409, meaning: 'The import target table exists and the request did not ask to replace or append.' },
});
