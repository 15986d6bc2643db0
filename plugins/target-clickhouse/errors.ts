/** Error codes of the target-clickhouse plugin (generated into docs/errors.md). */
import { defineErrors } from '../../sdk/index.js';

export const errors = defineErrors({
  invalid_target: { status: 400, meaning: "An environment's target is incomplete (a clickhouse target needs url) or of an unknown type." },
  target_error: { status: 400, meaning: 'The ClickHouse server refused a statement; the message is its first line, without its stack trace.' },
  unsupported_on_target: {
    status: 400,
    meaning: "A model uses what the target cannot run (a construct the server's version lacks, a table function reading local files, materialized=scd2), or a check (assertion, contract) is refused by the server; the message names the model or the check and the construct.",
  },
  untranslatable_sql: { status: 400, meaning: "A model's DuckDB SQL cannot be transpiled to ClickHouse; the message names the model." },
  run_locked: { status: 409, meaning: 'Another dp process holds the run lock of this ClickHouse database (its lease has not ended); the message names the holder.' },
  not_on_target: { status: 400, meaning: 'A DuckDB-only feature (versioning, backups, notebook TypeScript cells, query explain, a connector sync in file_tracking mode) was used while the active environment builds into a ClickHouse target.' },
  query_cancelled: { status: 400, meaning: 'A statement on the target was cancelled (shutdown, maintenance or an aborted run) before or while it ran.' },
});
