/**
 * Connectors: the configured connectors with their health (sync now, CDC state and reset), the
 * add-connector wizard (type → parameters with secret fields → test → discover tables → create),
 * the webhook inboxes, and the import wizard (file → preview of the inferred columns → import).
 */
import { useState } from 'react';
import { api, apiHeaders, Badge, Empty, ErrorBox, errorFromResponse, Field, Loading, PageHeader, seg, StatusBadge, Table, Tabs, useApi, useCan, usePersistentState, type PageProps } from '@dp/ui';
import type { CdcStateRow } from '../api-types';

interface ParamSpec {
  type?: string | string[];
  description?: string;
  default?: unknown;
  enum?: unknown[];
  'x-secret'?: boolean;
}

interface ConnectorTypeInfo {
  type: string;
  label: string;
  description: string;
  params: { properties?: Record<string, ParamSpec>; required?: string[] };
  secret_params: string[];
  cdc_modes: string[];
}

interface SyncResult {
  table: string;
  status: string;
  rows_synced: number;
  duration_ms: number;
  cdc_mode: string;
  watermark_after: string | null;
  error: string | null;
}

interface ConnectorInfo {
  name: string;
  type: string;
  target_schema: string;
  schedule: string | null;
  tables: Array<{ name: string; cdc_mode: string; cdc_column: string | null; target: string }>;
  script_path: string;
  last_sync: { status: string; last_sync_at: string; duration_ms: number; rows_synced: number; error: string | null } | null;
}

interface DiscoveredTable {
  name: string;
  columns: Array<{ name: string; type: string }>;
}

type TabKey = 'connectors' | 'add' | 'webhooks' | 'import';

export default function ConnectorsPage({ page }: PageProps) {
  const [tab, setTab] = usePersistentState<TabKey>('connectors.tab', 'connectors');
  const connectors = useApi((signal) => api.get<ConnectorInfo[]>('/api/connectors', { signal }), []);
  return (
    <div className="dp-col">
      <PageHeader title={page.title} subtitle="Sources synced into the warehouse, incremental where the source allows (CDC)" />
      <Tabs<TabKey>
        tabs={[
          { key: 'connectors', label: 'Connectors' },
          { key: 'add', label: 'Add connector' },
          { key: 'webhooks', label: 'Webhook inboxes' },
          { key: 'import', label: 'Import a file' },
        ]}
        active={tab}
        onChange={setTab}
      />
      <ErrorBox error={connectors.error} onRetry={connectors.reload} />
      {tab === 'connectors' ? connectors.data ? <ConnectorList connectors={connectors.data} onChange={connectors.reload} /> : <Loading /> : null}
      {tab === 'add' ? (
        <AddWizard
          onCreated={() => {
            connectors.reload();
            setTab('connectors');
          }}
        />
      ) : null}
      {tab === 'webhooks' ? connectors.data ? <Webhooks connectors={connectors.data.filter((c) => c.type === 'webhook')} /> : <Loading /> : null}
      {tab === 'import' ? <ImportWizard /> : null}
    </div>
  );
}

function ConnectorList({ connectors, onChange }: { connectors: ConnectorInfo[]; onChange: () => void }) {
  const canRun = useCan('execute');
  const canWrite = useCan('write');
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [results, setResults] = useState<{ name: string; results: SyncResult[] } | null>(null);
  const [cdcOf, setCdcOf] = useState<string | null>(null);
  const sync = async (name: string) => {
    setBusy(name);
    setError(null);
    try {
      const r = await api.post<{ results: SyncResult[] }>(`/api/connectors/sync/${seg(name)}`);
      setResults({ name, results: r.results });
      onChange();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(null);
    }
  };
  const remove = async (name: string) => {
    if (!window.confirm(`Remove connector ${name}? Its script, configuration and secrets go; its tables stay.`)) return;
    setError(null);
    try {
      await api.del(`/api/connectors/${seg(name)}`);
      onChange();
    } catch (e) {
      setError(e);
    }
  };
  if (!connectors.length) return <Empty>No connectors yet: add one in the “Add connector” tab.</Empty>;
  return (
    <>
      <ErrorBox error={error} />
      <Table
        rows={connectors}
        rowKey={(c) => c.name}
        columns={[
          { key: 'name', header: 'Connector', render: (c) => <strong>{c.name}</strong> },
          { key: 'type', header: 'Type', render: (c) => <Badge tone="info">{c.type}</Badge> },
          { key: 'tables', header: 'Tables', render: (c) => c.tables.map((t) => `${t.target} (${t.cdc_mode})`).join(', ') || '—' },
          { key: 'schedule', header: 'Schedule', render: (c) => (c.schedule ? <code>{c.schedule}</code> : 'manual') },
          { key: 'health', header: 'Last sync', render: (c) => (c.last_sync ? <span title={c.last_sync.error ?? ''}><StatusBadge status={c.last_sync.status} /> {c.last_sync.last_sync_at} · {c.last_sync.rows_synced} rows · {c.last_sync.duration_ms} ms</span> : <span className="dp-muted">never</span>) },
          {
            key: 'actions',
            header: '',
            render: (c) => (
              <span className="dp-toolbar">
                <button type="button" className="dp-btn dp-btn-small dp-btn-primary" title={!canRun ? 'Needs the editor role' : busy !== null ? 'Another action is running' : 'Sync this connector now'} disabled={!canRun || busy !== null} onClick={() => void sync(c.name)}>
                  {busy === c.name ? 'Syncing…' : 'Sync now'}
                </button>
                <button type="button" className="dp-btn dp-btn-small" onClick={() => setCdcOf(cdcOf === c.name ? null : c.name)}>
                  CDC state
                </button>
                {canWrite ? (
                  <button type="button" className="dp-btn dp-btn-small dp-btn-danger" onClick={() => void remove(c.name)}>
                    Remove
                  </button>
                ) : null}
              </span>
            ),
          },
        ]}
      />
      {results ? (
        <div className="dp-card" data-testid="sync-results">
          <strong>Sync of {results.name}</strong>
          <Table
            rows={results.results}
            rowKey={(r) => r.table}
            columns={[
              { key: 'table', header: 'Table' },
              { key: 'status', header: 'Status', render: (r) => <StatusBadge status={r.status} /> },
              { key: 'rows', header: 'Rows', align: 'right', render: (r) => r.rows_synced },
              { key: 'ms', header: 'ms', align: 'right', render: (r) => r.duration_ms },
              { key: 'mode', header: 'CDC mode', render: (r) => r.cdc_mode },
              { key: 'wm', header: 'Watermark', render: (r) => r.watermark_after ?? '' },
              { key: 'error', header: 'Error', render: (r) => r.error ?? '' },
            ]}
          />
        </div>
      ) : null}
      {cdcOf ? <CdcState connector={cdcOf} /> : null}
    </>
  );
}

function CdcState({ connector }: { connector: string }) {
  const canWrite = useCan('write');
  const state = useApi((signal) => api.get<{ tables: CdcStateRow[] }>(`/api/cdc/${seg(connector)}`, { signal }), [connector]);
  const [error, setError] = useState<unknown>(null);
  const reset = async (table?: string) => {
    if (!window.confirm(table ? `Reset ${table}? Its next sync re-reads everything.` : `Reset every table of ${connector}? The next sync re-reads everything.`)) return;
    setError(null);
    try {
      await api.post(`/api/cdc/${seg(connector)}/reset`, table ? { table } : {});
      state.reload();
    } catch (e) {
      setError(e);
    }
  };
  return (
    <div className="dp-card" data-testid="cdc-state">
      <div className="dp-row">
        <strong>CDC state of {connector}</strong>
        {canWrite ? (
          <button type="button" className="dp-btn dp-btn-small" onClick={() => void reset()}>
            Reset all
          </button>
        ) : null}
      </div>
      <ErrorBox error={state.error ?? error} onRetry={state.reload} />
      {state.data ? (
        <Table
          rows={state.data.tables}
          rowKey={(r) => r.table_name}
          empty="Nothing synced yet."
          columns={[
            { key: 'table', header: 'Table', render: (r) => r.table_name },
            { key: 'mode', header: 'Mode', render: (r) => r.cdc_mode },
            { key: 'wm', header: 'Watermark', render: (r) => (r.watermark_masked ? '*** (masked)' : (r.watermark_value ?? '')) },
            { key: 'mtime', header: 'File time', render: (r) => (r.file_mtime ? new Date(r.file_mtime * 1000).toISOString() : '') },
            { key: 'last', header: 'Last sync', render: (r) => r.last_sync_at ?? '' },
            { key: 'rows', header: 'Rows', align: 'right', render: (r) => r.rows_synced },
            {
              key: 'reset',
              header: '',
              render: (r) =>
                canWrite ? (
                  <button type="button" className="dp-btn dp-btn-small" onClick={() => void reset(r.table_name)}>
                    Reset
                  </button>
                ) : null,
            },
          ]}
        />
      ) : (
        <Loading />
      )}
    </div>
  );
}

/** type → parameters → test → discover → create. */
function AddWizard({ onCreated }: { onCreated: () => void }) {
  const canWrite = useCan('write');
  const types = useApi((signal) => api.get<ConnectorTypeInfo[]>('/api/connectors/available', { signal }), []);
  const [typeId, setTypeId] = useState('');
  const [name, setName] = useState('');
  const [values, setValues] = useState<Record<string, unknown>>({});
  const [schema, setSchema] = useState('landing');
  const [schedule, setSchedule] = useState('');
  const [test, setTest] = useState<{ ok: boolean; message: string } | null>(null);
  const [tables, setTables] = useState<DiscoveredTable[] | null>(null);
  const [chosen, setChosen] = useState<Record<string, boolean>>({});
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const type = types.data?.find((t) => t.type === typeId);
  if (!canWrite) return <Empty>Adding a connector needs the editor role.</Empty>;
  if (types.error) return <ErrorBox error={types.error} onRetry={types.reload} />;
  if (!types.data) return <Loading />;

  const config = () => Object.fromEntries(Object.entries(values).filter(([, v]) => v !== '' && v !== undefined));
  const step = async (fn: () => Promise<void>) => {
    setBusy(true);
    setError(null);
    try {
      await fn();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  const pickType = (t: string) => {
    setTypeId(t);
    setValues({});
    setTest(null);
    setTables(null);
    setChosen({});
    if (!name) setName(t);
  };
  const props = Object.entries(type?.params.properties ?? {});
  return (
    <div className="dp-col" style={{ maxWidth: 720 }}>
      <Field label="1. Connector type">
        <select value={typeId} onChange={(e) => pickType(e.target.value)} aria-label="Connector type">
          <option value="">Choose a type…</option>
          {types.data.map((t) => (
            <option key={t.type} value={t.type}>
              {t.label} ({t.type})
            </option>
          ))}
        </select>
      </Field>
      {type ? (
        <>
          <p className="dp-muted">{type.description}</p>
          <Field label="Connection name" hint="Letters, digits and underscores; names the script ingest/connector_<name>.ts and the .env variables of its secrets">
            <input value={name} onChange={(e) => setName(e.target.value)} aria-label="Connection name" />
          </Field>
          <strong>2. Parameters</strong>
          {props.map(([key, spec]) => {
            const required = type.params.required?.includes(key);
            const kind = Array.isArray(spec.type) ? spec.type[0] : spec.type;
            const current = values[key] ?? '';
            const set = (v: unknown) => setValues({ ...values, [key]: v });
            const label = `${key}${required ? ' *' : ''}${spec['x-secret'] ? ' (secret, stored in .env)' : ''}`;
            let control;
            if (kind === 'boolean') control = <input type="checkbox" checked={current === true} onChange={(e) => set(e.target.checked)} aria-label={key} />;
            else if (kind === 'integer' || kind === 'number') control = <input type="number" value={String(current)} placeholder={spec.default !== undefined ? String(spec.default) : ''} onChange={(e) => set(e.target.value === '' ? undefined : Number(e.target.value))} aria-label={key} />;
            else control = <input type={spec['x-secret'] ? 'password' : 'text'} autoComplete="off" value={String(current)} placeholder={spec.default !== undefined ? String(spec.default) : ''} onChange={(e) => set(e.target.value)} aria-label={key} />;
            return (
              <Field key={key} label={label} hint={spec.description}>
                {control}
              </Field>
            );
          })}
          <div className="dp-row">
            <button type="button" className="dp-btn" title={busy ? 'Another step is running' : 'Test the connection with these settings'} disabled={busy} onClick={() => void step(async () => setTest(await api.post('/api/connectors/test', { connector_type: typeId, config: config() })))}>
              3. Test connection
            </button>
            {test ? <Badge tone={test.ok ? 'ok' : 'bad'}>{test.ok ? 'ok' : 'failed'}: {test.message}</Badge> : null}
          </div>
          <div className="dp-row">
            <button
              type="button"
              className="dp-btn"
              title={busy ? 'Another step is running' : undefined} disabled={busy}
              onClick={() =>
                void step(async () => {
                  const r = await api.post<{ tables: DiscoveredTable[] }>('/api/connectors/discover', { connector_type: typeId, config: config() });
                  setTables(r.tables);
                  setChosen(Object.fromEntries(r.tables.map((t) => [t.name, true])));
                })
              }
            >
              4. Discover tables
            </button>
          </div>
          {tables ? (
            tables.length ? (
              <div className="dp-card" data-testid="discovered">
                {tables.map((t) => (
                  <label key={t.name} className="dp-row">
                    <input type="checkbox" checked={chosen[t.name] ?? false} onChange={(e) => setChosen({ ...chosen, [t.name]: e.target.checked })} aria-label={`table ${t.name}`} />
                    <code>{t.name}</code>
                    <span className="dp-muted">{t.columns.map((c) => `${c.name} ${c.type}`).join(', ')}</span>
                  </label>
                ))}
              </div>
            ) : (
              <Empty>This source has no tables to pull (data is pushed to it).</Empty>
            )
          ) : null}
          <Field label="Target schema">
            <input value={schema} onChange={(e) => setSchema(e.target.value)} aria-label="Target schema" />
          </Field>
          <Field label="Schedule (5-field cron, optional)">
            <input value={schedule} placeholder="0 * * * *" onChange={(e) => setSchedule(e.target.value)} aria-label="Schedule" />
          </Field>
          <div className="dp-row">
            <button
              type="button"
              className="dp-btn dp-btn-primary"
              title={busy ? 'Another step is running' : !name ? 'Give the connection a name' : undefined} disabled={busy || !name}
              onClick={() =>
                void step(async () => {
                  await api.post('/api/connectors/setup', {
                    connector_type: typeId,
                    connection_name: name,
                    config: config(),
                    ...(tables ? { tables: tables.filter((t) => chosen[t.name]).map((t) => t.name) } : {}),
                    target_schema: schema,
                    schedule: schedule.trim() || null,
                  });
                  onCreated();
                })
              }
            >
              5. Create connector
            </button>
            {busy ? <span className="dp-muted">Working…</span> : null}
          </div>
        </>
      ) : null}
      <ErrorBox error={error} />
    </div>
  );
}

function Webhooks({ connectors }: { connectors: ConnectorInfo[] }) {
  const origin = window.location.origin;
  if (!connectors.length) return <Empty>No webhook inboxes: add a connector of type “webhook”.</Empty>;
  return (
    <Table
      rows={connectors}
      rowKey={(c) => c.name}
      columns={[
        { key: 'name', header: 'Inbox', render: (c) => <strong>{c.name}</strong> },
        { key: 'url', header: 'POST to', render: (c) => <code>{`${origin}/api/webhook/${c.name}`}</code> },
        { key: 'table', header: 'Stored in', render: (c) => <code>{`landing.${c.name}_inbox`}</code> },
        { key: 'secret', header: 'Secret', render: (c) => <span className="dp-muted">header X-Service-Webhook-Secret = .env {`SERVICE_WEBHOOK_SECRET_${c.name.toUpperCase()}`}</span> },
      ]}
    />
  );
}

interface ImportPreview {
  table: string;
  schema: string;
  format: string;
  columns: Array<{ name: string; type: string }>;
  rows: unknown[][];
}

/** file → preview (inferred columns, first rows) → import. */
function ImportWizard() {
  const canWrite = useCan('write');
  const [file, setFile] = useState<File | null>(null);
  const [schema, setSchema] = useState('landing');
  const [table, setTable] = useState('');
  const [mode, setMode] = useState('create');
  const [preview, setPreview] = useState<ImportPreview | null>(null);
  const [done, setDone] = useState<{ schema: string; table: string; rows_imported: number } | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  if (!canWrite) return <Empty>Importing needs the editor role.</Empty>;
  const send = async (previewOnly: boolean) => {
    if (!file) return;
    setBusy(true);
    setError(null);
    try {
      const form = new FormData();
      form.append('schema', schema);
      if (table) form.append('table', table);
      form.append('mode', mode);
      if (previewOnly) form.append('preview', 'true');
      form.append('file', file, file.name);
      const res = await fetch('/api/import', { method: 'POST', body: form, headers: apiHeaders(), credentials: 'same-origin' });
      if (!res.ok) throw await errorFromResponse(res);
      const body = await res.json();
      if (previewOnly) {
        setPreview(body as ImportPreview);
        if (!table) setTable((body as ImportPreview).table);
      } else setDone(body as { schema: string; table: string; rows_imported: number });
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <div className="dp-col" style={{ maxWidth: 900 }}>
      <Field label="1. File (CSV, Parquet, JSON or .xlsx)">
        <input
          type="file"
          accept=".csv,.tsv,.txt,.parquet,.json,.jsonl,.ndjson,.xlsx"
          aria-label="File to import"
          onChange={(e) => {
            setFile(e.target.files?.[0] ?? null);
            setPreview(null);
            setDone(null);
            setTable('');
          }}
        />
      </Field>
      <div className="dp-row">
        <Field label="Schema">
          <input value={schema} onChange={(e) => setSchema(e.target.value)} aria-label="Import schema" />
        </Field>
        <Field label="Table">
          <input value={table} placeholder="from the file name" onChange={(e) => setTable(e.target.value)} aria-label="Import table" />
        </Field>
        <Field label="If the table exists">
          <select value={mode} onChange={(e) => setMode(e.target.value)} aria-label="Import mode">
            <option value="create">refuse</option>
            <option value="replace">replace it</option>
            <option value="append">append</option>
          </select>
        </Field>
      </div>
      <div className="dp-row">
        <button type="button" className="dp-btn" title={!file ? 'Choose a file first' : busy ? 'Another step is running' : 'Preview the import without writing'} disabled={!file || busy} onClick={() => void send(true)}>
          2. Preview
        </button>
        <button type="button" className="dp-btn dp-btn-primary" title={!file ? 'Choose a file first' : !preview ? 'Preview the import first' : busy ? 'Another step is running' : 'Import the file'} disabled={!file || !preview || busy} onClick={() => void send(false)}>
          3. Import
        </button>
      </div>
      <ErrorBox error={error} />
      {preview ? (
        <div className="dp-card" data-testid="import-preview">
          <strong>
            {preview.format} → {schema}.{table || preview.table}
          </strong>
          <Table
            rows={preview.rows.map((r, i) => ({ i, r }))}
            rowKey={(x) => String(x.i)}
            columns={preview.columns.map((c, ci) => ({ key: c.name, header: `${c.name} (${c.type})`, render: (x: { r: unknown[] }) => (x.r[ci] === null ? 'NULL' : String(x.r[ci])) }))}
          />
        </div>
      ) : null}
      {done ? (
        <Badge tone="ok">
          Imported {done.rows_imported} rows into {done.schema}.{done.table}
        </Badge>
      ) : null}
    </div>
  );
}
