/**
 * Streams: start a stream (or a transform), follow each step and model live from the pipeline
 * event stream (GET /api/stream/events), cancel, the run history of streams and scripts with a
 * durations chart (a run opens to its steps and "Re-run failed steps", or to its script output), and
 * the scheduler with each schedule's next run.
 * Routes: /streams (streams and the live run), /streams/history, /streams/scheduler.
 */
import { useEffect, useMemo, useState } from 'react';
import { Route, Routes, useLocation, useNavigate } from 'react-router-dom';
import { api, Badge, DetailView, Empty, ErrorBox, Loading, PageHeader, seg, StatusBadge, Table, Tabs, useApi, useCan, type PageProps } from '@dp/ui';
import { LineChart } from '@dp/ui/chart';
import type { HistoryRecord, SchedulerState } from '../api-types';

interface StreamInfo {
  name: string;
  description: string;
  schedule: string | null;
  retries: number;
  retry_delay: number;
  steps: Array<Record<string, string[]>>;
  next_run: string | null;
}

interface Active {
  running: boolean;
  status: string;
  stream_name: string | null;
  operation_label: string | null;
  started_at: string | null;
  duration_seconds: number | null;
  total_events: number;
}



interface LiveStep {
  index: number;
  action: string;
  targets: string[];
  status: string;
  attempt: number;
  duration_ms?: number;
  error?: string;
}

interface LiveModel {
  model: string;
  status: string;
  duration_ms?: number;
  error?: string;
}

interface LiveRun {
  runId: string | null;
  stream: string | null;
  status: string;
  steps: LiveStep[];
  models: LiveModel[];
  error?: string;
}

const EMPTY_RUN: LiveRun = { runId: null, stream: null, status: 'idle', steps: [], models: [] };

/** The running (or last) pipeline, kept up to date from the server's event stream. */
function usePipelineEvents(): LiveRun {
  const [run, setRun] = useState<LiveRun>(EMPTY_RUN);
  useEffect(() => {
    const source = new EventSource('/api/stream/events');
    // SPEC names one pipeline event `error`, which is also the name of EventSource's own
    // connection-error event (no data): only events with data are pipeline events.
    const on = (type: string, fn: (d: Record<string, any>) => void) =>
      source.addEventListener(type, (e) => {
        const data = (e as MessageEvent).data;
        if (typeof data === 'string') fn(JSON.parse(data));
      });
    const mine = (r: LiveRun, d: Record<string, any>) => r.runId === d.run_id;
    on('start', (d) => setRun({ runId: d.run_id, stream: d.stream, status: 'running', steps: [], models: [] }));
    on('step_start', (d) =>
      setRun((r) => {
        if (!mine(r, d)) return r;
        const step: LiveStep = { index: d.step, action: d.action, targets: d.targets, status: 'running', attempt: d.attempt };
        return { ...r, steps: [...r.steps.filter((s) => s.index !== d.step), step].sort((a, b) => a.index - b.index) };
      }),
    );
    on('step_end', (d) =>
      setRun((r) => (mine(r, d) ? { ...r, steps: r.steps.map((s) => (s.index === d.step ? { ...s, status: d.status, duration_ms: d.duration_ms, error: d.error } : s)) } : r)),
    );
    on('model_start', (d) => setRun((r) => (mine(r, d) ? { ...r, models: [...r.models.filter((m) => m.model !== d.model), { model: d.model, status: 'running' }] } : r)));
    // A model the transform skips ends without starting.
    on('model_end', (d) =>
      setRun((r) => (mine(r, d) ? { ...r, models: [...r.models.filter((m) => m.model !== d.model), { model: d.model, status: d.status, duration_ms: d.duration_ms, error: d.error }] } : r)),
    );
    const end = (d: Record<string, any>) => setRun((r) => (mine(r, d) ? { ...r, status: d.status, error: d.error } : r));
    on('complete', end);
    on('error', end);
    return () => source.close();
  }, []);
  return run;
}

export default function StreamsPage({ page }: PageProps) {
  const base = page.path;
  const location = useLocation();
  const navigate = useNavigate();
  const live = usePipelineEvents();
  const tab = location.pathname.endsWith('/history') ? 'history' : location.pathname.endsWith('/scheduler') ? 'scheduler' : 'streams';
  return (
    <>
      <PageHeader title={page.title} subtitle="Pipelines of ingest, seed, transform and export steps">
        <CancelButton live={live} />
      </PageHeader>
      <Tabs
        tabs={[
          { key: 'streams', label: 'Streams' },
          { key: 'history', label: 'History' },
          { key: 'scheduler', label: 'Scheduler' },
        ]}
        active={tab}
        onChange={(k) => navigate(k === 'streams' ? base : `${base}/${k}`)}
      />
      <Routes>
        <Route index element={<StreamsView live={live} />} />
        <Route path="history" element={<HistoryView live={live} />} />
        <Route path="scheduler" element={<SchedulerView live={live} />} />
      </Routes>
    </>
  );
}

function CancelButton({ live }: { live: LiveRun }) {
  const canExecute = useCan('execute');
  const [error, setError] = useState<unknown>(null);
  if (live.status !== 'running') return null;
  return (
    <>
      <button
        type="button"
        className="dp-btn"
        disabled={!canExecute}
        title={canExecute ? 'Stop at the next step boundary; the running script is aborted' : 'Needs the editor role'}
        onClick={() => api.post('/api/stream/cancel', {}).catch(setError)}
      >
        Cancel {live.stream}
      </button>
      <ErrorBox error={error} />
    </>
  );
}

function StreamsView({ live }: { live: LiveRun }) {
  const canExecute = useCan('execute');
  const streams = useApi((signal) => api.get<{ streams: StreamInfo[] }>('/api/streams', { signal }), []);
  const active = useApi((signal) => api.get<Active>('/api/stream/active', { signal }), [live.status]);
  const [notice, setNotice] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [transform, setTransform] = useState<{ running: boolean; results?: LiveModel[]; status?: string }>({ running: false });

  const start = async (name: string) => {
    setError(null);
    try {
      const r = await api.post<{ status: string }>(`/api/stream/${seg(name)}/start`, {});
      setNotice(r.status === 'started' ? `Started ${name}` : `Another stream is running; ${name} was not started`);
    } catch (e) {
      setError(e);
    }
  };
  const runTransform = async () => {
    setError(null);
    setTransform({ running: true });
    try {
      const r = await api.post<{ status: string; results: Array<{ model: string; status: string; duration_ms: number; error?: string }> }>('/api/transform', {});
      setTransform({ running: false, status: r.status, results: r.results });
    } catch (e) {
      setTransform({ running: false });
      setError(e);
    }
  };

  const running = live.status === 'running' || active.data?.running === true;
  return (
    <div className="dp-col">
      <ErrorBox error={streams.error ?? error} onRetry={streams.reload} />
      {notice ? <div role="status" className="dp-muted">{notice}</div> : null}
      {streams.data ? (
        <Table
          rows={streams.data.streams}
          rowKey={(s) => s.name}
          empty="No streams in project.yml"
          columns={[
            { key: 'name', header: 'Stream', render: (s) => <strong>{s.name}</strong> },
            { key: 'description', header: 'Description' },
            { key: 'steps', header: 'Steps', render: (s) => s.steps.map((st) => Object.entries(st).map(([a, t]) => `${a} [${t.join(', ')}]`)[0]).join(' → ') },
            { key: 'schedule', header: 'Schedule', render: (s) => s.schedule ?? '—' },
            { key: 'next_run', header: 'Next run', render: (s) => (s.next_run ? new Date(s.next_run).toLocaleString() : '—') },
            {
              key: 'run',
              header: '',
              render: (s) => (
                <button type="button" className="dp-btn dp-btn-primary" disabled={!canExecute || running} title={canExecute ? `Run ${s.name} now` : 'Needs the editor role'} onClick={() => void start(s.name)}>
                  Run {s.name}
                </button>
              ),
            },
          ]}
        />
      ) : (
        <Loading />
      )}
      <div className="dp-toolbar">
        <button type="button" className="dp-btn" disabled={!canExecute || running || transform.running} title={canExecute ? 'Build every model (dp transform)' : 'Needs the editor role'} onClick={() => void runTransform()}>
          {transform.running ? 'Transforming…' : 'Run transform'}
        </button>
        {transform.status ? <StatusBadge status={transform.status} /> : null}
      </div>
      {transform.results ? <ModelTable models={transform.results} /> : null}
      <LivePanel live={live} />
    </div>
  );
}

function LivePanel({ live }: { live: LiveRun }) {
  if (!live.runId) return <Empty>No stream has run since this page opened. Run one to follow it here.</Empty>;
  return (
    <section aria-label="Live run" className="dp-col">
      <h2>
        {live.stream} <StatusBadge status={live.status} />
      </h2>
      {live.error ? <div className="dp-error" role="alert">{live.error}</div> : null}
      <Table
        rows={live.steps}
        rowKey={(s) => String(s.index)}
        columns={[
          { key: 'index', header: '#', render: (s) => s.index + 1, align: 'right' },
          { key: 'action', header: 'Step', render: (s) => `${s.action} [${s.targets.join(', ')}]` },
          { key: 'status', header: 'Status', render: (s) => <StatusBadge status={s.status} /> },
          { key: 'attempt', header: 'Attempt', align: 'right' },
          { key: 'duration_ms', header: 'ms', align: 'right', render: (s) => (s.duration_ms ?? '') as never },
          { key: 'error', header: 'Error', render: (s) => s.error ?? '' },
        ]}
      />
      {live.models.length ? <ModelTable models={live.models} /> : null}
    </section>
  );
}

function ModelTable({ models }: { models: LiveModel[] }) {
  return (
    <Table
      rows={models}
      rowKey={(m) => m.model}
      columns={[
        { key: 'model', header: 'Model' },
        { key: 'status', header: 'Status', render: (m) => <StatusBadge status={m.status} /> },
        { key: 'duration_ms', header: 'ms', align: 'right', render: (m) => (m.duration_ms === undefined ? '' : Math.round(m.duration_ms)) as never },
        { key: 'error', header: 'Error', render: (m) => m.error ?? '' },
      ]}
    />
  );
}

function HistoryView({ live }: { live: LiveRun }) {
  const history = useApi((signal) => api.get<{ runs: HistoryRecord[] }>('/api/history', { signal, query: { limit: 200 } }), [live.status]);
  const names = useMemo(() => [...new Set((history.data?.runs ?? []).filter((r) => r.kind === 'stream').map((r) => r.name))].sort(), [history.data]);
  const [chosen, setChosen] = useState<string | null>(null);
  const [open, setOpen] = useState<HistoryRecord | null>(null);
  const name = chosen ?? names[0] ?? null;
  const series = useMemo(() => {
    const runs = (history.data?.runs ?? []).filter((r) => r.kind === 'stream' && r.name === name).reverse();
    return { times: runs.map((r) => Date.parse(r.started_at) / 1000), values: runs.map((r) => r.duration_ms / 1000) };
  }, [history.data, name]);
  if (history.error) return <ErrorBox error={history.error} onRetry={history.reload} />;
  if (!history.data) return <Loading />;
  return (
    <div className="dp-col">
      {names.length ? (
        <label className="dp-toolbar">
          Durations of{' '}
          <select value={name ?? ''} onChange={(e) => setChosen(e.target.value)} aria-label="Stream">
            {names.map((n) => (
              <option key={n}>{n}</option>
            ))}
          </select>
        </label>
      ) : null}
      {series.times.length ? <LineChart times={series.times} values={series.values} label="duration (s)" /> : null}
      {open ? <OpenedRun key={open.run_id} runId={open.run_id} onClose={() => setOpen(null)} /> : null}
      <Table
        rows={history.data.runs}
        rowKey={(r) => r.run_id}
        onRowClick={setOpen}
        empty="No stream or script has run yet"
        columns={[
          { key: 'started_at', header: 'Started', render: (r) => new Date(r.started_at).toLocaleString() },
          { key: 'kind', header: 'Kind' },
          { key: 'name', header: 'Stream or script' },
          { key: 'trigger', header: 'Trigger', render: (r) => <Badge>{r.trigger}</Badge> },
          { key: 'status', header: 'Status', render: (r) => <StatusBadge status={r.status} /> },
          { key: 'duration_ms', header: 'Duration (s)', align: 'right', render: (r) => (r.duration_ms / 1000).toFixed(1) },
          { key: 'error', header: 'Error', render: (r) => r.error ?? '' },
        ]}
      />
    </div>
  );
}

/**
 * One run opened (GET /api/history/:run_id): status, timing and error; a stream run's steps with
 * "Re-run failed steps" (a new run from its first failed step), a script run's output.
 */
function OpenedRun({ runId, onClose }: { runId: string; onClose: () => void }) {
  const run = useApi((signal) => api.get<HistoryRecord>(`/api/history/${seg(runId)}`, { signal }), [runId]);
  const canExecute = useCan('execute');
  const [rerun, setRerun] = useState<{ busy: boolean; started?: string; error?: unknown }>({ busy: false });
  const r = run.data;
  const failed = r?.kind === 'stream' && r.status !== 'success' && r.status !== 'running';
  const rerunFailed = async () => {
    setRerun({ busy: true });
    try {
      const answer = await api.post<{ status: string; run_id?: string; stream_name: string }>(`/api/history/${seg(runId)}/rerun-failed`);
      setRerun({ busy: false, started: answer.status === 'started' ? `Started run ${answer.run_id}` : `${answer.stream_name} is running: try again when it ends` });
    } catch (e) {
      setRerun({ busy: false, error: e });
    }
  };
  const label = r ? (r.kind === 'stream' ? `Steps of ${r.name}` : `Run of ${r.name}`) : `Run ${runId}`;
  return (
    <div className="dp-card" role="region" aria-label={label} data-testid="opened-run">
      <div className="dp-row">
        {r ? (
          <>
            <strong>
              {r.name} · {new Date(r.started_at).toLocaleString()}
            </strong>{' '}
            <StatusBadge status={r.status} />{' '}
            <span className="dp-muted">
              {r.trigger} · {(r.duration_ms / 1000).toFixed(1)} s
            </span>
          </>
        ) : (
          <strong>Run {runId}</strong>
        )}
        <div className="dp-toolbar" style={{ marginLeft: 'auto' }}>
          {r?.kind === 'stream' ? (
            <button
              type="button"
              className="dp-btn"
              disabled={!canExecute || rerun.busy || !failed}
              title={!canExecute ? 'Needs the editor role' : !failed ? 'No step of this run failed' : 'Run the stream again from its first failed step'}
              onClick={() => void rerunFailed()}
            >
              Re-run failed steps
            </button>
          ) : null}
          <button type="button" className="dp-btn dp-btn-small" onClick={onClose}>
            Close
          </button>
        </div>
      </div>
      {rerun.started ? <div role="status">{rerun.started}</div> : null}
      <ErrorBox error={rerun.error ?? run.error} onRetry={run.reload} />
      {!r ? (
        run.loading ? <Loading /> : null
      ) : (
        <>
          {r.error ? <pre className="dp-step-log">{r.error}</pre> : null}
          {r.kind === 'stream' ? (
            <DetailView value={r.steps ?? null} label={label} />
          ) : r.output?.length ? (
            <pre className="dp-step-log" aria-label={`Output of ${r.name}`}>
              {r.output.join('\n')}
            </pre>
          ) : (
            <Empty>{r.output_hidden ? 'The output of scripts shows to editors and admins.' : r.output ? 'The script printed nothing.' : 'No output was kept for this run.'}</Empty>
          )}
        </>
      )}
    </div>
  );
}

function SchedulerView({ live }: { live: LiveRun }) {
  const scheduler = useApi((signal) => api.get<SchedulerState>('/api/scheduler', { signal }), [live.status]);
  if (scheduler.error) return <ErrorBox error={scheduler.error} onRetry={scheduler.reload} />;
  if (!scheduler.data) return <Loading />;
  return (
    <div className="dp-col">
      <div>
        Scheduler <StatusBadge status={scheduler.data.running ? 'running' : 'stopped'} />
      </div>
      <Table
        rows={scheduler.data.schedules}
        rowKey={(s) => s.name}
        empty="Nothing is scheduled (a stream's schedule: in project.yml, a connector's schedule)"
        columns={[
          { key: 'name', header: 'Schedule' },
          { key: 'kind', header: 'Kind' },
          { key: 'cron', header: 'Cron', render: (s) => <code>{s.cron}</code> },
          { key: 'next_run', header: 'Next run', render: (s) => (s.next_run ? new Date(s.next_run).toLocaleString() : '—') },
          { key: 'last_status', header: 'Last', render: (s) => (s.last_status ? <StatusBadge status={s.last_status} /> : '—') },
          { key: 'error', header: 'Problem', render: (s) => (s.error ? <Badge tone="bad" title={s.error}>{s.error}</Badge> : '') },
        ]}
      />
    </div>
  );
}
