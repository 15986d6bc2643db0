/** HTTP routes of the versioning plugin (SPEC.md "Versioning and snapshots", "Backup"). */
import { clientGone, type JsonSchema, type PluginContext } from '../../sdk/index.js';
import type { BackupStore } from './backups.js';
import { diffVersions } from './diff.js';
import type { SnapshotStore } from './snapshots.js';
import type { VersionStore } from './versions.js';

const versionParam = (name: string): JsonSchema => ({ type: 'object', required: [name], properties: { [name]: { type: 'string', minLength: 1, maxLength: 200 } } });
const keepBody: JsonSchema = { type: 'object', required: ['keep'], additionalProperties: false, properties: { keep: { type: 'integer' } } };
const pathBody: JsonSchema = { type: 'object', required: ['path'], additionalProperties: false, properties: { path: { type: 'string', minLength: 1, maxLength: 1000 } } };

export function registerRoutes(ctx: PluginContext, stores: { versions: VersionStore; snapshots: SnapshotStore; backups: BackupStore }): void {
  const { versions, snapshots, backups } = stores;

  // ---------------------------------------------------------------- snapshots
  ctx.route<{ name?: string }>({
    method: 'POST',
    url: '/api/snapshot',
    permission: 'write',
    summary: 'Record a snapshot: file hashes, table row counts and schema hashes, combined hash',
    schema: { body: { type: ['object', 'null'], additionalProperties: false, properties: { name: { type: 'string' } } } },
    handler: (req) => snapshots.create(req.body?.name ?? null),
  });
  ctx.route({ method: 'GET', url: '/api/snapshots', permission: 'read', summary: 'Snapshots, newest first', handler: () => snapshots.list() });
  ctx.route<unknown, unknown, { name: string }>({
    method: 'GET',
    url: '/api/snapshots/:name/diff',
    permission: 'read',
    summary: 'File and table changes since a snapshot',
    schema: { params: versionParam('name') },
    handler: (req) => snapshots.diff(req.params.name),
  });
  ctx.route<unknown, unknown, { name: string }>({
    method: 'DELETE',
    url: '/api/snapshots/:name',
    permission: 'write',
    summary: 'Delete a snapshot',
    schema: { params: versionParam('name') },
    handler: (req) => snapshots.delete(req.params.name),
  });

  // ---------------------------------------------------------------- versions
  ctx.route({ method: 'GET', url: '/api/versions', permission: 'read', summary: 'Version records, newest first', handler: () => versions.list() });
  ctx.route<{ description?: string } | null>({
    method: 'POST',
    url: '/api/versions',
    permission: 'write',
    summary: 'Write every table to _snapshots/<version_id>/ as Parquet',
    schema: { body: { type: ['object', 'null'], additionalProperties: false, properties: { description: { type: 'string', maxLength: 1000 } } } },
    handler: (req) => versions.create({ description: req.body?.description ?? null, trigger: 'manual' }),
  });
  ctx.route<{ keep: number }>({
    method: 'POST',
    url: '/api/versions/cleanup',
    permission: 'write',
    summary: 'Delete old versions, keeping the newest N',
    schema: { body: keepBody },
    handler: (req) => versions.cleanup(req.body.keep),
  });
  ctx.route<unknown, unknown, { table_name: string }>({
    method: 'GET',
    url: '/api/versions/timeline/:table_name',
    permission: 'read',
    summary: "A table's row count and columns across versions, newest first",
    schema: { params: versionParam('table_name') },
    handler: (req) => versions.timeline(req.params.table_name),
  });
  ctx.route<unknown, unknown, { version_id: string }>({
    method: 'GET',
    url: '/api/versions/:version_id',
    permission: 'read',
    summary: 'A version with per-table row counts and column schemas',
    schema: { params: versionParam('version_id') },
    handler: (req) => versions.show(req.params.version_id),
  });
  ctx.route<unknown, unknown, { version_id: string }>({
    method: 'DELETE',
    url: '/api/versions/:version_id',
    permission: 'write',
    summary: 'Delete a version (its folder and record)',
    schema: { params: versionParam('version_id') },
    handler: (req) => versions.delete(req.params.version_id),
  });
  ctx.route<unknown, { to_version?: string }, { from_version: string }>({
    method: 'GET',
    url: '/api/versions/:from_version/diff',
    permission: 'read',
    summary: 'Per-table changes from a version to another (default: the current tables)',
    schema: { params: versionParam('from_version'), querystring: { type: 'object', properties: { to_version: { type: 'string', minLength: 1, maxLength: 200 } } } },
    // Whole-table comparisons: under the caller's role deadline, in a query slot, stopped when the client leaves.
    handler: (req, reply) =>
      ctx.queries.withDeadline({ caller: req.caller, purpose: 'version_diff', signal: clientGone(reply) }, (c) => diffVersions(c, versions, req.params.from_version, req.query.to_version ?? null)),
  });
  ctx.route<{ tables?: string[] } | null, unknown, { version_id: string }>({
    method: 'POST',
    url: '/api/versions/:version_id/restore',
    permission: 'write',
    summary: "Replace tables with a version's data (all, or `tables`); a `restore` version is written first",
    schema: {
      params: versionParam('version_id'),
      body: { type: ['object', 'null'], additionalProperties: false, properties: { tables: { type: 'array', items: { type: 'string', minLength: 1 }, maxItems: 10000 } } },
    },
    handler: (req) => versions.restore(req.params.version_id, req.body?.tables),
  });

  // ---------------------------------------------------------------- backups
  ctx.route<{ no_verify?: boolean; note?: string; keep?: number } | null>({
    method: 'POST',
    url: '/api/backup',
    permission: 'write',
    summary: 'Back up the database file to _backups/ (checkpoint, copy, SHA-256, verify)',
    schema: {
      body: {
        type: ['object', 'null'],
        additionalProperties: false,
        properties: { no_verify: { type: 'boolean' }, note: { type: 'string', maxLength: 1000 }, keep: { type: 'integer' } },
      },
    },
    handler: (req) => backups.create({ no_verify: req.body?.no_verify, note: req.body?.note ?? null, keep: req.body?.keep }),
  });
  ctx.route({ method: 'GET', url: '/api/backups', permission: 'read', summary: 'Backups this database recorded, newest first', handler: () => backups.list() });
  ctx.route<{ path: string }>({
    method: 'POST',
    url: '/api/backup/verify',
    permission: 'write',
    summary: 'Re-hash a backup against its stored SHA-256 and open it read-only',
    schema: { body: pathBody },
    handler: (req) => backups.verify(req.body.path),
  });
  ctx.route<{ path: string }>({
    method: 'POST',
    url: '/api/backup/restore',
    permission: 'write',
    summary: 'Verify a backup, then replace the database file with it through maintenance',
    schema: { body: pathBody },
    handler: (req) => backups.restore(req.body.path),
  });
  ctx.route<{ keep: number }>({
    method: 'POST',
    url: '/api/backup/cleanup',
    permission: 'write',
    summary: 'Delete old backups, keeping the newest N',
    schema: { body: keepBody },
    handler: (req) => backups.cleanup(req.body.keep),
  });
}
