/**
 * Versioning: versions (create, diff against now or another version, restore with confirmation,
 * per-table timeline, cleanup), metadata snapshots with their diff, and backups with verify and
 * restore. Every action goes through the plugin's API; the role only hides buttons.
 */
import { useState, type ReactNode } from 'react';
import { api, Badge, Dialog, Empty, ErrorBox, Field, Loading, PageHeader, seg, StatusBadge, Table, Tabs, useApi, useCan, usePersistentState, type PageProps } from '@dp/ui';
import { LineChart } from '@dp/ui/chart';
import type { BackupEntry, BackupRestoreResult, DiffResult, RestoreResult, SnapshotDiff, SnapshotSummary, TimelineEntry, VerifyResult, VersionDetail, VersionRecord } from '../api-types';

type TabKey = 'versions' | 'snapshots' | 'backups';

const bytes = (n: number) => (n >= 1e9 ? `${(n / 1e9).toFixed(1)} GB` : n >= 1e6 ? `${(n / 1e6).toFixed(1)} MB` : n >= 1e3 ? `${(n / 1e3).toFixed(1)} kB` : `${n} B`);
const when = (iso: string) => new Date(iso).toLocaleString();

/**
 * Runs the tab's actions: `busy` names the one under way, its error is kept for the ErrorBox,
 * and `tick` moves after each success so the lists read again. `onStart` clears what the
 * previous action left (a message).
 */
function useActionRunner(onStart?: () => void) {
  const [tick, setTick] = useState(0);
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const act = async (label: string, fn: () => Promise<unknown>) => {
    setBusy(label);
    setError(null);
    onStart?.();
    try {
      await fn();
      setTick((t) => t + 1);
    } catch (e) {
      setError(e);
    } finally {
      setBusy(null);
    }
  };
  return { tick, busy, error, act };
}

/** "Keep newest [N] Clean up": deletes all but the newest N (of versions or backups). */
function CleanupControls({ what, canWrite, busy, onCleanup }: { what: 'Versions' | 'Backups'; canWrite: boolean; busy: string | null; onCleanup: (keep: number) => void }) {
  const [keep, setKeep] = useState(5);
  return (
    <>
      <span className="dp-muted">Keep newest</span>
      <input type="number" min={1} aria-label={`${what} to keep`} value={keep} onChange={(e) => setKeep(Number(e.target.value))} style={{ width: 70 }} disabled={!canWrite} />
      <button type="button" className="dp-btn" title={!canWrite ? 'Needs the editor role' : busy !== null ? 'Another action is running' : 'Delete all but the newest'} disabled={!canWrite || busy !== null} onClick={() => onCleanup(keep)}>
        Clean up
      </button>
      {busy ? <span className="dp-muted">Working ({busy})…</span> : null}
    </>
  );
}

/** A dialog that asks before a destructive action: Cancel, or the red button that runs it. */
function ConfirmDialog({ title, confirmLabel, confirmDisabled, onConfirm, onClose, children }: { title: string; confirmLabel: string; confirmDisabled?: boolean; onConfirm: () => void; onClose: () => void; children: ReactNode }) {
  return (
    <Dialog
      open
      title={title}
      onClose={onClose}
      footer={
        <>
          <button type="button" className="dp-btn" onClick={onClose}>
            Cancel
          </button>
          <button type="button" className="dp-btn dp-btn-danger" title={confirmDisabled ? 'Choose what to restore first' : undefined} disabled={confirmDisabled} onClick={onConfirm}>
            {confirmLabel}
          </button>
        </>
      }
    >
      {children}
    </Dialog>
  );
}

export default function VersioningPage({ page }: PageProps) {
  const [tab, setTab] = usePersistentState<TabKey>('versioning.tab', 'versions');
  return (
    <div className="dp-col">
      <PageHeader title={page.title} subtitle="Data versions as Parquet, metadata snapshots and database backups" />
      <Tabs<TabKey>
        tabs={[
          { key: 'versions', label: 'Versions' },
          { key: 'snapshots', label: 'Snapshots' },
          { key: 'backups', label: 'Backups' },
        ]}
        active={tab}
        onChange={setTab}
      />
      {tab === 'versions' ? <Versions /> : null}
      {tab === 'snapshots' ? <Snapshots /> : null}
      {tab === 'backups' ? <Backups /> : null}
    </div>
  );
}

// ------------------------------------------------------------------ versions

function Versions() {
  const { tick, busy, error, act } = useActionRunner();
  const versions = useApi((signal) => api.get<VersionRecord[]>('/api/versions', { signal }), [tick]);
  const canWrite = useCan('write');
  const [description, setDescription] = useState('');
  const [selected, setSelected] = useState<string | null>(null);
  // Bumped on each click of a version: the diff against the current tables is computed again.
  const [looked, setLooked] = useState(0);
  const [diffTarget, setDiffTarget] = useState<string>('current');
  const [restoring, setRestoring] = useState<VersionDetail | null>(null);
  const [restored, setRestored] = useState<RestoreResult | null>(null);

  if (versions.error) return <ErrorBox error={versions.error} onRetry={versions.reload} />;
  if (!versions.data) return <Loading />;
  return (
    <>
      <div className="dp-row">
        <input placeholder="Description (optional)" aria-label="Version description" value={description} onChange={(e) => setDescription(e.target.value)} disabled={!canWrite} />
        <button
          type="button"
          className="dp-btn dp-btn-primary"
          disabled={!canWrite || busy !== null}
          title={canWrite ? 'Write every table to _snapshots/ as Parquet' : 'Needs the editor role'}
          onClick={() => void act('create', async () => {
            const v = await api.post<VersionRecord>('/api/versions', { description: description || undefined });
            setDescription('');
            setSelected(v.version_id);
          })}
        >
          Create version
        </button>
        <CleanupControls what="Versions" canWrite={canWrite} busy={busy} onCleanup={(keep) => void act('cleanup', () => api.post('/api/versions/cleanup', { keep }))} />
      </div>
      <ErrorBox error={error} />
      {restored ? <RestoreReport result={restored} onClose={() => setRestored(null)} /> : null}
      <Table
        rows={versions.data}
        rowKey={(v) => v.version_id}
        onRowClick={(v) => {
          setSelected(v.version_id);
          setLooked((n) => n + 1);
        }}
        empty="No versions yet: create one to keep a copy of every table."
        columns={[
          { key: 'version_id', header: 'Version', render: (v) => <strong>{v.version_id}</strong> },
          { key: 'created_at', header: 'Created', render: (v) => when(v.created_at) },
          { key: 'trigger', header: 'Trigger', render: (v) => <Badge tone={v.trigger === 'restore' ? 'warn' : 'info'}>{v.trigger}</Badge> },
          { key: 'description', header: 'Description', render: (v) => v.description ?? '' },
          { key: 'table_count', header: 'Tables', align: 'right' },
          { key: 'total_rows', header: 'Rows', align: 'right' },
          { key: 'size_bytes', header: 'Size', align: 'right', render: (v) => bytes(v.size_bytes) },
          {
            key: 'actions',
            header: '',
            render: (v) => (
              <span className="dp-row">
                <button
                  type="button"
                  className="dp-btn dp-btn-small"
                  title={!canWrite ? 'Needs the editor role' : busy !== null ? 'Another action is running' : 'Restore this version (asks first)'} disabled={!canWrite || busy !== null}
                  onClick={(e) => {
                    e.stopPropagation();
                    void act('load', async () => setRestoring(await api.get<VersionDetail>(`/api/versions/${seg(v.version_id)}`)));
                  }}
                >
                  Restore…
                </button>
                <button
                  type="button"
                  className="dp-btn dp-btn-small"
                  title={!canWrite ? 'Needs the editor role' : busy !== null ? 'Another action is running' : 'Delete this version'} disabled={!canWrite || busy !== null}
                  onClick={(e) => {
                    e.stopPropagation();
                    if (window.confirm(`Delete version ${v.version_id}?`)) void act('delete', () => api.del(`/api/versions/${seg(v.version_id)}`));
                  }}
                >
                  Delete
                </button>
              </span>
            ),
          },
        ]}
      />
      {selected && versions.data.some((v) => v.version_id === selected) ? (
        <VersionDetails id={selected} versions={versions.data} diffTarget={diffTarget} onDiffTarget={setDiffTarget} refresh={looked + tick} />
      ) : null}
      {restoring ? (
        <RestoreDialog
          version={restoring}
          onClose={() => setRestoring(null)}
          onRestore={(tables) =>
            void act('restore', async () => {
              const r = await api.post<RestoreResult>(`/api/versions/${seg(restoring.version_id)}/restore`, tables ? { tables } : {});
              setRestoring(null);
              setRestored(r);
            })
          }
        />
      ) : null}
    </>
  );
}

function VersionDetails({ id, versions, diffTarget, onDiffTarget, refresh }: { id: string; versions: VersionRecord[]; diffTarget: string; onDiffTarget: (t: string) => void; refresh: number }) {
  const detail = useApi((signal) => api.get<VersionDetail>(`/api/versions/${seg(id)}`, { signal }), [id]);
  const diff = useApi(
    (signal) => api.get<DiffResult>(`/api/versions/${seg(id)}/diff`, { signal, query: { to_version: diffTarget === 'current' ? undefined : diffTarget } }),
    [id, diffTarget, refresh],
  );
  const [table, setTable] = useState<string | null>(null);
  return (
    <div className="dp-col" data-testid="version-details">
      <h2>{id}</h2>
      <div className="dp-row">
        <button type="button" className="dp-btn dp-btn-small" onClick={diff.reload}>
          Refresh diff
        </button>
        <Field label="Compare with">
          <select aria-label="Compare with" value={diffTarget} onChange={(e) => onDiffTarget(e.target.value)}>
            <option value="current">the current tables</option>
            {versions
              .filter((v) => v.version_id !== id)
              .map((v) => (
                <option key={v.version_id} value={v.version_id}>
                  {v.version_id}
                </option>
              ))}
          </select>
        </Field>
      </div>
      <ErrorBox error={diff.error} onRetry={diff.reload} />
      {diff.data ? (
        <>
          <div className="dp-muted">
            {diff.data.from_version} → {diff.data.to_version}: {diff.data.tables_compared} tables compared, {diff.data.changes.length} changed
          </div>
          <Table
            rows={diff.data.changes}
            rowKey={(c) => c.table}
            empty="No differences."
            columns={[
              { key: 'table', header: 'Table' },
              { key: 'change', header: 'Change', render: (c) => <Badge tone={c.change === 'added' ? 'ok' : c.change === 'removed' ? 'bad' : 'warn'}>{c.change}</Badge> },
              { key: 'rows_before', header: 'Rows before', align: 'right', render: (c) => c.rows_before ?? '' },
              { key: 'rows_after', header: 'Rows after', align: 'right', render: (c) => c.rows_after ?? c.rows ?? '' },
              { key: 'rows_added', header: 'Added', align: 'right', render: (c) => c.rows_added ?? '' },
              { key: 'rows_removed', header: 'Removed', align: 'right', render: (c) => c.rows_removed ?? '' },
              { key: 'rows_changed', header: 'Changed', align: 'right', render: (c) => (c.rows_changed ?? (c.compared_by === 'row' ? 'n/a' : '')) },
              { key: 'compared_by', header: 'By', render: (c) => c.compared_by ?? '' },
              {
                key: 'columns',
                header: 'Columns',
                render: (c) => [...(c.columns_added ?? []).map((x) => `+${x}`), ...(c.columns_removed ?? []).map((x) => `-${x}`), ...(c.columns_type_changed ?? []).map((x) => `~${x}`)].join(' '),
              },
            ]}
          />
        </>
      ) : diff.error ? null : (
        <Loading />
      )}
      <ErrorBox error={detail.error} onRetry={detail.reload} />
      {detail.data ? (
        <Table
          rows={detail.data.tables}
          rowKey={(t) => t.table}
          onRowClick={(t) => setTable(t.table)}
          columns={[
            { key: 'table', header: 'Table (click for its timeline)', render: (t) => <strong>{t.table}</strong> },
            { key: 'row_count', header: 'Rows', align: 'right' },
            { key: 'key', header: 'Key', render: (t) => t.key.join(', ') },
            { key: 'columns', header: 'Columns', render: (t) => t.columns.map((c) => `${c.name} ${c.type}`).join(', ') },
          ]}
        />
      ) : null}
      {table ? <Timeline table={table} /> : null}
    </div>
  );
}

function Timeline({ table }: { table: string }) {
  const timeline = useApi((signal) => api.get<TimelineEntry[]>(`/api/versions/timeline/${seg(table)}`, { signal }), [table]);
  if (timeline.error) return <ErrorBox error={timeline.error} onRetry={timeline.reload} />;
  if (!timeline.data) return <Loading />;
  const oldestFirst = [...timeline.data].reverse();
  return (
    <div className="dp-col" data-testid="timeline">
      <h3>Timeline of {table}</h3>
      {oldestFirst.length > 1 ? <LineChart times={oldestFirst.map((t) => Date.parse(t.created_at) / 1000)} values={oldestFirst.map((t) => t.row_count)} label="rows" /> : null}
      <Table
        rows={timeline.data}
        rowKey={(t) => t.version_id}
        columns={[
          { key: 'version_id', header: 'Version' },
          { key: 'created_at', header: 'Created', render: (t) => when(t.created_at) },
          { key: 'row_count', header: 'Rows', align: 'right' },
          { key: 'columns', header: 'Columns', render: (t) => t.columns.map((c) => c.name).join(', ') },
        ]}
      />
    </div>
  );
}

function RestoreDialog({ version, onClose, onRestore }: { version: VersionDetail; onClose: () => void; onRestore: (tables: string[] | null) => void }) {
  const [chosen, setChosen] = useState<Set<string>>(new Set(version.tables.map((t) => t.table)));
  const all = chosen.size === version.tables.length;
  return (
    <ConfirmDialog
      title={`Restore ${version.version_id}`}
      confirmLabel={`Restore ${all ? 'all tables' : `${chosen.size} table${chosen.size === 1 ? '' : 's'}`}`}
      confirmDisabled={chosen.size === 0}
      onConfirm={() => onRestore(all ? null : [...chosen])}
      onClose={onClose}
    >
      <p>
        The chosen tables are replaced with this version's data. A version of the current data (trigger <code>restore</code>) is written first, so this can be undone.
      </p>
      {version.tables.map((t) => (
        <label key={t.table} className="dp-row">
          <input
            type="checkbox"
            checked={chosen.has(t.table)}
            onChange={(e) => {
              const next = new Set(chosen);
              if (e.target.checked) next.add(t.table);
              else next.delete(t.table);
              setChosen(next);
            }}
          />
          {t.table} <span className="dp-muted">({t.row_count} rows)</span>
        </label>
      ))}
    </ConfirmDialog>
  );
}

function RestoreReport({ result, onClose }: { result: RestoreResult; onClose: () => void }) {
  return (
    <div className="dp-col" data-testid="restore-report">
      <div className="dp-row">
        <StatusBadge status={result.status} />
        <span>
          Restored from {result.version_id}; the data before is version {result.restore_version}.
        </span>
        <button type="button" className="dp-btn dp-btn-small" onClick={onClose}>
          Dismiss
        </button>
      </div>
      <Table
        rows={result.tables}
        rowKey={(t) => t.table}
        columns={[
          { key: 'table', header: 'Table' },
          { key: 'status', header: 'Status', render: (t) => <StatusBadge status={t.status} /> },
          { key: 'rows', header: 'Rows', align: 'right', render: (t) => t.rows ?? '' },
          { key: 'note', header: 'Note', render: (t) => t.error ?? t.reason ?? '' },
        ]}
      />
      {result.notes?.length ? (
        <ul className="dp-muted" data-testid="restore-notes">
          {result.notes.map((n, i) => (
            <li key={i}>
              {n.table} ({n.plugin}): {n.message}
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}

// ------------------------------------------------------------------ snapshots

function Snapshots() {
  const { tick, error, act } = useActionRunner();
  const snapshots = useApi((signal) => api.get<SnapshotSummary[]>('/api/snapshots', { signal }), [tick]);
  const canWrite = useCan('write');
  const [name, setName] = useState('');
  const [selected, setSelected] = useState<string | null>(null);
  if (snapshots.error) return <ErrorBox error={snapshots.error} onRetry={snapshots.reload} />;
  if (!snapshots.data) return <Loading />;
  return (
    <>
      <div className="dp-row">
        <input placeholder="Name (optional)" aria-label="Snapshot name" value={name} onChange={(e) => setName(e.target.value)} disabled={!canWrite} />
        <button
          type="button"
          className="dp-btn dp-btn-primary"
          title={canWrite ? 'Take a snapshot of every table' : 'Needs the editor role'} disabled={!canWrite}
          onClick={() => void act('snapshot', async () => {
            const s = await api.post<SnapshotSummary>('/api/snapshot', name ? { name } : {});
            setName('');
            setSelected(s.name);
          })}
        >
          Take snapshot
        </button>
      </div>
      <ErrorBox error={error} />
      <Table
        rows={snapshots.data}
        rowKey={(s) => s.name}
        onRowClick={(s) => setSelected(s.name)}
        empty="No snapshots: a snapshot records file hashes and table row counts, no data."
        columns={[
          { key: 'name', header: 'Snapshot', render: (s) => <strong>{s.name}</strong> },
          { key: 'created_at', header: 'Created', render: (s) => when(s.created_at) },
          { key: 'file_count', header: 'Files', align: 'right' },
          { key: 'table_count', header: 'Tables', align: 'right' },
          { key: 'project_hash', header: 'Hash', render: (s) => <code>{s.project_hash.slice(0, 12)}</code> },
          {
            key: 'delete',
            header: '',
            render: (s) => (
              <button
                type="button"
                className="dp-btn dp-btn-small"
                title={canWrite ? 'Delete this snapshot' : 'Needs the editor role'} disabled={!canWrite}
                onClick={(e) => {
                  e.stopPropagation();
                  if (window.confirm(`Delete snapshot ${s.name}?`)) void act('delete', () => api.del(`/api/snapshots/${seg(s.name)}`));
                }}
              >
                Delete
              </button>
            ),
          },
        ]}
      />
      {selected && snapshots.data.some((s) => s.name === selected) ? <SnapshotChanges name={selected} /> : null}
    </>
  );
}

function SnapshotChanges({ name }: { name: string }) {
  const diff = useApi((signal) => api.get<SnapshotDiff>(`/api/snapshots/${seg(name)}/diff`, { signal }), [name]);
  if (diff.error) return <ErrorBox error={diff.error} onRetry={diff.reload} />;
  if (!diff.data) return <Loading />;
  const files = [
    ...diff.data.files.added.map((f) => ({ file: f, change: 'added' })),
    ...diff.data.files.modified.map((f) => ({ file: f, change: 'modified' })),
    ...diff.data.files.removed.map((f) => ({ file: f, change: 'removed' })),
  ];
  return (
    <div className="dp-col" data-testid="snapshot-diff">
      <h2>
        Since {name} {diff.data.changed ? <Badge tone="warn">changed</Badge> : <Badge tone="ok">unchanged</Badge>}
      </h2>
      {files.length === 0 && diff.data.tables.length === 0 ? <Empty>No file or table changed since this snapshot.</Empty> : null}
      {files.length ? (
        <Table rows={files} rowKey={(f) => f.file} columns={[{ key: 'file', header: 'File' }, { key: 'change', header: 'Change', render: (f) => <Badge tone={f.change === 'added' ? 'ok' : f.change === 'removed' ? 'bad' : 'warn'}>{f.change}</Badge> }]} />
      ) : null}
      {diff.data.tables.length ? (
        <Table
          rows={diff.data.tables}
          rowKey={(t) => t.table}
          columns={[
            { key: 'table', header: 'Table' },
            { key: 'status', header: 'Change', render: (t) => <Badge tone={t.status === 'added' ? 'ok' : t.status === 'removed' ? 'bad' : 'warn'}>{t.status}</Badge> },
            { key: 'rows_before', header: 'Rows before', align: 'right', render: (t) => t.rows_before ?? '' },
            { key: 'rows_after', header: 'Rows after', align: 'right', render: (t) => t.rows_after ?? '' },
            { key: 'schema_changed', header: 'Schema', render: (t) => (t.schema_changed ? 'changed' : '') },
          ]}
        />
      ) : null}
    </div>
  );
}

// ------------------------------------------------------------------ backups

function Backups() {
  const [message, setMessage] = useState<string | null>(null);
  const { tick, busy, error, act } = useActionRunner(() => setMessage(null));
  const backups = useApi((signal) => api.get<BackupEntry[]>('/api/backups', { signal }), [tick]);
  const canWrite = useCan('write');
  const [note, setNote] = useState('');
  const [verifyCopy, setVerifyCopy] = useState(true);
  const [checks, setChecks] = useState<Record<string, VerifyResult>>({});
  const [confirm, setConfirm] = useState<BackupEntry | null>(null);
  if (backups.error) return <ErrorBox error={backups.error} onRetry={backups.reload} />;
  if (!backups.data) return <Loading />;
  return (
    <>
      <div className="dp-row">
        <input placeholder="Note (optional)" aria-label="Backup note" value={note} onChange={(e) => setNote(e.target.value)} disabled={!canWrite} />
        <label className="dp-row">
          <input type="checkbox" checked={verifyCopy} onChange={(e) => setVerifyCopy(e.target.checked)} disabled={!canWrite} /> verify the copy
        </label>
        <button
          type="button"
          className="dp-btn dp-btn-primary"
          title={!canWrite ? 'Needs the editor role' : busy !== null ? 'Another action is running' : 'Back up the database file'} disabled={!canWrite || busy !== null}
          onClick={() => void act('backup', async () => {
            const b = await api.post<BackupEntry>('/api/backup', { note: note || undefined, no_verify: !verifyCopy });
            setNote('');
            setMessage(`Backup ${b.path} written`);
          })}
        >
          Back up now
        </button>
        <CleanupControls what="Backups" canWrite={canWrite} busy={busy} onCleanup={(keep) =>
            void act('cleanup', async () => {
              const r = await api.post<{ deleted: string[]; kept_backups: string[] }>('/api/backup/cleanup', { keep });
              setMessage(`Deleted ${r.deleted.length} backups; kept ${r.kept_backups.join(', ') || 'none'}`);
            })
          }
        />
      </div>
      <ErrorBox error={error} />
      {message ? <div className="dp-muted" role="status">{message}</div> : null}
      <Table
        rows={backups.data}
        rowKey={(b) => b.path}
        empty="No backups yet."
        columns={[
          { key: 'path', header: 'Backup', render: (b) => <strong>{b.path}</strong> },
          { key: 'timestamp', header: 'Taken', render: (b) => when(b.timestamp) },
          { key: 'kind', header: 'Kind', render: (b) => <Badge tone={b.kind === 'pre-restore' ? 'warn' : 'info'}>{b.kind}</Badge> },
          { key: 'note', header: 'Note', render: (b) => b.note ?? '' },
          { key: 'size_bytes', header: 'Size', align: 'right', render: (b) => bytes(b.size_bytes) },
          {
            key: 'check',
            header: 'Check',
            render: (b) => {
              const c = checks[b.path];
              return c ? <span title={c.error ?? `${c.tables} tables`}><StatusBadge status={c.valid ? 'ok' : 'fail'} /></span> : <span className="dp-muted">not checked</span>;
            },
          },
          {
            key: 'actions',
            header: '',
            render: (b) => (
              <span className="dp-row">
                <button
                  type="button"
                  className="dp-btn dp-btn-small"
                  title={!canWrite ? 'Needs the editor role' : busy !== null ? 'Another action is running' : 'Verify this backup'} disabled={!canWrite || busy !== null}
                  onClick={() => void act('verify', async () => {
                    const v = await api.post<VerifyResult>('/api/backup/verify', { path: b.path });
                    setChecks((all) => ({ ...all, [b.path]: v }));
                  })}
                >
                  Verify
                </button>
                <button type="button" className="dp-btn dp-btn-small" title={!canWrite ? 'Needs the editor role' : busy !== null ? 'Another action is running' : 'Restore this backup (asks first)'} disabled={!canWrite || busy !== null} onClick={() => setConfirm(b)}>
                  Restore…
                </button>
              </span>
            ),
          },
        ]}
      />
      {confirm ? (
        <ConfirmDialog
          title={`Restore ${confirm.path}`}
          confirmLabel="Restore the database"
          onClose={() => setConfirm(null)}
          onConfirm={() => {
            const b = confirm;
            setConfirm(null);
            void act('restore', async () => {
              const r = await api.post<BackupRestoreResult>('/api/backup/restore', { path: b.path });
              setMessage(`Restored ${r.restored}; the replaced database is kept as ${r.replaced_backup.path}`);
            });
          }}
        >
          <p>
            The whole database file is replaced with this backup (taken {when(confirm.timestamp)}). The server pauses for a moment: requests meanwhile get a 503 and
            can be retried. The current file is kept as a backup of its own.
          </p>
        </ConfirmDialog>
      ) : null}
    </>
  );
}
