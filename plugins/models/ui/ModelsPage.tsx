/**
 * Models: the project's file tree, an editor with conflict-safe save, create model, the DAG and
 * the full DAG as graphs (click a model to open it), a model's column lineage and impact as
 * graphs, check / diff / lint results, and transform with each model's status live
 * (GET /api/transform/events).
 * Routes: /models (DAG), /models/full, /models/runs, /models/m/<schema.name>, /models/f/<file path>.
 */
import { useCallback, useEffect, useMemo, useState } from 'react';
import { Link, Route, Routes, useLocation, useNavigate, useParams } from 'react-router-dom';
import { api, ApiError, Badge, Empty, ErrorBox, Field, FormDialog, Icon, Loading, seg, StatusBadge, Table, Tabs, useApi, useCan, useLineageMasks, usePersistentState, type PageProps } from '@dp/ui';
import { CodeEditor, CollaborativeEditor, editsTogether } from '@dp/ui/editor';
import { Graph, type GraphEdge, type GraphNode } from '@dp/ui/graph';
import { ModelDetails, PreviewPanel, RunDetail, type ModelOverview } from './ModelPanels';
import { OpsDag } from './OpsDag';

interface ModelInfo {
  name: string;
  schema: string;
  full_name: string;
  materialized: 'table' | 'view';
  depends_on: string[];
  path: string;
}

interface FileNode {
  name: string;
  path: string;
  type: 'file' | 'directory';
  children?: FileNode[];
}

type LiveStatus = Record<string, { status: string; error?: string; duration_ms?: number }>;

interface LiveRun {
  runId: string | null;
  running: boolean;
  models: LiveStatus;
}

/** Each model's status in the latest transform run, live from the server's event stream. */
function useTransformEvents(): LiveRun {
  const [run, setRun] = useState<LiveRun>({ runId: null, running: false, models: {} });
  useEffect(() => {
    const source = new EventSource('/api/transform/events');
    const on = (type: string, fn: (data: Record<string, unknown>) => void) => source.addEventListener(type, (e) => fn(JSON.parse((e as MessageEvent).data)));
    on('transform_start', (d) => setRun({ runId: String(d.run_id), running: true, models: {} }));
    on('model_start', (d) => setRun((r) => (r.runId === d.run_id ? { ...r, models: { ...r.models, [String(d.model)]: { status: 'running' } } } : r)));
    on('model_end', (d) =>
      setRun((r) => (r.runId === d.run_id ? { ...r, models: { ...r.models, [String(d.model)]: { status: String(d.status), error: d.error as string | undefined, duration_ms: d.duration_ms as number } } } : r)),
    );
    on('transform_end', (d) => setRun((r) => (r.runId === d.run_id ? { ...r, running: false } : r)));
    return () => source.close();
  }, []);
  return run;
}

export default function ModelsPage({ page }: PageProps) {
  const base = page.path;
  const live = useTransformEvents();
  const models = useApi((signal) => api.get<ModelInfo[]>('/api/models', { signal }), []);
  const files = useApi((signal) => api.get<{ children: FileNode[] }>('/api/files', { signal }), []);
  const [panel, setPanel] = useState<{ title: string; body: unknown } | null>(null);
  const [creating, setCreating] = useState(false);
  const refresh = useCallback(() => {
    models.reload();
    files.reload();
  }, [models, files]);

  return (
    <div className="dp-split">
      <aside className="dp-sidebar" aria-label="Project files">
        <ErrorBox error={files.error} onRetry={files.reload} />
        {files.data ? <FileTree nodes={files.data.children} base={base} models={models.data ?? []} /> : <Loading />}
      </aside>
      <section className="dp-grow dp-col dp-models-main">
        <Toolbar base={base} live={live} onResult={setPanel} onCreate={() => setCreating(true)} />
        {panel ? <ResultPanel title={panel.title} body={panel.body} onClose={() => setPanel(null)} /> : null}
        <Routes>
          <Route index element={<OpsDag base={base} live={live} full={false} />} />
          <Route path="full" element={<OpsDag base={base} live={live} full />} />
          <Route path="runs" element={<RunsView live={live} onResult={setPanel} />} />
          <Route path="m/:model" element={<ModelView base={base} models={models.data ?? null} live={live} onResult={setPanel} onSaved={refresh} />} />
          <Route path="f/*" element={<FileView onSaved={refresh} />} />
        </Routes>
      </section>
      <CreateModelDialog
        open={creating}
        onClose={() => setCreating(false)}
        onCreated={() => {
          setCreating(false);
          refresh();
        }}
        base={base}
      />
    </div>
  );
}

function Toolbar({ base, live, onResult, onCreate }: { base: string; live: LiveRun; onResult: (r: { title: string; body: unknown }) => void; onCreate: () => void }) {
  const location = useLocation();
  const navigate = useNavigate();
  const canWrite = useCan('write');
  const canExecute = useCan('execute');
  const [busy, setBusy] = useState<string | null>(null);
  const act = async (name: string, call: () => Promise<unknown>) => {
    setBusy(name);
    try {
      onResult({ title: name, body: await call() });
    } catch (e) {
      onResult({ title: name, body: e });
    } finally {
      setBusy(null);
    }
  };
  const tab = location.pathname.endsWith('/full') ? 'full' : location.pathname.endsWith('/runs') ? 'runs' : location.pathname === base || location.pathname === `${base}/` ? 'dag' : 'other';
  return (
    <div className="dp-row">
      <Tabs
        tabs={[
          { key: 'dag', label: 'DAG' },
          { key: 'full', label: 'Full DAG' },
          { key: 'runs', label: 'Runs' },
        ]}
        active={tab as 'dag'}
        onChange={(k) => navigate(k === 'dag' ? base : `${base}/${k}`)}
      />
      <div className="dp-toolbar" style={{ marginLeft: 'auto' }}>
        {live.running ? <Badge tone="warn">transform running…</Badge> : null}
        <button type="button" className="dp-btn" disabled={!canWrite} title={canWrite ? 'Create a model file' : 'Needs the editor role'} onClick={onCreate}>
          + New model
        </button>
        <button type="button" className="dp-btn dp-btn-primary" disabled={!canExecute || busy !== null || live.running} title={!canExecute ? 'Needs the editor role' : live.running ? 'A transform is running' : busy ? `${busy} is running` : 'Build every model in dependency order'} onClick={() => void act('Transform', () => api.post('/api/transform', {}))}>
          <Icon name="play" size={14} /> Transform all
        </button>
        <button type="button" className="dp-btn" disabled={!canExecute || busy !== null} title={!canExecute ? 'Needs the editor role' : busy ? `${busy} is running` : 'Validate models, run assertions, contracts and unit tests'} onClick={() => void act('Check', () => api.post('/api/check', {}))}>
          Check
        </button>
        <button type="button" className="dp-btn" disabled={!canExecute || busy !== null} title={!canExecute ? 'Needs the editor role' : busy ? `${busy} is running` : "Compare each model's SQL output with its table"} onClick={() => void act('Diff', () => api.post('/api/diff', {}))}>
          Diff
        </button>
        <button type="button" className="dp-btn" disabled={busy !== null} title={busy ? `${busy} is running` : 'Lint the model SQL'} onClick={() => void act('Lint', () => api.post('/api/lint', {}))}>
          Lint
        </button>
        {busy ? <span className="dp-muted">{busy}…</span> : null}
      </div>
    </div>
  );
}

/** The result of check, diff, lint or transform, as tables (or the API's error). */
function ResultPanel({ title, body, onClose }: { title: string; body: unknown; onClose: () => void }) {
  const content = (() => {
    if (body instanceof Error) return <ErrorBox error={body} />;
    const b = body as Record<string, any>;
    if (title === 'Check' || title === 'Check model') {
      const problems = [
        ...(b.validation?.models ?? []).flatMap((m: any) => [...m.errors.map((e: unknown) => ({ kind: 'error', model: m.model, text: typeof e === 'string' ? e : (e as any).message ?? JSON.stringify(e) })), ...m.warnings.map((w: unknown) => ({ kind: 'warning', model: m.model, text: typeof w === 'string' ? w : (w as any).message ?? JSON.stringify(w) }))]),
        ...(b.assertions?.results ?? []).filter((r: any) => !r.passed).map((r: any) => ({ kind: 'assertion', model: r.model, text: `${r.expression}: ${JSON.stringify(r.detail ?? {})}` })),
        ...(b.contracts?.results ?? []).filter((r: any) => !r.passed).map((r: any) => ({ kind: 'contract', model: r.model, text: r.contract_name + (r.error ? `: ${r.error}` : '') })),
      ];
      return (
        <>
          <div className="dp-row">
            <StatusBadge status={b.status} /> validation {b.validation?.passed ?? 0} passed, {b.validation?.failed ?? 0} failed · assertions {b.assertions?.passed ?? 0}/{b.assertions?.total ?? 0} · contracts {b.contracts?.passed ?? 0}/{b.contracts?.total ?? 0}
          </div>
          <Table rows={problems} columns={[{ key: 'kind', header: 'Kind' }, { key: 'model', header: 'Model' }, { key: 'text', header: 'Problem' }]} empty="No problems." />
        </>
      );
    }
    if (title === 'Lint') {
      return (
        <Table
          rows={b.findings ?? []}
          empty={`No findings in ${b.files ?? 0} files.`}
          columns={[
            { key: 'file', header: 'File', render: (f: any) => f.file ?? f.path },
            { key: 'line', header: 'Line', align: 'right' },
            { key: 'rule', header: 'Rule' },
            { key: 'message', header: 'Message' },
          ]}
        />
      );
    }
    if (title.startsWith('Diff')) {
      return (
        <Table
          rows={b.models ?? []}
          columns={[
            { key: 'model', header: 'Model' },
            { key: 'status', header: 'Status', render: (m: any) => <StatusBadge status={m.status} /> },
            { key: 'rows_before', header: 'Rows before', align: 'right' },
            { key: 'rows_after', header: 'Rows after', align: 'right' },
            { key: 'added', header: 'Added', align: 'right' },
            { key: 'removed', header: 'Removed', align: 'right' },
            { key: 'modified', header: 'Modified', align: 'right' },
            { key: 'schema_change', header: 'Schema change', render: (m: any) => (m.schema_change ? JSON.stringify(m.schema_change) : '') },
          ]}
        />
      );
    }
    if (title.startsWith('Transform') || title.startsWith('Build')) {
      return (
        <>
          <div className="dp-row">
            <StatusBadge status={b.status} /> {b.run_id} · {b.duration_ms} ms
          </div>
          <Table
            rows={b.results ?? []}
            columns={[
              { key: 'model', header: 'Model' },
              { key: 'status', header: 'Status', render: (r: any) => <StatusBadge status={r.status} /> },
              { key: 'duration_ms', header: 'ms', align: 'right' },
              { key: 'error', header: 'Error', render: (r: any) => r.error ?? '' },
            ]}
          />
        </>
      );
    }
    return <pre>{JSON.stringify(body, null, 2)}</pre>;
  })();
  return (
    <div className="dp-card dp-result-panel" role="region" aria-label={`${title} result`} data-testid="result-panel">
      <div className="dp-row">
        <strong>{title}</strong>
        <button type="button" className="dp-btn dp-btn-small" style={{ marginLeft: 'auto' }} onClick={onClose}>
          Close
        </button>
      </div>
      {content}
    </div>
  );
}

function FileTree({ nodes, base, models }: { nodes: FileNode[]; base: string; models: ModelInfo[] }) {
  const [open, setOpen] = usePersistentState<Record<string, boolean>>('models.tree', { transform: true });
  const byPath = useMemo(() => new Map(models.map((m) => [m.path, m.full_name])), [models]);
  const location = useLocation();
  const render = (list: FileNode[]) => (
    <ul className="dp-tree">
      {list.map((n) => {
        if (n.type === 'directory') {
          const expanded = open[n.path] ?? n.path.startsWith('transform');
          return (
            <li key={n.path}>
              <button type="button" className="dp-tree-node" aria-expanded={expanded} onClick={() => setOpen((o) => ({ ...o, [n.path]: !expanded }))}>
                {expanded ? '▾' : '▸'} {n.name}
              </button>
              {expanded && n.children ? render(n.children) : null}
            </li>
          );
        }
        const model = byPath.get(n.path);
        const to = model ? `${base}/m/${seg(model)}` : `${base}/f/${n.path.split('/').map(seg).join('/')}`;
        const active = decodeURIComponent(location.pathname) === decodeURIComponent(to);
        return (
          <li key={n.path}>
            <Link to={to} className={`dp-tree-leaf${active ? ' dp-tree-active' : ''}`} title={model ? `model ${model}` : n.path}>
              <Icon name={model ? 'graph' : 'file'} size={13} /> {n.name}
            </Link>
          </li>
        );
      })}
    </ul>
  );
  return render(nodes);
}

function RunsView({ live, onResult }: { live: LiveRun; onResult: (r: { title: string; body: unknown }) => void }) {
  const runs = useApi((signal) => api.get<Array<Record<string, unknown>>>('/api/transform/runs', { signal, query: { limit: 50 } }), [live.running]);
  const [open, setOpen] = useState<string | null>(null);
  if (runs.error) return <ErrorBox error={runs.error} onRetry={runs.reload} />;
  if (!runs.data) return <Loading />;
  return (
    <>
    {open ? (
      <RunDetail
        key={open}
        runId={open}
        onClose={() => setOpen(null)}
        onRerun={(body) => {
          onResult({ title: 'Transform (re-run failed steps)', body });
          runs.reload();
        }}
      />
    ) : null}
    <Table
      rows={runs.data}
      rowKey={(r) => String(r.run_id)}
      onRowClick={(r) => setOpen(String(r.run_id))}
      columns={[
        { key: 'run_id', header: 'Run' },
        { key: 'trigger', header: 'Trigger' },
        { key: 'status', header: 'Status', render: (r) => <StatusBadge status={String(r.status)} /> },
        { key: 'started_at', header: 'Started' },
        { key: 'duration_ms', header: 'ms', align: 'right' },
        { key: 'built', header: 'Built', align: 'right' },
        { key: 'skipped', header: 'Skipped', align: 'right' },
        { key: 'failed', header: 'Failed', align: 'right' },
      ]}
    />
    </>
  );
}

interface LoadedFile {
  path: string;
  content: string;
  language: string;
  sha256: string;
}

/** A file in the editor with conflict-safe save (base_sha256: a save over someone else's change is refused). */
function useEditableFile(path: string | null, onSaved: () => void) {
  const file = useApi((signal) => (path ? api.get<LoadedFile>(`/api/files/${path.split('/').map(seg).join('/')}`, { signal }) : Promise.resolve(null)), [path]);
  const [text, setText] = useState<string | null>(null);
  const [saveError, setSaveError] = useState<unknown>(null);
  const [saving, setSaving] = useState(false);
  const [savedAt, setSavedAt] = useState<string | null>(null);
  useEffect(() => {
    setText(file.data?.content ?? null);
    setSaveError(null);
  }, [file.data]);
  const dirty = text !== null && file.data != null && text !== file.data.content;
  const save = async (overwrite = false) => {
    if (!path || text === null || !file.data) return;
    setSaving(true);
    setSaveError(null);
    try {
      const r = await api.put<{ sha256: string }>(`/api/files/${path.split('/').map(seg).join('/')}`, overwrite ? { content: text } : { content: text, base_sha256: file.data.sha256 });
      file.setData({ ...file.data, content: text, sha256: r.sha256 });
      setSavedAt(new Date().toLocaleTimeString());
      onSaved();
    } catch (e) {
      setSaveError(e);
    } finally {
      setSaving(false);
    }
  };
  return { file, text, setText, dirty, save, saving, saveError, savedAt };
}

function EditorPane({ edit, language, readOnly }: { edit: ReturnType<typeof useEditableFile>; language: 'sql' | 'text'; readOnly: boolean }) {
  const conflict = edit.saveError instanceof ApiError && edit.saveError.code === 'file_conflict';
  return (
    <div className="dp-col">
      <div className="dp-row">
        <code>{edit.file.data?.path}</code>
        {edit.dirty ? <Badge tone="warn">unsaved</Badge> : edit.savedAt ? <Badge tone="ok">saved {edit.savedAt}</Badge> : null}
        <div className="dp-toolbar" style={{ marginLeft: 'auto' }}>
          <button type="button" className="dp-btn dp-btn-primary" disabled={readOnly || !edit.dirty || edit.saving} onClick={() => void edit.save()} title={readOnly ? 'Needs the editor role' : edit.saving ? 'Saving…' : !edit.dirty ? 'Nothing to save: no change since the last save' : 'Save (Ctrl/Cmd+S)'}>
            Save
          </button>
        </div>
      </div>
      {conflict ? (
        <div className="dp-error" role="alert">
          <strong>{(edit.saveError as ApiError).message}</strong>
          <button type="button" className="dp-btn dp-btn-small" onClick={() => edit.file.reload()}>
            Reload theirs (drop mine)
          </button>
          <button type="button" className="dp-btn dp-btn-small" onClick={() => void edit.save(true)}>
            Overwrite with mine
          </button>
        </div>
      ) : (
        <ErrorBox error={edit.saveError} />
      )}
      <div style={{ height: 300 }}>
        <CodeEditor value={edit.text ?? ''} onChange={edit.setText} onSave={() => void edit.save()} language={language} readOnly={readOnly} ariaLabel="File editor" />
      </div>
    </div>
  );
}

function FileView({ onSaved }: { onSaved: () => void }) {
  const params = useParams();
  const path = params['*'] ?? '';
  const canWrite = useCan('write');
  const edit = useEditableFile(editsTogether(path) ? null : path, onSaved);
  // Text files are edited together (live, presence, conflict-safe save); others are shown as before.
  if (editsTogether(path)) return <CollaborativeEditor key={path} path={path} language={path.endsWith('.sql') ? 'sql' : 'text'} readOnly={!canWrite} onSaved={onSaved} />;
  if (edit.file.error) return <ErrorBox error={edit.file.error} onRetry={edit.file.reload} />;
  if (!edit.file.data || edit.text === null) return <Loading />;
  return <EditorPane edit={edit} language={path.endsWith('.sql') ? 'sql' : 'text'} readOnly={!canWrite} />;
}

type ModelTab = 'lineage' | 'impact';

function ModelView({ base, models, live, onResult, onSaved }: { base: string; models: ModelInfo[] | null; live: LiveRun; onResult: (r: { title: string; body: unknown }) => void; onSaved: () => void }) {
  const { model: name = '' } = useParams();
  const model = models?.find((m) => m.full_name === name) ?? null;
  const [savedSha, setSavedSha] = useState('');
  const canWrite = useCan('write');
  const canExecute = useCan('execute');
  const [tab, setTab] = usePersistentState<ModelTab>('models.tab', 'lineage');
  const [building, setBuilding] = useState(false);
  const [lineageTick, setLineageTick] = useState(0);
  const [text, setText] = useState<string | null>(null);
  const overview = useApi((signal) => (name ? api.get<ModelOverview>(`/api/models/${seg(name)}/overview`, { signal }) : Promise.resolve(null)), [name, lineageTick, savedSha, live.running]);
  if (!models) return <Loading />;
  if (!model) return <ErrorBox error={new Error(`No model named ${name}`)} />;
  const status = live.models[model.full_name];
  const build = async (targets: string[], label: string, force = false) => {
    setBuilding(true);
    try {
      onResult({ title: label, body: await api.post('/api/transform', { targets, ...(force ? { force: true } : {}) }) });
      setLineageTick((t) => t + 1);
    } catch (e) {
      onResult({ title: label, body: e });
    } finally {
      setBuilding(false);
    }
  };
  return (
    <div className="dp-col" data-testid="model-view">
      <div className="dp-row">
        <h2 style={{ margin: 0 }}>{model.full_name}</h2>
        <Badge>{model.materialized}</Badge>
        {status ? <StatusBadge status={status.status} /> : null}
        {status?.error ? <span className="dp-error-code" style={{ color: 'var(--dp-bad)' }}>{status.error}</span> : null}
        <div className="dp-toolbar" style={{ marginLeft: 'auto' }}>
          <button type="button" className="dp-btn" disabled={!canExecute || building || live.running} title={!canExecute ? 'Needs the editor role' : live.running || building ? 'A transform is running' : 'Build this model (skipped when nothing changed)'} onClick={() => void build([model.full_name], `Build ${model.full_name}`)}>
            <Icon name="play" size={14} /> Build
          </button>
          <button type="button" className="dp-btn" disabled={!canExecute || building || live.running} title={!canExecute ? 'Needs the editor role' : live.running || building ? 'A transform is running' : 'Build this model and everything downstream of it'} onClick={() => void build([`${model.full_name}+`], `Build ${model.full_name} and downstream`)}>
            Build + downstream
          </button>
          <button type="button" className="dp-btn" disabled={!canExecute} title={canExecute ? "Compare the model's SQL output with its table" : 'Needs the editor role'} onClick={() => void api.post('/api/diff', { targets: [model.full_name] }).then((b) => onResult({ title: `Diff ${model.full_name}`, body: b }), (e) => onResult({ title: `Diff ${model.full_name}`, body: e }))}>
            Diff
          </button>
          <Link className="dp-btn" to="/sql" state={{ sql: `SELECT *\nFROM ${model.full_name}\nLIMIT 100` }}>
            Query
          </Link>
        </div>
      </div>
      <div className="dp-model-body">
        <div className="dp-col dp-grow">
          <CollaborativeEditor
            key={model.path}
            path={model.path}
            language="sql"
            readOnly={!canWrite}
            onChange={setText}
            onSaved={(sha256) => {
              setSavedSha(sha256);
              onSaved();
            }}
          />
          <PreviewPanel model={model.full_name} text={text} />
        </div>
        <ModelDetails model={model} sql={text ?? ''} overview={overview.data ?? null} building={building || live.running} onRebuild={() => void build([model.full_name], `Build ${model.full_name} (force)`, true)} />
      </div>
      <Tabs<ModelTab>
        tabs={[
          { key: 'lineage', label: 'Column lineage' },
          { key: 'impact', label: 'Impact' },
        ]}
        active={tab}
        onChange={setTab}
      />
      {tab === 'lineage' ? <LineageGraph key={`${model.full_name}:${lineageTick}:${savedSha}`} base={base} model={model.full_name} models={models} /> : <ImpactGraph key={model.full_name} base={base} model={model.full_name} />}
    </div>
  );
}

interface Lineage {
  model: string;
  columns: Record<string, Array<{ source_table: string; source_column: string }>>;
  method?: string;
}

function LineageGraph({ base, model, models }: { base: string; model: string; models: ModelInfo[] }) {
  const navigate = useNavigate();
  const lineage = useApi((signal) => api.get<Lineage>(`/api/lineage/${seg(model)}`, { signal }), [model]);
  // Masked columns (explicit and derived policies) carry a lock and a tooltip saying how.
  const maskOf = useLineageMasks();
  const graph = useMemo(() => {
    const nodes = new Map<string, GraphNode>();
    const edges: GraphEdge[] = [];
    for (const [column, sources] of Object.entries(lineage.data?.columns ?? {})) {
      const id = `${model}.${column}`;
      nodes.set(id, { id, label: column, sublabel: model, kind: 'selected', masked: maskOf(model, column)?.title });
      for (const s of sources) {
        const sid = `${s.source_table}.${s.source_column}`;
        nodes.set(sid, { id: sid, label: s.source_column, sublabel: s.source_table, kind: 'source', masked: maskOf(s.source_table, s.source_column)?.title });
        edges.push({ from: sid, to: id });
      }
    }
    return { nodes: [...nodes.values()], edges };
  }, [lineage.data, model, maskOf]);
  if (lineage.error) return <ErrorBox error={lineage.error} onRetry={lineage.reload} />;
  if (!lineage.data) return <Loading label="Tracing columns…" />;
  const modelNames = new Set(models.map((m) => m.full_name));
  return (
    <div data-testid="lineage-graph">
      <div className="dp-muted">
        Where each column of {model} comes from{lineage.data.method ? ` (${lineage.data.method})` : ''}. Click a source column to open its model.
      </div>
      <Graph
        nodes={graph.nodes}
        edges={graph.edges}
        height={Math.max(260, Math.min(640, graph.nodes.length * 34))}
        ariaLabel={`Column lineage of ${model}`}
        onNodeClick={(n) => {
          const table = n.sublabel ?? '';
          if (table !== model && modelNames.has(table)) navigate(`${base}/m/${seg(table)}`);
        }}
      />
    </div>
  );
}

interface Impact {
  model: string;
  downstream_models: string[];
  affected_columns: Array<{ model: string; column: string }>;
  impact_chain: Record<string, string[]>;
}

function ImpactGraph({ base, model }: { base: string; model: string }) {
  const navigate = useNavigate();
  const impact = useApi((signal) => api.get<Impact>(`/api/impact/${seg(model)}`, { signal }), [model]);
  const graph = useMemo(() => {
    const d = impact.data;
    if (!d) return { nodes: [], edges: [] };
    const cols = new Map<string, string[]>();
    for (const c of d.affected_columns) cols.set(c.model, [...(cols.get(c.model) ?? []), c.column]);
    const ids = new Set([model, ...d.downstream_models, ...Object.keys(d.impact_chain), ...Object.values(d.impact_chain).flat()]);
    const nodes: GraphNode[] = [...ids].map((id) => ({ id, label: id, sublabel: id === model ? 'changed here' : (cols.get(id) ?? []).join(', ') || 'no column affected', kind: id === model ? 'selected' : 'default' }));
    const edges: GraphEdge[] = Object.entries(d.impact_chain).flatMap(([from, tos]) => tos.map((to) => ({ from, to })));
    return { nodes, edges };
  }, [impact.data, model]);
  if (impact.error) return <ErrorBox error={impact.error} onRetry={impact.reload} />;
  if (!impact.data) return <Loading />;
  return (
    <div data-testid="impact-graph">
      <div className="dp-muted">
        {impact.data.downstream_models.length} downstream models, {impact.data.affected_columns.length} affected columns.
      </div>
      {graph.nodes.length > 1 ? <Graph nodes={graph.nodes} edges={graph.edges} height={320} ariaLabel={`Impact of ${model}`} onNodeClick={(n) => n.id !== model && navigate(`${base}/m/${seg(n.id)}`)} /> : <Empty>Nothing depends on {model}.</Empty>}
    </div>
  );
}

function CreateModelDialog({ open, onClose, onCreated, base }: { open: boolean; onClose: () => void; onCreated: (full: string) => void; base: string }) {
  const navigate = useNavigate();
  const [name, setName] = useState('');
  const [schema, setSchema] = useState('marts');
  const [materialized, setMaterialized] = useState<'table' | 'view'>('table');
  const [sql, setSql] = useState('SELECT 1 AS id');
  const submit = async () => {
    await api.post('/api/models/create', { name, schema_name: schema, materialized, sql });
    const full = `${schema}.${name}`;
    onCreated(full);
    navigate(`${base}/m/${seg(full)}`);
  };
  return (
    <FormDialog
      open={open}
      title="New model"
      onClose={onClose}
      action="Create"
      actionTitle="Create the model file"
      busyTitle="Creating…"
      blocked={!name || !schema ? 'Give the model a name and a schema' : null}
      onSubmit={submit}
    >
      <Field label="Name">
        <input value={name} onChange={(e) => setName(e.target.value)} placeholder="orders_by_country" autoFocus />
      </Field>
      <Field label="Schema">
        <input value={schema} onChange={(e) => setSchema(e.target.value)} />
      </Field>
      <Field label="Materialized">
        <select value={materialized} onChange={(e) => setMaterialized(e.target.value as 'table' | 'view')}>
          <option value="table">table</option>
          <option value="view">view</option>
        </select>
      </Field>
      <Field label="SQL">
        <textarea rows={6} value={sql} onChange={(e) => setSql(e.target.value)} />
      </Field>
    </FormDialog>
  );
}
