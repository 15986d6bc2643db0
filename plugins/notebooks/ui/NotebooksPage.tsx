/**
 * Notebooks: the list of notebooks, and one notebook edited together. The open notebook is the
 * shared Yjs document of /ws/collaborate (cells: a Y.Array of Y.Map {id, type, source: Y.Text});
 * each cell's CodeMirror is bound to its Y.Text with y-codemirror.next, so everyone's typing and
 * cursors show live. Adding, moving and deleting cells are array operations on the same document.
 * Running a cell saves the document, then runs the saved cell (POST …/execute).
 * Routes: /notebooks (the list), /notebooks/<path of the .dpnb> (one notebook).
 */
import { useEffect, useMemo, useReducer, useRef, useState } from 'react';
import { Route, Routes, useNavigate, useParams } from 'react-router-dom';
import * as Y from 'yjs';
import { basicSetup } from 'codemirror';
import { sql, PostgreSQL } from '@codemirror/lang-sql';
import { EditorState, type Extension } from '@codemirror/state';
import { EditorView } from '@codemirror/view';
import { collaborationExtensions, editorTheme, usePeers } from '@dp/ui/editor';
import { api, ApiError, Badge, Empty, ErrorBox, Field, FormDialog, formatValue, Loading, PageHeader, ResultsGrid, seg, Table, useApi, useCan, useSession, type PageProps } from '@dp/ui';
import ReactMarkdown from 'react-markdown';
import remarkGfm from 'remark-gfm';
import { ResultChart } from '@dp/ui/chart';
import type { CellResult, CellErrorDetails, CellType, NotebookList, NotebookSummary, SharedOutputs } from '../api-types';
import { CollaborationClient } from '../collaboration/client';
import { CELL_TYPES, NOTEBOOK_CELLS } from '../collaboration/protocol';
import './notebooks.css';

export default function NotebooksPage({ page }: PageProps) {
  return (
    <Routes>
      <Route index element={<NotebookIndex title={page.title} />} />
      <Route path="*" element={<NotebookRoute />} />
    </Routes>
  );
}

function NotebookIndex({ title }: { title: string }) {
  const list = useApi((signal) => api.get<NotebookList>('/api/notebooks', { signal }), []);
  const navigate = useNavigate();
  const canWrite = useCan('write');
  const [creating, setCreating] = useState(false);
  return (
    <div className="dp-page">
      <PageHeader title={title} subtitle="Open a notebook to edit it together: everyone's edits and cursors show live.">
        <button type="button" className="dp-btn dp-btn-primary" disabled={!canWrite} title={canWrite ? 'Create a notebook in notebooks/' : 'Needs the editor role'} onClick={() => setCreating(true)}>
          + New notebook
        </button>
      </PageHeader>
      <NewNotebookDialog open={creating} existing={(list.data?.notebooks ?? []).map((n) => n.path)} onClose={() => setCreating(false)} onCreated={(path) => navigate(path)} />
      <ErrorBox error={list.error} onRetry={list.reload} />
      {list.data ? (
        <Table<NotebookSummary>
          rows={list.data.notebooks}
          rowKey={(n) => n.path}
          onRowClick={(n) => navigate(n.path)}
          empty="No notebooks yet: .dpnb files under notebooks/, ingest/ or export/."
          columns={[
            { key: 'title', header: 'Notebook', render: (n) => <a href={`#${n.path}`} onClick={(e) => e.preventDefault()}>{n.title}</a> },
            { key: 'path', header: 'File', render: (n) => <code>{n.path}</code> },
            { key: 'cell_count', header: 'Cells', align: 'right' },
            { key: 'modified', header: 'Modified', render: (n) => new Date(n.modified).toLocaleString() },
            { key: 'valid', header: '', render: (n) => (n.valid ? null : <Badge tone="bad" title={n.error}>invalid</Badge>) },
          ]}
        />
      ) : (
        <Loading />
      )}
    </div>
  );
}

/** Creates notebooks/<name>.dpnb with a heading and an SQL cell, then opens it. */
function NewNotebookDialog({ open, existing, onClose, onCreated }: { open: boolean; existing: string[]; onClose: () => void; onCreated: (path: string) => void }) {
  const [name, setName] = useState('');
  const valid = /^[A-Za-z0-9_-]+$/.test(name);
  const create = async () => {
    const path = `notebooks/${name}.dpnb`;
    if (existing.includes(path)) throw new Error(`${path} exists already: open it from the list`);
    await api.put(`/api/notebooks/${seg('notebooks')}/${seg(`${name}.dpnb`)}`, {
      cells: [
        { type: 'markdown', source: `# ${name}` },
        { type: 'sql', source: 'SELECT 1 AS answer' },
      ],
    });
    onCreated(path);
  };
  return (
    <FormDialog
      open={open}
      title="New notebook"
      onClose={onClose}
      action="Create"
      actionTitle="Create notebooks/<name>.dpnb"
      busyTitle="Creating…"
      blocked={valid ? null : 'Name it with letters, digits, _ or -'}
      onSubmit={create}
    >
      <Field label="Name">
        <input value={name} onChange={(e) => setName(e.target.value)} placeholder="explore_orders" autoFocus aria-label="Notebook name" />
      </Field>
    </FormDialog>
  );
}

/** One CollaborationClient per open notebook, re-rendering on its state changes. */
function useCollaboration(path: string, userName: string) {
  const client = useMemo(() => {
    const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
    return new CollaborationClient(`${scheme}://${location.host}/ws/collaborate?doc=${encodeURIComponent(path)}`);
  }, [path]);
  useEffect(() => {
    // The server shows its own name, role and colour for this socket (the name here counts without auth only).
    client.awareness.setLocalStateField('user', { name: userName });
    return () => client.destroy();
  }, [client, userName]);
  const [, setVersion] = useState(0);
  useEffect(() => client.onChange(() => setVersion((v) => v + 1)), [client]);
  return client;
}

/** Re-renders on changes of a Yjs type (shallow, or deep for nested changes) and returns `read()`. `any`: Yjs types its event handlers per type. */
function useY<T>(type: Y.AbstractType<any>, read: () => T, deep = false): T {
  const [, changed] = useReducer((n: number) => n + 1, 0);
  useEffect(() => {
    const handler = () => changed();
    if (deep) type.observeDeep(handler);
    else type.observe(handler);
    // A change between the render and this subscription (the first sync) is caught here.
    changed();
    return () => (deep ? type.unobserveDeep(handler) : type.unobserve(handler));
  }, [type, deep]);
  return read();
}

function NotebookRoute() {
  const path = useParams()['*'] ?? '';
  return <NotebookEditor key={path} path={path} />;
}

function NotebookEditor({ path }: { path: string }) {
  const session = useSession();
  const navigate = useNavigate();
  const userName = session.user.display_name || session.user.username || 'anonymous';
  const client = useCollaboration(path, userName);
  const cells = client.doc.getArray<Y.Map<unknown>>(NOTEBOOK_CELLS);
  const cellList = useY(cells, () => cells.toArray());
  const others = usePeers(client).map((peer) => peer.name);
  const readOnly = client.access !== 'read-write';
  const [saveState, setSaveState] = useState<{ at: Date } | { error: unknown } | null>(null);
  const [newType, setNewType] = useState<CellType>('sql');
  const canExecute = useCan('execute');
  // Each cell's run (by index), the notebook's shared execution counter, and what others ran.
  const [runs, setRuns] = useState<Record<number, RunState>>({});
  const [counter, setCounter] = useState(0);
  const [runningAll, setRunningAll] = useState(false);
  const notebookUrl = `/api/notebooks/${path.split('/').map(seg).join('/')}`;
  const loadShared = async () => {
    const shared = await api.get<SharedOutputs>(`/api/notebooks/outputs/${path.split('/').map(seg).join('/')}`).catch(() => null);
    if (!shared) return;
    setCounter((c) => Math.max(c, shared.execution_count));
    setRuns((current) => {
      const next = { ...current };
      for (const o of shared.outputs) {
        const mine = current[o.cell_index];
        const count = mine && 'count' in mine ? mine.count : 0;
        if (o.execution_count <= count || (mine && 'running' in mine)) continue;
        next[o.cell_index] = o.withheld || !o.result ? { withheld: true, by: o.by, count: o.execution_count } : { result: o.result, by: o.by, count: o.execution_count };
      }
      return next;
    });
  };
  // Outputs of runs before this page opened, then each time a collaborator says it ran a cell.
  useEffect(() => {
    void loadShared();
    let last = '';
    const heard = () => {
      const ran = [...client.awareness.getStates().entries()]
        .filter(([id]) => id !== client.doc.clientID)
        .map(([, state]) => (state as { ran?: { count?: number } }).ran?.count ?? 0)
        .join(',');
      if (ran !== last) {
        last = ran;
        void loadShared();
      }
    };
    client.awareness.on('change', heard);
    return () => client.awareness.off('change', heard);
    // loadShared reads only state setters and the path.
  }, [client, path]);

  /** Runs one cell (saving the shared document first unless told not to); resolves to success. */
  const runCell = async (index: number, saveFirst = true): Promise<boolean> => {
    setRuns((r) => ({ ...r, [index]: { running: true } }));
    try {
      // The server runs the saved notebook: save the shared document first (editors only).
      if (saveFirst && !readOnly) await client.save();
      const result = await api.post<CellResult & { execution_count?: number }>(`${notebookUrl}/execute`, { cell_index: index });
      const count = result.execution_count ?? 0;
      setCounter((c) => Math.max(c, count));
      setRuns((r) => ({ ...r, [index]: { result, count } }));
      // Collaborators hear of the run and read its output (as their role may see it).
      client.awareness.setLocalStateField('ran', { cell: index, count });
      return true;
    } catch (e) {
      setRuns((r) => ({ ...r, [index]: { error: e } }));
      return false;
    }
  };

  /** Runs the cells from `from` to the end in order, stopping at the first that fails. */
  const runFrom = async (from: number) => {
    setRunningAll(true);
    try {
      if (!readOnly) await client.save();
      for (let i = from; i < cells.length; i++) {
        const cell = cells.get(i);
        if (cell.get('type') === 'markdown' || !String(cell.get('source') ?? '').trim()) continue;
        if (!(await runCell(i, false))) break;
      }
    } catch (e) {
      setSaveState({ error: e });
    } finally {
      setRunningAll(false);
    }
  };
  const needsExecute = cellList.some((c) => c.get('type') === 'code' || c.get('type') === 'ingest') && !canExecute;

  const save = async () => {
    try {
      await client.save();
      setSaveState({ at: new Date() });
    } catch (e) {
      setSaveState({ error: e });
    }
  };

  const addCell = (at: number) => {
    const cell = new Y.Map<unknown>();
    cell.set('id', '');
    cell.set('type', newType);
    cell.set('source', new Y.Text());
    cells.insert(at, [cell]);
  };

  /** Yjs arrays have no move: the cell is re-created at its new place in one transaction. */
  const moveCell = (from: number, to: number) => {
    if (to < 0 || to >= cells.length) return;
    client.doc.transact(() => {
      const old = cells.get(from);
      const copy = new Y.Map<unknown>();
      copy.set('id', old.get('id') ?? '');
      copy.set('type', old.get('type') ?? 'code');
      copy.set('source', new Y.Text(String(old.get('source') ?? '')));
      cells.delete(from, 1);
      cells.insert(to, [copy]);
    });
  };

  const status = client.error ? null : client.closed ? <Badge tone="bad">disconnected</Badge> : client.synced ? <Badge tone="ok">live</Badge> : <Badge>connecting…</Badge>;
  return (
    <div className="dp-page dp-notebook">
      <PageHeader
        title={path.split('/').pop() ?? path}
        subtitle={<code>{path}</code>}
      >
        {status}
        {client.access === 'read-only' ? <Badge tone="warn" title="Your role may read but not change this notebook">read-only</Badge> : null}
        <span className="dp-muted" data-testid="notebook-editors">
          {others.length ? `also here: ${others.join(', ')}` : 'nobody else here'}
        </span>
        <button className="dp-btn" onClick={() => navigate('..')}>All notebooks</button>
        <span className="dp-muted" data-testid="execution-count" title="Cells run in this notebook on this server, by everyone">
          runs: {counter}
        </span>
        <button
          className="dp-btn"
          onClick={() => void runFrom(0)}
          disabled={runningAll || !client.synced || needsExecute}
          title={runningAll ? 'Running…' : !client.synced ? 'Joining the notebook…' : needsExecute ? 'Code cells need the editor role' : 'Save, then run every cell top to bottom (stops at the first error)'}
        >
          Run all
        </button>
        <button
          className="dp-btn dp-btn-primary"
          onClick={save}
          disabled={readOnly || !client.synced}
          title={readOnly ? 'Your role may read but not change this notebook' : !client.synced ? 'Joining the notebook…' : 'Save the notebook (Ctrl/Cmd+S)'}
        >
          Save
        </button>
      </PageHeader>
      {client.error ? <ErrorBox error={new ApiError(client.closed ? client.closed.code - 4000 : 400, client.error.code, client.error.message, client.error.details)} /> : null}
      {saveState && 'error' in saveState ? <ErrorBox error={saveState.error} /> : saveState ? <span className="dp-muted" role="status">Saved at {saveState.at.toLocaleTimeString()}</span> : null}
      {!client.synced && !client.error ? <Loading label="Joining…" /> : null}
      {client.synced ? (
        <div className="dp-notebook-cells">
          {cellList.length === 0 ? <Empty>No cells yet.</Empty> : null}
          {cellList.map((cell, i) => (
            <CellView
              key={cellKey(cell)}
              cell={cell}
              index={i}
              count={cellList.length}
              client={client}
              readOnly={readOnly}
              run={runs[i] ?? null}
              busy={runningAll}
              onRun={() => void runCell(i)}
              onRunFrom={() => void runFrom(i)}
              onMove={moveCell}
              onDelete={() => cells.delete(i, 1)}
              onSave={save}
            />
          ))}
          {readOnly ? null : (
            <div className="dp-row">
              <select aria-label="New cell type" value={newType} onChange={(e) => setNewType(e.target.value as CellType)}>
                {CELL_TYPES.map((t) => (
                  <option key={t}>{t}</option>
                ))}
              </select>
              <button className="dp-btn" onClick={() => addCell(cells.length)}>
                Add cell
              </button>
            </div>
          )}
        </div>
      ) : null}
    </div>
  );
}

const keys = new WeakMap<Y.Map<unknown>, number>();
let nextKey = 1;
const cellKey = (cell: Y.Map<unknown>) => {
  if (!keys.has(cell)) keys.set(cell, nextKey++);
  return keys.get(cell)!;
};

/** A cell's run: running, its output (`by` when a collaborator ran it), withheld (another role ran it), or its error. */
type RunState = { running: true } | { result: CellResult; count: number; by?: string } | { withheld: true; by: string; count: number } | { error: unknown } | null;

interface CellViewProps {
  cell: Y.Map<unknown>;
  index: number;
  count: number;
  client: CollaborationClient;
  readOnly: boolean;
  run: RunState;
  busy: boolean;
  onRun: () => void;
  onRunFrom: () => void;
  onMove: (from: number, to: number) => void;
  onDelete: () => void;
  onSave: () => void;
}

function CellView({ cell, index, count, client, readOnly, run, busy, onRun, onRunFrom, onMove, onDelete, onSave }: CellViewProps) {
  const type = useY(cell, () => String(cell.get('type') ?? 'code')) as CellType;
  const text = cell.get('source') as Y.Text;
  const source = useY(text, () => text.toString());
  const canExecute = useCan('execute');
  const [editing, setEditing] = useState(false);
  const host = useRef<HTMLDivElement>(null);
  const runRef = useRef<() => void>(() => {});
  runRef.current = onRun;

  useEffect(() => {
    const undoManager = new Y.UndoManager(text);
    const extensions: Extension[] = [
      basicSetup,
      editorTheme,
      EditorView.lineWrapping,
      collaborationExtensions(text, client.awareness, undoManager),
      EditorState.readOnly.of(readOnly),
      EditorView.editable.of(!readOnly),
      EditorView.contentAttributes.of({ 'aria-label': `Cell ${index} (${type})` }),
      EditorView.domEventHandlers({
        keydown: (e) => {
          if ((e.ctrlKey || e.metaKey || e.shiftKey) && e.key === 'Enter' && type !== 'markdown') {
            e.preventDefault();
            runRef.current();
            return true;
          }
          if ((e.ctrlKey || e.metaKey) && e.key === 's') {
            e.preventDefault();
            onSave();
            return true;
          }
          return false;
        },
      }),
    ];
    if (type === 'sql') extensions.push(sql({ dialect: PostgreSQL }));
    const view = new EditorView({ parent: host.current!, state: EditorState.create({ doc: text.toString(), extensions }) });
    return () => {
      view.destroy();
      undoManager.destroy();
    };
    // The editor is re-created when the cell's type (language) or the access changes.
  }, [text, client, type, readOnly]);

  const error = run && 'error' in run ? run.error : null;
  const errorLine = error instanceof ApiError ? (error.details as Partial<CellErrorDetails>).line : null;
  const errorOutput = error instanceof ApiError ? (error.details as Partial<CellErrorDetails>).output : undefined;
  return (
    <section className={`dp-card dp-notebook-cell dp-notebook-cell-${type}`} data-testid="notebook-cell" aria-label={`Cell ${index}`}>
      <div className="dp-row dp-notebook-cell-bar">
        <span className="dp-muted">cell {index}</span>
        <select aria-label={`Cell ${index} type`} value={type} disabled={readOnly} onChange={(e) => cell.set('type', e.target.value)}>
          {CELL_TYPES.map((t) => (
            <option key={t}>{t}</option>
          ))}
        </select>
        {cell.get('id') ? <code title="The cell's name">{String(cell.get('id'))}</code> : null}
        <span className="dp-grow" />
        {run && 'count' in run ? (
          <span className="dp-muted" data-testid="cell-execution-count" title={run.by ? `Run by ${run.by}` : 'Your run'}>
            [{run.count}]{run.by ? ` ${run.by}` : ''}
          </span>
        ) : null}
        {type !== 'markdown' ? (
          <button
            className="dp-btn dp-btn-small"
            onClick={onRun}
            disabled={(run !== null && 'running' in run) || busy || (type !== 'sql' && !canExecute)}
            title={type !== 'sql' && !canExecute ? 'Code cells need the editor role' : busy || (run !== null && 'running' in run) ? 'Running…' : 'Save, then run this cell (Ctrl+Enter)'}
          >
            Run
          </button>
        ) : (
          <button className="dp-btn dp-btn-small" aria-pressed={editing} disabled={readOnly} title={readOnly ? 'Your role may read but not change this notebook' : editing ? 'Show the rendered text' : 'Edit the markdown'} onClick={() => setEditing((e) => !e)}>
            {editing ? 'Done' : 'Edit'}
          </button>
        )}
        <button className="dp-btn dp-btn-small" onClick={onRunFrom} disabled={busy || (run !== null && 'running' in run)} title={busy ? 'Running…' : 'Save, then run this cell and every cell below it'}>
          Run from here
        </button>
        {readOnly ? null : (
          <>
            <button className="dp-btn dp-btn-small" aria-label={`Move cell ${index} up`} onClick={() => onMove(index, index - 1)} title={index === 0 ? 'The first cell cannot move up' : 'Move this cell up'} disabled={index === 0}>
              ↑
            </button>
            <button className="dp-btn dp-btn-small" aria-label={`Move cell ${index} down`} onClick={() => onMove(index, index + 1)} title={index === count - 1 ? 'The last cell cannot move down' : 'Move this cell down'} disabled={index === count - 1}>
              ↓
            </button>
            <button className="dp-btn dp-btn-small dp-btn-danger" aria-label={`Delete cell ${index}`} onClick={onDelete}>
              Delete
            </button>
          </>
        )}
      </div>
      <div className="dp-notebook-editor" ref={host} hidden={type === 'markdown' && !editing} />
      {type === 'markdown' && !editing ? (
        <div className="dp-notebook-markdown" data-testid="rendered-markdown" onDoubleClick={() => !readOnly && setEditing(true)}>
          {source.trim() ? <ReactMarkdown remarkPlugins={[remarkGfm]}>{source}</ReactMarkdown> : <span className="dp-muted">Empty text cell: Edit to write markdown.</span>}
        </div>
      ) : null}
      {run && 'running' in run ? <Loading label="Running…" /> : null}
      {run && 'result' in run ? <CellOutput result={run.result} /> : null}
      {run && 'withheld' in run ? <div className="dp-muted dp-notebook-output">Run by {run.by} as another role: run it to see the output as your role sees it.</div> : null}
      {error ? (
        <div className="dp-notebook-output" data-testid="cell-error">
          <ErrorBox error={error} />
          {errorLine ? <div className="dp-muted">at line {errorLine} of this cell</div> : null}
          {errorOutput?.length ? <OutputLines lines={errorOutput} /> : null}
        </div>
      ) : null}
    </section>
  );
}

function OutputLines({ lines }: { lines: Array<{ stream: string; text: string }> }) {
  return (
    <pre className="dp-notebook-console">
      {lines.map((l, i) => (
        <span key={i} className={l.stream === 'stderr' ? 'dp-notebook-stderr' : undefined}>
          {l.text}
          {l.text.endsWith('\n') ? '' : '\n'}
        </span>
      ))}
    </pre>
  );
}

function CellOutput({ result }: { result: CellResult }) {
  // The same chart as the SQL workspace's (ResultChart), toggled per output.
  const [chart, setChart] = useState(false);
  if (result.type === 'sql') {
    return (
      <div className="dp-notebook-output" data-testid="cell-output">
        <div className="dp-muted">
          {result.rows.length} row{result.rows.length === 1 ? '' : 's'}
          {result.truncated ? ' (truncated)' : ''} · {result.duration_ms} ms{' '}
          {result.columns.length ? (
            <button type="button" className="dp-btn dp-btn-small" aria-pressed={chart} onClick={() => setChart((c) => !c)}>
              {chart ? 'Table' : 'Chart'}
            </button>
          ) : null}
        </div>
        {result.columns.length && chart ? (
          <ResultChart columns={result.columns} columnTypes={result.column_types} rows={result.rows} height={220} />
        ) : result.columns.length ? (
          <div className="dp-notebook-grid">
            <ResultsGrid columns={result.columns} columnTypes={result.column_types} rows={result.rows} height={Math.min(320, 64 + result.rows.length * 28)} />
          </div>
        ) : null}
      </div>
    );
  }
  if (result.type === 'code') {
    return (
      <div className="dp-notebook-output" data-testid="cell-output">
        {result.output.length ? <OutputLines lines={result.output} /> : null}
        {result.value !== null && result.value !== undefined ? <pre className="dp-notebook-value">{typeof result.value === 'string' ? result.value : JSON.stringify(result.value, null, 2) ?? formatValue(result.value)}</pre> : null}
        <div className="dp-muted">
          {result.exports.length ? `exports ${result.exports.join(', ')} · ` : ''}
          {result.duration_ms} ms
        </div>
      </div>
    );
  }
  return null;
}
