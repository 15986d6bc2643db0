/**
 * The model page's panels beside the code: what the model is (description, columns with types),
 * how its last build went (status, rows, time), freshness, assertions and unit tests (run from
 * here), a preview of the edited SQL before saving or building, and a transform run opened to
 * its steps with "re-run failed steps".
 */
import { useState } from 'react';
import { api, Badge, DetailView, ErrorBox, Loading, ResultsGrid, maskedAtOf, seg, StatusBadge, Table, useApi, useCan, useSession, type MaskedResultColumn } from '@dp/ui';

export interface ModelOverview {
  model: string;
  build_status: 'up_to_date' | 'new' | 'needs_rebuild' | 'changed' | 'stale';
  build_reason: string | null;
  last_build: { run_id: string; status: string; duration_ms: number; error: string | null; finished_at: string } | null;
  last_run: { run_id: string; status: string; duration_ms: number; error: string | null; finished_at: string } | null;
  /** What the model's name holds in the database now; null before the first build. */
  relation: 'table' | 'view' | null;
  rows: number | null;
}

/** A model's description: the leading `--` comment of its file, directives left out. */
export function leadingComment(sql: string): string {
  const lines: string[] = [];
  for (const raw of sql.split(/\r?\n/)) {
    const line = raw.trim();
    if (!line.startsWith('--')) break;
    const text = line.replace(/^--+\s?/, '');
    if (!/^@\w+|^(depends_on|assert)\s*:/.test(text.trim())) lines.push(text);
  }
  return lines.join(' ').trim();
}

const when = (at: string | null | undefined) => (at ? new Date(at.replace(' ', 'T') + (/[zZ]|[+-]\d\d:?\d\d$/.test(at) ? '' : 'Z')).toLocaleString() : 'never');

/** Description, columns, last build, freshness, assertions and unit tests of one model. */
export function ModelDetails({ model, sql, overview, building, onRebuild }: { model: { full_name: string; schema: string; name: string }; sql: string; overview: ModelOverview | null; building: boolean; onRebuild: () => void }) {
  const session = useSession();
  const canExecute = useCan('execute');
  const quality = session.plugins.includes('quality');
  // An unbuilt model has no table to describe: no request that can only answer 404.
  const built = Boolean(overview?.relation);
  const columns = useApi(
    (signal) => (built ? api.get<{ columns: Array<{ name: string; type: string }> }>(`/api/tables/${seg(model.schema)}/${seg(model.name)}`, { signal }).catch(() => null) : Promise.resolve(null)),
    [model.full_name, built, overview?.last_build?.run_id],
  );
  const freshness = useApi(
    (signal) => (quality ? api.get<{ models: Array<{ model: string; status: string; hours_since_build: number | null }> }>('/api/freshness', { signal }) : Promise.resolve(null)),
    [quality, overview?.last_build?.run_id],
  );
  const assertions = useApi(
    (signal) => (quality ? api.get<{ results: Array<{ id: string; expression: string; passed: boolean; detail: unknown; checked_at: string }> }>(`/api/assertions/${seg(model.full_name)}`, { signal, query: { limit: 20 } }) : Promise.resolve(null)),
    [quality, model.full_name, overview?.last_build?.run_id],
  );
  const [checks, setChecks] = useState<{ title: string; body: unknown } | null>(null);
  const [running, setRunning] = useState(false);
  const run = async (title: string, call: () => Promise<unknown>) => {
    setRunning(true);
    try {
      setChecks({ title, body: await call() });
    } catch (e) {
      setChecks({ title, body: e });
    } finally {
      setRunning(false);
    }
  };
  const description = leadingComment(sql);
  const fresh = freshness.data?.models.find((m) => m.model === model.full_name);
  // The latest result of each assertion (the list is newest first).
  const seen = new Set<string>();
  const lastAssertions = (assertions.data?.results ?? []).filter((r) => (seen.has(r.expression) ? false : (seen.add(r.expression), true)));
  const why = canExecute ? '' : 'Needs the editor role';
  return (
    <aside className="dp-card dp-model-details" aria-label={`About ${model.full_name}`} data-testid="model-details">
      <p className="dp-muted" data-testid="model-description">{description || 'No description: write it as the comment at the top of the file.'}</p>
      {overview?.build_status === 'needs_rebuild' ? (
        <div className="dp-error" role="alert" data-testid="needs-rebuild">
          <strong>Table out of sync with its SQL</strong> {overview.build_reason}
          <button type="button" className="dp-btn dp-btn-small" disabled={!canExecute || building} title={why || 'Rebuild this model from its SQL even if nothing changed (transform --force)'} onClick={onRebuild}>
            Rebuild (force)
          </button>
        </div>
      ) : overview && overview.build_status !== 'up_to_date' ? (
        <div>
          <Badge tone="warn">{overview.build_status.replace('_', ' ')}</Badge> {overview.build_reason ?? ''}
        </div>
      ) : null}
      <h3>Last build</h3>
      {overview ? (
        overview.last_build ? (
          <div data-testid="last-build">
            <StatusBadge status={overview.last_build.status} /> {overview.rows === null ? 'a view' : `${overview.rows} rows`} · {Math.round(overview.last_build.duration_ms)} ms · {when(overview.last_build.finished_at)}
            {overview.last_build.error ? <div className="dp-error-code">{overview.last_build.error}</div> : null}
          </div>
        ) : (
          <div className="dp-muted" data-testid="last-build">Not built by dp yet.</div>
        )
      ) : (
        <Loading />
      )}
      {quality ? (
        <div data-testid="freshness">
          Freshness: {fresh ? <StatusBadge status={fresh.status} /> : '…'} {fresh?.hours_since_build != null ? `${fresh.hours_since_build} h since build` : ''}
        </div>
      ) : null}
      <h3>Columns</h3>
      {columns.data ? (
        <Table rows={columns.data.columns} rowKey={(c) => c.name} columns={[{ key: 'name', header: 'Column' }, { key: 'type', header: 'Type' }]} />
      ) : columns.loading ? (
        <Loading />
      ) : (
        <div className="dp-muted">Not built yet: no columns.</div>
      )}
      {quality ? (
        <>
          <h3>Assertions</h3>
          <Table
            rows={lastAssertions}
            rowKey={(r) => r.id}
            empty="No assertion results yet: add -- @assert lines and build."
            columns={[
              { key: 'expression', header: 'Assertion', render: (r) => <code>{r.expression}</code> },
              { key: 'passed', header: 'Result', render: (r) => <StatusBadge status={r.passed ? 'pass' : 'fail'} /> },
              { key: 'detail', header: 'Detail', render: (r) => <DetailView value={r.detail} /> },
            ]}
          />
        </>
      ) : null}
      <div className="dp-toolbar">
        {quality ? (
          <button type="button" className="dp-btn" disabled={!canExecute ? true : running} title={why || 'Run the assertions on the built table now'} onClick={() => void run('Assertions', () => api.get(`/api/quality/assertion-debug/${seg(model.full_name)}`))}>
            Run assertions
          </button>
        ) : null}
        <button type="button" className="dp-btn" disabled={!canExecute || running} title={why || 'Run the unit tests of this model (tests/unit/*.yml)'} onClick={() => void run('Unit tests', () => api.post('/api/unit-tests/run', { model: model.full_name }))}>
          Run unit tests
        </button>
        {running ? <span className="dp-muted">running…</span> : null}
      </div>
      {checks ? <ChecksResult title={checks.title} body={checks.body} /> : null}
    </aside>
  );
}

function ChecksResult({ title, body }: { title: string; body: unknown }) {
  if (body instanceof Error) return <ErrorBox error={body} />;
  const b = body as { total: number; passed: number; failed: number; assertions?: Array<{ expression: string; passed: boolean; detail?: unknown; error?: string }>; results?: Array<Record<string, unknown>> };
  const rows = b.assertions ?? b.results ?? [];
  return (
    <div role="region" aria-label={`${title} result`} data-testid="checks-result">
      <div data-testid="checks-summary">
        <strong>{title}</strong>: {b.passed}/{b.total} passed
      </div>
      <Table
        rows={rows as Array<Record<string, unknown>>}
        empty={title === 'Unit tests' ? 'This model has no unit tests (tests/unit/*.yml).' : 'This model has no assertions.'}
        columns={[
          { key: 'name', header: title === 'Unit tests' ? 'Test' : 'Assertion', render: (r) => <code>{String(r.name ?? r.expression)}</code> },
          { key: 'status', header: 'Result', render: (r) => <StatusBadge status={typeof r.passed === 'boolean' ? (r.passed ? 'pass' : 'fail') : String(r.status)} /> },
          { key: 'detail', header: 'Detail', render: (r) => (r.error ? String(r.error) : <DetailView value={r.detail ?? r.message ?? r.diff ?? null} />) },
        ]}
      />
    </div>
  );
}

interface PreviewResult {
  compiled_sql: string;
  columns: string[];
  column_types: string[];
  rows: unknown[][];
  truncated: boolean;
  duration_ms: number;
  masked_columns?: MaskedResultColumn[];
}

/** Runs the editor's text (saved or not) with a limit: rows, columns and the SQL that ran. */
export function PreviewPanel({ model, text }: { model: string; text: string | null }) {
  const [limit, setLimit] = useState(100);
  const [result, setResult] = useState<PreviewResult | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const preview = async () => {
    setBusy(true);
    setError(null);
    try {
      setResult(await api.post<PreviewResult>(`/api/models/${seg(model)}/preview`, { ...(text ? { sql: text } : {}), limit }));
    } catch (e) {
      setResult(null);
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <div className="dp-col" data-testid="model-preview">
      <div className="dp-row">
        <button type="button" className="dp-btn dp-btn-primary" disabled={busy} onClick={() => void preview()} title="Run the SQL in the editor (saved or not) without building">
          Preview
        </button>
        <label className="dp-row">
          limit
          <input type="number" min={1} max={1000} value={limit} onChange={(e) => setLimit(Math.max(1, Math.min(1000, Number(e.target.value) || 100)))} style={{ width: '6em' }} aria-label="Preview row limit" />
        </label>
        {busy ? <span className="dp-muted">running…</span> : result ? <span className="dp-muted" data-testid="preview-status">{result.rows.length} rows{result.truncated ? ' (more not shown)' : ''} · {result.columns.length} columns · {result.duration_ms} ms</span> : null}
      </div>
      <ErrorBox error={error} />
      {result ? (
        <>
          <div style={{ height: 260, display: 'flex' }}>
            <ResultsGrid columns={result.columns} columnTypes={result.column_types} rows={result.rows} maskedAt={maskedAtOf(result.masked_columns)} />
          </div>
          <details>
            <summary>Compiled SQL</summary>
            <pre data-testid="compiled-sql">{result.compiled_sql}</pre>
          </details>
        </>
      ) : null}
    </div>
  );
}

interface RunDetailData {
  run_id: string;
  status: string;
  trigger: string;
  started_at: string;
  duration_ms: number;
  models: Array<{ model: string; status: string; duration_ms: number; error: string | null; finished_at: string }>;
}

const FAILED = new Set(['error', 'assertion_failed', 'upstream_failed']);

/** One transform run opened to its steps, with "re-run failed steps". */
export function RunDetail({ runId, onClose, onRerun }: { runId: string; onClose: () => void; onRerun: (body: unknown) => void }) {
  const run = useApi((signal) => api.get<RunDetailData>(`/api/transform/runs/${seg(runId)}`, { signal }), [runId]);
  const canExecute = useCan('execute');
  const [busy, setBusy] = useState(false);
  const failed = (run.data?.models ?? []).filter((m) => FAILED.has(m.status)).map((m) => m.model);
  const rerun = async () => {
    setBusy(true);
    try {
      onRerun(await api.post('/api/transform', { targets: failed }));
    } catch (e) {
      onRerun(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <div className="dp-card" role="region" aria-label={`Run ${runId}`} data-testid="run-detail">
      <div className="dp-row">
        <strong>Run {runId}</strong>
        {run.data ? (
          <>
            <StatusBadge status={run.data.status} /> <span className="dp-muted">{run.data.trigger} · {when(run.data.started_at)} · {Math.round(run.data.duration_ms)} ms</span>
          </>
        ) : null}
        <div className="dp-toolbar" style={{ marginLeft: 'auto' }}>
          <button
            type="button"
            className="dp-btn"
            disabled={!canExecute || busy || failed.length === 0}
            title={!canExecute ? 'Needs the editor role' : failed.length === 0 ? 'No step of this run failed' : `Build again: ${failed.join(', ')}`}
            onClick={() => void rerun()}
          >
            Re-run failed steps
          </button>
          <button type="button" className="dp-btn dp-btn-small" onClick={onClose}>
            Close
          </button>
        </div>
      </div>
      <ErrorBox error={run.error} onRetry={run.reload} />
      {run.data ? (
        <Table
          rows={run.data.models}
          rowKey={(m) => m.model}
          empty="This run built no model."
          columns={[
            { key: 'model', header: 'Step (model)' },
            { key: 'status', header: 'Status', render: (m) => <StatusBadge status={m.status} /> },
            { key: 'duration_ms', header: 'ms', align: 'right', render: (m) => String(Math.round(m.duration_ms)) },
            { key: 'finished_at', header: 'Finished', render: (m) => when(m.finished_at) },
            { key: 'error', header: 'Log', render: (m) => (m.error ? <pre className="dp-step-log">{m.error}</pre> : <span className="dp-muted">ok</span>) },
          ]}
        />
      ) : run.loading ? (
        <Loading />
      ) : null}
    </div>
  );
}
