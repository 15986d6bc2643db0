/** Error codes of the versioning plugin (generated into docs/errors.md). */
import { defineErrors } from '../../sdk/index.js';

export const errors = defineErrors({
  invalid_snapshot_name: { status: 400, meaning: 'A snapshot name is empty, longer than 100 characters, or has characters outside letters, digits, _ . - (or is . or ..).' },
  snapshot_exists: { status: 409, meaning: 'A snapshot with that name already exists.' },
  snapshot_not_found: { status: 404, meaning: 'No snapshot with that name.' },
  invalid_version_id: { status: 400, meaning: 'A version id is not of the form v<n>-<YYYYMMDD>-<HHMMSS> (a path such as ../x is refused here).' },
  version_not_found: { status: 404, meaning: 'No version with that id.' },
  version_path_outside: { status: 400, meaning: "A path a version's manifest names (or its folder, through a link) lies outside _snapshots/: refused before anything is read or deleted." },
  version_not_trusted: { status: 409, meaning: "A version file's bytes differ from the SHA-256 dp recorded when it wrote the version (or the version was recorded before dp kept checksums): it is not read." },
  version_incomplete: { status: 409, meaning: "A version's folder lacks a Parquet file its manifest lists (deleted or damaged by hand)." },
  ambiguous_table: { status: 400, meaning: 'A bare table name matches tables in several schemas; details list the candidates to choose from (schema.table).' },
  table_not_in_version: { status: 400, meaning: 'A restore names a table the version does not hold; details name it.' },
  invalid_keep: { status: 400, meaning: "'keep' is not an integer of at least 1." },
  no_database_file: { status: 400, meaning: 'The database is in memory: there is no file to back up or restore.' },
  backup_path_outside: { status: 400, meaning: 'A backup path lies outside the _backups/ folder (.., absolute elsewhere, or a link out).' },
  backup_not_found: { status: 404, meaning: 'No backup at that path in the backup manifest.' },
  backup_verify_failed: { status: 409, meaning: 'A backup copy no longer matches its stored SHA-256 or does not open read-only: it is not restored.' },
});
