/**
 * Quality: contracts (run them, see their history), the latest assertion results with a
 * diagnosis per model, model and source freshness, anomalies and alerts.
 */
import { useMemo, useState } from 'react';
import { api, Badge, DetailView, Empty, ErrorBox, Loading, PageHeader, seg, StatusBadge, Table, Tabs, useApi, useCan, usePersistentState, type PageProps } from '@dp/ui';
import { LineChart } from '@dp/ui/chart';
import type { Contract, StoredAssertionResult } from '../api-types';

type TabKey = 'contracts' | 'assertions' | 'freshness' | 'anomalies' | 'alerts';


interface ContractRun {
  id: string;
  contract_name: string;
  model: string;
  passed: boolean;
  severity: string;
  duration_ms: number;
  error: string | null;
  detail: Array<{ expression: string; passed: boolean; detail?: unknown }> | null;
  checked_at: string;
}


export default function QualityPage({ page }: PageProps) {
  const [tab, setTab] = usePersistentState<TabKey>('quality.tab', 'contracts');
  return (
    <div className="dp-col">
      <PageHeader title={page.title} subtitle="Contracts, assertions, freshness, anomalies and alerts" />
      <Tabs<TabKey>
        tabs={[
          { key: 'contracts', label: 'Contracts' },
          { key: 'assertions', label: 'Assertions' },
          { key: 'freshness', label: 'Freshness' },
          { key: 'anomalies', label: 'Anomalies' },
          { key: 'alerts', label: 'Alerts' },
        ]}
        active={tab}
        onChange={setTab}
      />
      {tab === 'contracts' ? <Contracts /> : null}
      {tab === 'assertions' ? <Assertions /> : null}
      {tab === 'freshness' ? <Freshness /> : null}
      {tab === 'anomalies' ? <Anomalies /> : null}
      {tab === 'alerts' ? <Alerts /> : null}
    </div>
  );
}

function Contracts() {
  const contracts = useApi((signal) => api.get<{ contracts: Contract[]; errors?: unknown[] }>('/api/contracts', { signal }), []);
  const [historyTick, setHistoryTick] = useState(0);
  const history = useApi((signal) => api.get<{ history: ContractRun[] }>('/api/contracts/history', { signal, query: { limit: 200 } }), [historyTick]);
  const canRun = useCan('execute');
  const [running, setRunning] = useState<string | null>(null);
  const [runError, setRunError] = useState<unknown>(null);
  const [selected, setSelected] = useState<string | null>(null);
  const run = async (name: string | null) => {
    setRunning(name ?? '*');
    setRunError(null);
    try {
      await api.post('/api/contracts/run', undefined, { query: { contract: name ?? undefined } });
      setHistoryTick((t) => t + 1);
    } catch (e) {
      setRunError(e);
    } finally {
      setRunning(null);
    }
  };
  const latest = useMemo(() => {
    const out = new Map<string, ContractRun>();
    for (const h of history.data?.history ?? []) if (!out.has(h.contract_name)) out.set(h.contract_name, h);
    return out;
  }, [history.data]);
  if (contracts.error) return <ErrorBox error={contracts.error} onRetry={contracts.reload} />;
  if (!contracts.data) return <Loading />;
  const runs = (history.data?.history ?? []).filter((h) => h.contract_name === selected);
  return (
    <>
      <div className="dp-row">
        <button type="button" className="dp-btn dp-btn-primary" disabled={!canRun || running !== null} onClick={() => void run(null)} title={canRun ? 'Run every contract' : 'Needs the editor role'}>
          Run all contracts
        </button>
        {running ? <span className="dp-muted">Running…</span> : null}
      </div>
      <ErrorBox error={runError} />
      {(contracts.data.errors ?? []).length ? <ErrorBox error={new Error(`Contract files with errors: ${JSON.stringify(contracts.data.errors)}`)} /> : null}
      <Table
        rows={contracts.data.contracts}
        rowKey={(c) => c.name}
        onRowClick={(c) => setSelected(c.name)}
        empty="No contracts: add YAML files under contracts/."
        columns={[
          { key: 'name', header: 'Contract', render: (c) => <strong>{c.name}</strong> },
          { key: 'model', header: 'Model' },
          { key: 'severity', header: 'Severity', render: (c) => <Badge tone={c.severity === 'error' ? 'bad' : 'warn'}>{c.severity}</Badge> },
          { key: 'assertions', header: 'Assertions', render: (c) => c.assertions.join(' · ') },
          { key: 'last', header: 'Last run', render: (c) => (latest.get(c.name) ? <StatusBadge status={latest.get(c.name)!.passed ? 'pass' : 'fail'} /> : <span className="dp-muted">never</span>) },
          {
            key: 'run',
            header: '',
            render: (c) => (
              <button
                type="button"
                className="dp-btn dp-btn-small"
                title={!canRun ? 'Needs the editor role' : running !== null ? 'A contract run is in progress' : 'Run this contract now'} disabled={!canRun || running !== null}
                onClick={(e) => {
                  e.stopPropagation();
                  void run(c.name);
                }}
              >
                Run
              </button>
            ),
          },
        ]}
      />
      {selected ? (
        <div className="dp-card">
          <div className="dp-row">
            <strong>History of {selected}</strong>
            <button type="button" className="dp-btn dp-btn-small" style={{ marginLeft: 'auto' }} onClick={() => setSelected(null)}>
              Close
            </button>
          </div>
          {runs.length > 1 ? <LineChart times={runs.map((r) => Date.parse(r.checked_at) / 1000).reverse()} values={runs.map((r) => r.duration_ms).reverse()} label="duration (ms)" /> : null}
          <Table
            rows={runs}
            rowKey={(r) => r.id}
            empty="Not run yet."
            columns={[
              { key: 'checked_at', header: 'When', render: (r) => new Date(r.checked_at).toLocaleString() },
              { key: 'passed', header: 'Result', render: (r) => <StatusBadge status={r.passed ? 'pass' : 'fail'} /> },
              { key: 'duration_ms', header: 'ms', align: 'right' },
              { key: 'detail', header: 'Assertions', render: (r) => r.error ?? (r.detail ?? []).map((d) => `${d.passed ? '✓' : '✗'} ${d.expression}`).join('  ') },
            ]}
          />
        </div>
      ) : null}
    </>
  );
}

function Assertions() {
  const results = useApi((signal) => api.get<{ results: StoredAssertionResult[] }>('/api/assertions', { signal }), []);
  const [model, setModel] = useState<string | null>(null);
  if (results.error) return <ErrorBox error={results.error} onRetry={results.reload} />;
  if (!results.data) return <Loading />;
  return (
    <>
      <Table
        rows={results.data.results}
        rowKey={(r) => r.id}
        onRowClick={(r) => setModel(r.model)}
        empty="No assertion results yet: add @assert lines to models and run a transform."
        columns={[
          { key: 'model', header: 'Model' },
          { key: 'expression', header: 'Assertion', render: (r) => <code>{r.expression}</code> },
          { key: 'passed', header: 'Result', render: (r) => <StatusBadge status={r.passed ? 'pass' : 'fail'} /> },
          { key: 'detail', header: 'Detail', render: (r) => <DetailView value={r.detail} label={`Detail of ${r.expression}`} /> },
          { key: 'checked_at', header: 'Checked', render: (r) => new Date(r.checked_at).toLocaleString() },
        ]}
      />
      {model ? <AssertionDiagnosis model={model} onClose={() => setModel(null)} /> : null}
    </>
  );
}

function AssertionDiagnosis({ model, onClose }: { model: string; onClose: () => void }) {
  const debug = useApi((signal) => api.get<{ total: number; passed: number; failed: number; assertions: Array<{ expression: string; passed: boolean; detail?: unknown; error?: string }> }>(`/api/quality/assertion-debug/${seg(model)}`, { signal }), [model]);
  return (
    <div className="dp-card" data-testid="assertion-diagnosis">
      <div className="dp-row">
        <strong>Diagnosis of {model} (run now)</strong>
        <button type="button" className="dp-btn dp-btn-small" style={{ marginLeft: 'auto' }} onClick={onClose}>
          Close
        </button>
      </div>
      <ErrorBox error={debug.error} />
      {debug.data ? (
        <>
          <div>
            {debug.data.passed}/{debug.data.total} passed
          </div>
          {debug.data.assertions.map((a) => (
            <div key={a.expression}>
              <StatusBadge status={a.passed ? 'pass' : 'fail'} /> <code>{a.expression}</code>
              {a.error ? <pre>{a.error}</pre> : <DetailView value={a.detail} label={`Detail of ${a.expression}`} />}
            </div>
          ))}
        </>
      ) : debug.loading ? (
        <Loading />
      ) : null}
    </div>
  );
}

function Freshness() {
  const models = useApi((signal) => api.get<{ max_hours: number; stale_count: number; models: Array<Record<string, unknown>> }>('/api/freshness', { signal }), []);
  const sources = useApi((signal) => api.get<{ stale_count: number; sources: Array<Record<string, unknown>> }>('/api/sources/freshness', { signal }), []);
  return (
    <>
      <h2>Models</h2>
      <ErrorBox error={models.error} onRetry={models.reload} />
      {models.data ? (
        <Table
          rows={models.data.models}
          rowKey={(m) => String(m.model)}
          columns={[
            { key: 'model', header: 'Model' },
            { key: 'status', header: 'Status', render: (m) => <StatusBadge status={String(m.status)} /> },
            { key: 'hours_since_build', header: 'Hours since build', align: 'right' },
            { key: 'last_built_at', header: 'Last built', render: (m) => (m.last_built_at ? new Date(String(m.last_built_at)).toLocaleString() : 'never') },
          ]}
        />
      ) : (
        <Loading />
      )}
      <h2>Sources</h2>
      <ErrorBox error={sources.error} onRetry={sources.reload} />
      {sources.data ? (
        <Table
          rows={sources.data.sources}
          rowKey={(s) => `${s.source}.${s.table}`}
          empty="No sources declared in project.yml."
          columns={[
            { key: 'source', header: 'Source' },
            { key: 'table', header: 'Table', render: (s) => `${s.schema}.${s.table}` },
            { key: 'status', header: 'Status', render: (s) => <StatusBadge status={String(s.status)} /> },
            { key: 'hours_since_load', header: 'Hours since load', align: 'right' },
            { key: 'freshness_hours', header: 'Limit (h)', align: 'right' },
          ]}
        />
      ) : (
        <Loading />
      )}
    </>
  );
}

function Anomalies() {
  const anomalies = useApi((signal) => api.get<{ anomalies: Array<Record<string, unknown>> }>('/api/anomalies', { signal }), []);
  if (anomalies.error) return <ErrorBox error={anomalies.error} onRetry={anomalies.reload} />;
  if (!anomalies.data) return <Loading />;
  if (anomalies.data.anomalies.length === 0) return <Empty>No anomalies: each model’s profile is within its usual range (or has too little history yet).</Empty>;
  const keys = Object.keys(anomalies.data.anomalies[0]).filter((k) => k !== 'id');
  return <Table rows={anomalies.data.anomalies} columns={keys.map((k) => ({ key: k, header: k }))} />;
}

function Alerts() {
  const alerts = useApi((signal) => api.get<{ alerts: Array<Record<string, unknown>> }>('/api/alerts', { signal }), []);
  const canTest = useCan('write');
  const [result, setResult] = useState<unknown>(null);
  const [error, setError] = useState<unknown>(null);
  const test = async () => {
    setError(null);
    try {
      setResult(await api.post('/api/alerts/test', { channel: 'log', message: 'Test alert from the dp web UI' }));
      alerts.reload();
    } catch (e) {
      setError(e);
    }
  };
  return (
    <>
      <div className="dp-row">
        <button type="button" className="dp-btn" disabled={!canTest} onClick={() => void test()} title={canTest ? 'Send a test alert to the log channel' : 'Needs the editor role'}>
          Send a test alert (log)
        </button>
      </div>
      <ErrorBox error={error} />
      {result ? <DetailView value={result} label="Test alert result" /> : null}
      <ErrorBox error={alerts.error} onRetry={alerts.reload} />
      {alerts.data ? (
        alerts.data.alerts.length === 0 ? (
          <Empty>No alerts sent yet.</Empty>
        ) : (
          <Table
            rows={alerts.data.alerts}
            columns={Object.keys(alerts.data.alerts[0])
              .filter((k) => k !== 'id')
              .map((k) => ({ key: k, header: k.replace(/_/g, ' '), render: (a: Record<string, unknown>) => <DetailView value={a[k]} /> }))}
          />
        )
      ) : (
        <Loading />
      )}
    </>
  );
}
