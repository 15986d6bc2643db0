/** CLI commands of the versioning plugin: snapshot, diff --snapshot, versions …, backup … */
import type { CliIO, PluginContext } from '../../sdk/index.js';
import type { BackupStore } from './backups.js';
import type { DiffResult, SnapshotDiff } from './api-types.js';
import { diffVersions } from './diff.js';
import type { SnapshotStore } from './snapshots.js';
import type { VersionStore } from './versions.js';

const list = (v: unknown): string[] | undefined => (v === undefined ? undefined : (Array.isArray(v) ? v : [v]).flatMap((x) => String(x).split(',')).filter(Boolean));

function printSnapshotDiff(d: SnapshotDiff, io: CliIO): void {
  io.out(`Since snapshot ${d.snapshot} (${d.created_at}): ${d.changed ? 'changed' : 'no changes'}`);
  const files = [...d.files.added.map((p) => ({ file: p, change: 'added' })), ...d.files.modified.map((p) => ({ file: p, change: 'modified' })), ...d.files.removed.map((p) => ({ file: p, change: 'removed' }))];
  if (files.length) io.table(files, ['file', 'change']);
  if (d.tables.length) {
    io.table(
      d.tables.map((t) => ({ table: t.table, status: t.status, rows_before: t.rows_before ?? '', rows_after: t.rows_after ?? '', schema_changed: t.schema_changed ? 'yes' : '' })),
      ['table', 'status', 'rows_before', 'rows_after', 'schema_changed'],
    );
  }
}

function printVersionDiff(d: DiffResult, io: CliIO): void {
  io.out(`${d.from_version} → ${d.to_version}: ${d.tables_compared} tables compared, ${d.changes.length} changed`);
  if (!d.changes.length) return;
  io.table(
    d.changes.map((c) => ({
      table: c.table,
      change: c.change,
      rows_before: c.rows_before ?? '',
      rows_after: c.rows_after ?? c.rows ?? '',
      added: c.rows_added ?? '',
      removed: c.rows_removed ?? '',
      changed: c.rows_changed ?? (c.compared_by === 'row' ? 'n/a' : ''),
      by: c.compared_by ?? '',
      columns: [...(c.columns_added ?? []).map((x) => `+${x}`), ...(c.columns_removed ?? []).map((x) => `-${x}`), ...(c.columns_type_changed ?? []).map((x) => `~${x}`)].join(' '),
    })),
    ['table', 'change', 'rows_before', 'rows_after', 'added', 'removed', 'changed', 'by', 'columns'],
  );
}

export function registerCommands(ctx: PluginContext, stores: { versions: VersionStore; snapshots: SnapshotStore; backups: BackupStore }): void {
  const { versions, snapshots, backups } = stores;
  const show = (io: CliIO, value: unknown, text: () => void) => (io.wantsJson ? io.json(value) : text());

  ctx.command('snapshot', async (args, io) => {
    if (args.list) {
      const rows = await snapshots.list();
      return show(io, rows, () => (rows.length ? io.table(rows as unknown as Array<Record<string, unknown>>) : io.out('No snapshots')));
    }
    if (args.delete !== undefined) {
      const r = await snapshots.delete(String(args.delete));
      return show(io, r, () => io.out(`Snapshot ${r.deleted} deleted`));
    }
    const s = await snapshots.create(args.name ? String(args.name) : null);
    show(io, s, () => io.out(`Snapshot ${s.name}: ${s.file_count} files, ${s.table_count} tables, hash ${s.project_hash}`));
  });

  ctx.command('diff', async (args, io) => {
    const d = await snapshots.diff(String(args.snapshot));
    show(io, d, () => printSnapshotDiff(d, io));
  });

  ctx.command('versions list', async (_args, io) => {
    const rows = await versions.list();
    show(io, rows, () => (rows.length ? io.table(rows as unknown as Array<Record<string, unknown>>, ['version_id', 'created_at', 'trigger', 'table_count', 'total_rows', 'size_bytes', 'description']) : io.out('No versions')));
  });

  ctx.command('versions create', async (args, io) => {
    const v = await versions.create({
      description: args.description ? String(args.description) : null,
      trigger: 'manual',
      onTable: (table, rows, i, n) => io.progress(`[${i}/${n}] ${table}: ${rows} rows`),
    });
    show(io, v, () => io.out(`Version ${v.version_id}: ${v.table_count} tables, ${v.total_rows} rows, ${v.size_bytes} bytes`));
  });

  ctx.command('versions show', async (args, io) => {
    const v = await versions.show(String(args.version_id));
    show(io, v, () => {
      io.out(`${v.version_id} (${v.trigger}, ${v.created_at})${v.description ? `: ${v.description}` : ''}`);
      io.table(v.tables.map((t) => ({ table: t.table, rows: t.row_count, columns: t.columns.map((c) => `${c.name} ${c.type}`).join(', '), key: t.key.join(', ') })), ['table', 'rows', 'key', 'columns']);
    });
  });

  ctx.command('versions diff', async (args, io) => {
    const d = await diffVersions(ctx.db, versions, String(args.from), args.to ? String(args.to) : null);
    show(io, d, () => printVersionDiff(d, io));
  });

  ctx.command('versions restore', async (args, io) => {
    io.progress(`restoring ${args.version_id} (a 'restore' version of the current data is written first)`);
    const r = await versions.restore(String(args.version_id), list(args.tables));
    show(io, r, () => {
      io.out(`Restored from ${r.version_id}; the data before is version ${r.restore_version}`);
      io.table(r.tables.map((t) => ({ table: t.table, status: t.status, rows: t.rows ?? '', note: t.error ?? t.reason ?? '' })), ['table', 'status', 'rows', 'note']);
      for (const n of r.notes) io.out(`${n.table} (${n.plugin}): ${n.message}`);
    });
    return r.status === 'success' ? 0 : 1;
  });

  ctx.command('versions timeline', async (args, io) => {
    const rows = await versions.timeline(String(args.table));
    show(io, rows, () =>
      rows.length
        ? io.table(rows.map((r) => ({ version_id: r.version_id, created_at: r.created_at, rows: r.row_count, columns: r.columns.map((c) => c.name).join(', ') })), ['version_id', 'created_at', 'rows', 'columns'])
        : io.out(`No version holds ${args.table}`),
    );
  });

  ctx.command('versions cleanup', async (args, io) => {
    const r = await versions.cleanup(args.keep);
    show(io, r, () => io.out(`Deleted ${r.deleted.length} versions${r.deleted.length ? `: ${r.deleted.join(', ')}` : ''}; ${r.kept} kept`));
  });

  ctx.command('versions delete', async (args, io) => {
    const r = await versions.delete(String(args.version_id));
    show(io, r, () => io.out(`Version ${r.deleted} deleted`));
  });

  ctx.command('backup', async (args, io) => {
    const b = await backups.create({ note: args.note ? String(args.note) : null, keep: args.keep, no_verify: args.verify === false, progress: (t) => io.progress(t) });
    show(io, b, () => io.out(`Backup ${b.path}: ${b.size_bytes} bytes, sha256 ${b.sha256}${b.verified ? ', verified' : ', not verified'}`));
  });

  ctx.command('backups', async (_args, io) => {
    const rows = await backups.list();
    show(io, rows, () => (rows.length ? io.table(rows as unknown as Array<Record<string, unknown>>, ['path', 'timestamp', 'size_bytes', 'kind', 'note', 'sha256']) : io.out('No backups')));
  });

  ctx.command('backup-verify', async (args, io) => {
    const v = await backups.verify(String(args.path));
    show(io, v, () => io.out(v.valid ? `${v.path}: valid (checksum matches, opens read-only with ${v.tables} tables)` : `${v.path}: INVALID: ${v.error}`));
    return v.valid ? 0 : 1;
  });

  ctx.command('backup-restore', async (args, io) => {
    const r = await backups.restore(String(args.path), (t) => io.progress(t));
    show(io, r, () => io.out(`Restored ${r.restored}; the replaced database is kept as ${r.replaced_backup.path}`));
  });

  ctx.command('backup-cleanup', async (args, io) => {
    const r = await backups.cleanup(args.keep);
    show(io, r, () =>
      io.out(`Deleted ${r.deleted.length} backups${r.deleted.length ? `: ${r.deleted.join(', ')}` : ''}; kept ${r.kept}${r.kept ? `: ${r.kept_backups.join(', ')}` : ''}`),
    );
  });
}
