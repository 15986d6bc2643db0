/**
 * The SQL workspace: query tabs kept in this browser, a catalog panel (click inserts), a
 * CodeMirror editor (tables and columns completed, bare and qualified), run with Ctrl/Cmd+Enter
 * with the elapsed time while it runs and a cancel, $name parameters, a typed, virtualized
 * results grid that sorts, filters, selects and copies, paging and a row count, a chart and a
 * column summary of any result, CSV export, the explain plan, errors marked at their line, a
 * query history kept in this browser and saved queries kept in the project (`queries/*.sql`).
 * A tab showing a saved query edits the file together with whoever else has it open (the shared
 * document of /ws/collaborate, as the Models page does): presence, live edits, the socket save.
 */
import { useCallback, useEffect, useMemo, useRef, useState, type KeyboardEvent as ReactKeyboardEvent, type PointerEvent as ReactPointerEvent } from 'react';
import { useLocation, useNavigate } from 'react-router-dom';
import { api, ApiError, Badge, Dialog, download, Empty, ErrorBox, Field, Loading, maskedAtOf, maskedResultTitle, ResultsGrid, seg, Tabs, useApi, useCan, usePersistentState, useSession, type MaskedResultColumn, type PageProps } from '@dp/ui';
import { CollaborativeEditor, SqlEditor, type EditorHandle } from '@dp/ui/editor';
import { ResultChart } from '@dp/ui/chart';
import { CatalogPanel, sqlName, type CatalogTable } from './CatalogPanel';
import { ColumnSummary } from './ColumnSummary';
import './sql.css';

interface QueryResult {
  columns: string[];
  column_types: string[];
  rows: unknown[][];
  truncated: boolean;
  offset: number;
  limit: number;
  notes?: string[];
  message?: string;
  /** Result columns the server masked for this caller, as its masking rewrite planned them. */
  masked_columns?: MaskedResultColumn[];
}

interface HistoryEntry {
  sql: string;
  at: string;
  ms: number;
  rows: number | null;
  error?: string;
}

/** One query tab: its text, and the project file it was opened from or saved to. */
export interface QueryTab {
  id: string;
  title: string;
  sql: string;
  /**
   * `queries/<name>.sql` when saved in the project, with the sha256 of the version read. Such a
   * tab's text is the file's shared document (`sql` follows it, for running and parameters).
   */
  file?: { path: string; sha256: string; savedSql: string };
}

/** What one tab's last run left on screen (kept in memory while the page is open). */
interface TabRun {
  result: QueryResult | null;
  ranSql: string | null;
  ranSqlForError: string | null;
  error: unknown;
  elapsed: number | null;
  plan: string | null;
  total: number | null;
  counting: boolean;
  /** performance.now() when the running query started, else null. */
  startedAt: number | null;
  cancelled: boolean;
}

const EMPTY_RUN: TabRun = { result: null, ranSql: null, ranSqlForError: null, error: null, elapsed: null, plan: null, total: null, counting: false, startedAt: null, cancelled: false };
const PAGE_SIZES = [100, 500, 1000, 5000, 10000];
const HISTORY_MAX = 50;
const PARAM = /\$([A-Za-z_][A-Za-z0-9_]*)/g;
/** The draft older versions started with; no example project has this table. */
const OLD_DEFAULT_DRAFT = 'SELECT *\nFROM marts.orders\nLIMIT 100';
const SAVED_DIR = 'queries';

/** `$name` placeholders in order of first use (outside quoted strings and comments). */
export function paramNames(sql: string): string[] {
  const stripped = sql.replace(/'(?:[^']|'')*'/g, "''").replace(/"(?:[^"]|"")*"/g, '""').replace(/--[^\n]*/g, '').replace(/\/\*[\s\S]*?\*\//g, '');
  const out: string[] = [];
  for (const m of stripped.matchAll(PARAM)) if (!out.includes(m[1])) out.push(m[1]);
  return out;
}

/** A parameter's text as the value to bind: numbers and booleans typed, like `dp query --param`. */
function paramValue(text: string): string | number | boolean | null {
  if (text === '') return null;
  if (/^-?\d+(\.\d+)?$/.test(text)) return Number(text);
  if (text === 'true' || text === 'false') return text === 'true';
  return text;
}

/**
 * The 1-based line of `sql` an SQL error points at: the server's `details.line` (DuckDB's own
 * location, in the text as sent), when it is a line of that text.
 */
export function errorLineOf(error: unknown, sql: string): number | null {
  if (!(error instanceof ApiError)) return null;
  const line = (error.details as { line?: unknown }).line;
  return typeof line === 'number' && Number.isInteger(line) && line >= 1 && line <= sql.split('\n').length ? line : null;
}

/** The editor line of line 1 of `ran` (the trimmed text or the selection that ran) within `doc`. */
export function firstLineIn(doc: string, ran: string): number {
  const at = doc.indexOf(ran);
  return at < 0 ? 1 : doc.slice(0, at).split('\n').length;
}

/**
 * The first query of a fresh workspace: it reads a table the project has, preferring the marts
 * (what a new user wants to see), then any schema but the internal ones.
 */
export function defaultDraft(tables: Array<{ schema: string; name: string }>): string {
  const rank = (schema: string) => (schema === 'marts' ? 0 : schema === 'main' ? 3 : /^(information_schema|pg_catalog|_|dp_)/.test(schema) ? 4 : schema === 'staging' ? 1 : 2);
  const pick = [...tables].sort((a, b) => rank(a.schema) - rank(b.schema) || a.schema.localeCompare(b.schema) || a.name.localeCompare(b.name))[0];
  return pick ? `SELECT *\nFROM ${sqlName(pick.schema)}.${sqlName(pick.name)}\nLIMIT 100` : "SELECT 'hello' AS greeting";
}

/** "1.2 s" under a minute, "2 min 5 s" over. */
export function formatElapsed(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  const s = ms / 1000;
  return s < 60 ? `${s.toFixed(1)} s` : `${Math.floor(s / 60)} min ${Math.round(s % 60)} s`;
}

const newId = () => Math.random().toString(36).slice(2, 10);

/** The tabs a browser had, or one tab with the draft older versions kept (`sql.draft`). */
function initialTabs(): { tabs: QueryTab[]; active: string } {
  let draft = '';
  try {
    const old = localStorage.getItem('dp.sql.draft');
    if (old !== null) draft = JSON.parse(old) as string;
  } catch {
    // Nothing kept: a fresh workspace.
  }
  if (draft === OLD_DEFAULT_DRAFT) draft = '';
  return { tabs: [{ id: 'q1', title: 'Query 1', sql: draft }], active: 'q1' };
}

export default function SqlPage(_props: PageProps) {
  const [workspace, setWorkspace] = usePersistentState<{ tabs: QueryTab[]; active: string }>('sql.tabs', initialTabs());
  const [paramValues, setParamValues] = usePersistentState<Record<string, string>>('sql.params', {});
  const [history, setHistory] = usePersistentState<HistoryEntry[]>('sql.history', []);
  const [pageSize, setPageSize] = usePersistentState('sql.pageSize', 500);
  const [editorHeight, setEditorHeight] = usePersistentState('sql.editorHeight', 260);
  const [showCatalog, setShowCatalog] = usePersistentState('sql.showCatalog', true);
  const [side, setSide] = useState<'history' | 'saved' | null>(null);
  const [view, setView] = usePersistentState<'table' | 'chart' | 'summary'>('sql.resultView', 'table');
  const [runs, setRuns] = useState<Record<string, TabRun>>({});
  const [now, setNow] = useState(() => performance.now());
  const inflight = useRef(new Map<string, AbortController>());
  const editor = useRef<EditorHandle | null>(null);
  // Admins may run a query as a lower role would see it (its masking): the API's `as` field.
  const isAdmin = useSession().user.role === 'admin';
  const [asRole, setAsRole] = useState('');
  const location = useLocation();
  const navigate = useNavigate();
  const session = useSession();
  const canSave = useCan('write');
  const filesEnabled = session.plugins.includes('files');

  const tabs = workspace.tabs.length ? workspace.tabs : initialTabs().tabs;
  const tab = tabs.find((t) => t.id === workspace.active) ?? tabs[0];
  const sql = tab.sql;
  const run = runs[tab.id] ?? EMPTY_RUN;

  const patchTab = useCallback((id: string, change: Partial<QueryTab>) => setWorkspace((w) => ({ ...w, tabs: w.tabs.map((t) => (t.id === id ? { ...t, ...change } : t)) })), [setWorkspace]);
  // Set once the text was edited here: the default draft never replaces what someone typed.
  const edited = useRef(false);
  const setSql = useCallback(
    (text: string) => {
      edited.current = true;
      patchTab(tab.id, { sql: text });
    },
    [patchTab, tab.id],
  );
  const patchRun = useCallback((id: string, change: Partial<TabRun> | ((r: TabRun) => Partial<TabRun>)) => setRuns((all) => {
    const old = all[id] ?? EMPTY_RUN;
    return { ...all, [id]: { ...old, ...(typeof change === 'function' ? change(old) : change) } };
  }), []);

  const openTab = useCallback(
    (text: string, title?: string, file?: QueryTab['file']) => {
      const id = newId();
      setWorkspace((w) => {
        const n = w.tabs.length + 1;
        return { tabs: [...w.tabs, { id, title: title ?? `Query ${n}`, sql: text, file }], active: id };
      });
      return id;
    },
    [setWorkspace],
  );
  const closeTab = (id: string) => {
    inflight.current.get(id)?.abort();
    setWorkspace((w) => {
      const left = w.tabs.filter((t) => t.id !== id);
      if (left.length === 0) {
        const fresh = newId();
        return { tabs: [{ id: fresh, title: 'Query 1', sql: '' }], active: fresh };
      }
      const at = w.tabs.findIndex((t) => t.id === id);
      return { tabs: left, active: w.active === id ? left[Math.max(0, at - 1)].id : w.active };
    });
  };

  // The catalog: the panel, and the first query of a fresh workspace.
  const catalog = useApi((signal) => api.get<{ tables: CatalogTable[] }>('/api/autocomplete', { signal }), []);
  useEffect(() => {
    if (!catalog.data || edited.current) return;
    setWorkspace((w) => (w.tabs.length === 1 && w.tabs[0].sql === '' && !w.tabs[0].file ? { ...w, tabs: [{ ...w.tabs[0], sql: defaultDraft(catalog.data!.tables) }] } : w));
  }, [catalog.data, setWorkspace]);

  // Another page sent SQL to open here (the explorer's "Query in SQL"): in a tab of its own.
  useEffect(() => {
    const sent = (location.state as { sql?: unknown } | null)?.sql;
    if (typeof sent === 'string') {
      if (!tab.file && (sql.trim() === '' || sql === sent)) setSql(sent);
      else openTab(sent);
      navigate(location.pathname, { replace: true, state: null });
    }
  }, [location, navigate, setSql, openTab, sql, tab.file]);

  // The elapsed time of running queries, redrawn while any runs.
  const anyRunning = Object.values(runs).some((r) => r.startedAt !== null);
  useEffect(() => {
    if (!anyRunning) return;
    const timer = setInterval(() => setNow(performance.now()), 100);
    return () => clearInterval(timer);
  }, [anyRunning]);

  const names = useMemo(() => paramNames(sql), [sql]);
  const boundParams = useCallback(
    (text: string) => {
      const used = paramNames(text);
      if (used.length === 0) return undefined;
      return Object.fromEntries(used.map((n) => [n, paramValue(paramValues[n] ?? '')]));
    },
    [paramValues],
  );

  const runQuery = useCallback(
    async (tabId: string, text: string, offset = 0) => {
      const query = text.trim();
      if (!query) return;
      inflight.current.get(tabId)?.abort();
      const ctl = new AbortController();
      inflight.current.set(tabId, ctl);
      const started = performance.now();
      setNow(started);
      patchRun(tabId, (r) => ({ startedAt: started, cancelled: false, error: null, plan: null, total: offset === 0 ? null : r.total }));
      try {
        const r = await api.post<QueryResult>('/api/query', { sql: query, params: boundParams(query), limit: pageSize, offset, ...(isAdmin && asRole ? { as: asRole } : {}) }, { signal: ctl.signal });
        const ms = Math.round(performance.now() - started);
        patchRun(tabId, (old) => ({ result: r, ranSql: query, elapsed: ms, total: offset === 0 ? (r.truncated ? null : r.rows.length) : old.total }));
        if (offset === 0) setHistory((h) => [{ sql: query, at: new Date().toISOString(), ms, rows: r.rows.length + (r.truncated ? 1 : 0) }, ...h.filter((e) => e.sql !== query)].slice(0, HISTORY_MAX));
      } catch (e) {
        if ((e as Error).name === 'AbortError') return;
        patchRun(tabId, offset === 0 ? { error: e, ranSqlForError: query, result: null } : { error: e, ranSqlForError: query });
        if (offset === 0) setHistory((h) => [{ sql: query, at: new Date().toISOString(), ms: Math.round(performance.now() - started), rows: null, error: (e as Error).message }, ...h.filter((x) => x.sql !== query)].slice(0, HISTORY_MAX));
      } finally {
        if (inflight.current.get(tabId) === ctl) {
          inflight.current.delete(tabId);
          patchRun(tabId, { startedAt: null });
        }
      }
    },
    [boundParams, pageSize, setHistory, patchRun, isAdmin, asRole],
  );
  const runText = (text: string, offset = 0) => void runQuery(tab.id, text, offset);

  // Leaving the page stops what it runs (the server stops a query whose client left).
  useEffect(() => {
    const running = inflight.current;
    return () => running.forEach((c) => c.abort());
  }, []);

  const cancel = () => {
    const ctl = inflight.current.get(tab.id);
    if (!ctl) return;
    ctl.abort();
    inflight.current.delete(tab.id);
    patchRun(tab.id, (r) => ({ startedAt: null, cancelled: true, elapsed: r.startedAt === null ? r.elapsed : Math.round(performance.now() - r.startedAt) }));
  };

  const explain = async () => {
    patchRun(tab.id, { error: null });
    try {
      const r = await api.post<{ raw: string }>('/api/query/explain', { sql: sql.trim(), params: boundParams(sql) });
      patchRun(tab.id, { plan: r.raw });
    } catch (e) {
      patchRun(tab.id, { error: e, ranSqlForError: sql.trim() });
    }
  };

  const count = async () => {
    const ranSql = run.ranSql;
    if (!ranSql) return;
    const id = tab.id;
    patchRun(id, { counting: true });
    try {
      const r = await api.post<QueryResult>('/api/query', { sql: `SELECT count(*) AS n FROM (\n${ranSql}\n) AS dp_counted`, params: boundParams(ranSql), limit: 1 });
      patchRun(id, { total: Number(r.rows[0]?.[0] ?? 0) });
    } catch (e) {
      patchRun(id, { error: e });
    } finally {
      patchRun(id, { counting: false });
    }
  };

  const exportCsv = async () => {
    try {
      await download('POST', '/api/query/export-csv', { sql: (run.ranSql ?? sql).trim(), params: boundParams(run.ranSql ?? sql) }, 'query.csv');
    } catch (e) {
      patchRun(tab.id, { error: e });
    }
  };

  // Saved queries: `queries/*.sql` in the project (the files plugin), shared through git.
  const [savedTick, setSavedTick] = useState(0);
  const saved = useApi(
    async (signal) => {
      if (!filesEnabled || side !== 'saved') return [] as string[];
      const tree = await api.get<{ children: Array<{ name: string; type: string; children?: Array<{ name: string; path: string; type: string }> }> }>('/api/files', { signal });
      const dir = tree.children.find((c) => c.name === SAVED_DIR && c.type !== 'file');
      return (dir?.children ?? []).filter((f) => f.type === 'file' && f.name.endsWith('.sql')).map((f) => f.name.replace(/\.sql$/, ''));
    },
    [filesEnabled, side, savedTick],
  );
  const [saveDialog, setSaveDialog] = useState(false);
  const [saveName, setSaveName] = useState('');
  const [saveError, setSaveError] = useState<unknown>(null);
  const [saving, setSaving] = useState(false);
  /** A draft saved as a new file (`base_sha256: null`: never over an existing query); its tab then edits the file together. */
  const saveAs = async (name: string, target: QueryTab) => {
    setSaving(true);
    setSaveError(null);
    try {
      const path = `${SAVED_DIR}/${name}.sql`;
      const text = target.sql.endsWith('\n') ? target.sql : target.sql + '\n';
      const r = await api.put<{ sha256: string }>(`/api/files/${seg(SAVED_DIR)}/${seg(name + '.sql')}`, { content: text, base_sha256: null });
      const sha = r.sha256;
      patchTab(target.id, { title: name, file: { path, sha256: sha, savedSql: target.sql }, sql: target.sql });
      setSaveDialog(false);
      setSavedTick((t) => t + 1);
    } catch (e) {
      setSaveError(e);
    } finally {
      setSaving(false);
    }
  };
  const save = () => {
    if (!canSave || !filesEnabled) return;
    // A saved query's tab saves through its shared document (the socket save, conflicts shown there).
    if (tab.file) editor.current?.save?.();
    else {
      setSaveName(tab.title.startsWith('Query ') ? '' : tab.title);
      setSaveError(null);
      setSaveDialog(true);
    }
  };
  // The shared text of a saved query's tab, as it changes (here or by a collaborator).
  const followShared = useCallback((text: string) => patchTab(tab.id, { sql: text.replace(/\n$/, '') }), [patchTab, tab.id]);
  const onSharedSaved = useCallback((sha256: string) => setWorkspace((w) => ({ ...w, tabs: w.tabs.map((t) => (t.id === tab.id && t.file ? { ...t, file: { ...t.file, sha256, savedSql: t.sql } } : t)) })), [setWorkspace, tab.id]);
  const openSaved = async (name: string) => {
    const open = tabs.find((t) => t.file?.path === `${SAVED_DIR}/${name}.sql`);
    if (open) return setWorkspace((w) => ({ ...w, active: open.id }));
    try {
      const f = await api.get<{ path: string; content: string; sha256: string }>(`/api/files/${seg(SAVED_DIR)}/${seg(name + '.sql')}`);
      const text = f.content.replace(/\n$/, '');
      openTab(text, name, { path: `${SAVED_DIR}/${name}.sql`, sha256: f.sha256, savedSql: text });
    } catch (e) {
      patchRun(tab.id, { error: e });
    }
  };
  const saveBlocked = !filesEnabled ? 'Saving queries needs the files plugin' : !canSave ? 'Saving a query needs the write permission' : !sql.trim() ? 'Nothing to save: the query is empty' : null;

  // The split between the editor and the results: dragged, or moved with the arrow keys.
  const splitDrag = useRef<{ y: number; h: number } | null>(null);
  const onSplitDown = (e: ReactPointerEvent<HTMLDivElement>) => {
    splitDrag.current = { y: e.clientY, h: editorHeight };
    e.currentTarget.setPointerCapture(e.pointerId);
  };
  const onSplitMove = (e: ReactPointerEvent<HTMLDivElement>) => {
    if (splitDrag.current) setEditorHeight(Math.max(80, Math.min(window.innerHeight - 200, splitDrag.current.h + e.clientY - splitDrag.current.y)));
  };
  const onSplitKey = (e: ReactKeyboardEvent<HTMLDivElement>) => {
    if (e.key === 'ArrowUp' || e.key === 'ArrowDown') {
      e.preventDefault();
      setEditorHeight((h) => Math.max(80, h + (e.key === 'ArrowUp' ? -20 : 20)));
    }
  };

  const running = run.startedAt !== null;
  const { result, error } = run;
  // A fresh workspace shows its editor once the catalog chose the first query (or failed), so
  // the draft never lands in the middle of someone's typing.
  const awaitingDraft = !edited.current && tabs.length === 1 && sql === '' && !tab.file && !catalog.data && !catalog.error;
  const errorLine = run.ranSqlForError ? errorLineOf(error, run.ranSqlForError) : null;
  const editorErrorLine = errorLine !== null && run.ranSqlForError ? firstLineIn(sql, run.ranSqlForError) + errorLine - 1 : null;
  // What the server says it masked (never guessed here from policies and the SQL text).
  const masked = useMemo(() => result?.masked_columns ?? [], [result]);
  const maskedAt = useMemo(() => maskedAtOf(masked), [masked]);
  const offset = result?.offset ?? 0;
  const rowsShown = result?.rows.length ?? 0;

  return (
    <div className="dp-sql">
      <div className="dp-row">
        <h1>SQL</h1>
        <div className="dp-toolbar dp-sql-toolbar">
          <button type="button" className="dp-btn dp-btn-primary" onClick={() => runText(sql)} disabled={running || !sql.trim()} title={running ? 'A query is running in this tab: wait or cancel it' : !sql.trim() ? 'Write a query first' : 'Run (Ctrl/Cmd+Enter; the selection alone when there is one)'} data-testid="run-query">
            ▶ Run
          </button>
          {running ? (
            <button type="button" className="dp-btn" onClick={cancel} title="Stop the running query">
              Cancel
            </button>
          ) : null}
          <button type="button" className="dp-btn" onClick={() => void explain()} disabled={running || !sql.trim()} title={running ? 'A query is running in this tab' : !sql.trim() ? 'Write a query first' : 'Show the plan DuckDB would run'}>
            Explain
          </button>
          <button type="button" className="dp-btn" onClick={() => void exportCsv()} disabled={!run.ranSql && !sql.trim()} title={!run.ranSql && !sql.trim() ? 'Write or run a query first' : 'Every row as a CSV file'}>
            Export CSV
          </button>
          {tab.file ? null : (
            <button type="button" className="dp-btn" onClick={save} disabled={!!saveBlocked} title={saveBlocked ?? 'Save in the project under queries/ (Ctrl/Cmd+S)'}>
              Save…
            </button>
          )}
          {filesEnabled ? (
            <button type="button" className="dp-btn" aria-pressed={side === 'saved'} onClick={() => setSide((s) => (s === 'saved' ? null : 'saved'))}>
              Saved queries
            </button>
          ) : null}
          <button type="button" className="dp-btn" aria-pressed={side === 'history'} onClick={() => setSide((s) => (s === 'history' ? null : 'history'))}>
            History ({history.length})
          </button>
          <button type="button" className="dp-btn" aria-pressed={showCatalog} onClick={() => setShowCatalog((s) => !s)}>
            Catalog
          </button>
          {isAdmin && (
            <label className="dp-muted">
              See as{' '}
              <select value={asRole} onChange={(e) => setAsRole(e.target.value)} aria-label="Run as role">
                <option value="">me</option>
                <option value="editor">editor</option>
                <option value="viewer">viewer</option>
              </select>
            </label>
          )}
          <label className="dp-muted">
            Page{' '}
            <select value={pageSize} onChange={(e) => setPageSize(Number(e.target.value))} aria-label="Rows per page">
              {PAGE_SIZES.map((n) => (
                <option key={n} value={n}>
                  {n}
                </option>
              ))}
            </select>
          </label>
        </div>
      </div>
      <div className="dp-sql-tabs" role="tablist" aria-label="Query tabs">
        {tabs.map((t) => (
          <div key={t.id} className={`dp-sql-tab${t.id === tab.id ? ' dp-sql-tab-active' : ''}`}>
            <button type="button" role="tab" aria-selected={t.id === tab.id} onClick={() => setWorkspace((w) => ({ ...w, active: t.id }))} title={t.file ? t.file.path : t.title}>
              {t.title}
              {runs[t.id]?.startedAt != null ? ' ⏳' : ''}
            </button>
            <button type="button" className="dp-sql-tab-close" aria-label={`Close ${t.title}`} title={`Close ${t.title}`} onClick={() => closeTab(t.id)}>
              ×
            </button>
          </div>
        ))}
        <button type="button" className="dp-btn dp-btn-small" aria-label="New query tab" title="New query tab" onClick={() => openTab('')}>
          +
        </button>
      </div>
      <div className="dp-sql-top" style={{ height: editorHeight }}>
        {showCatalog ? <CatalogPanel tables={catalog.data?.tables} error={catalog.error} loading={catalog.loading} onRefresh={catalog.reload} onInsert={(text) => editor.current?.insert(text)} /> : null}
        <div className="dp-grow" style={{ height: '100%' }}>
          {awaitingDraft ? (
            <Loading label="Reading the catalog…" />
          ) : (
          tab.file ? (
            <CollaborativeEditor key={tab.id} path={tab.file.path} language="sql" readOnly={!canSave} height="auto" ariaLabel="SQL editor" onChange={followShared} onRun={(text) => runText(text)} onSaved={onSharedSaved} errorLine={editorErrorLine} onReady={(h) => (editor.current = h)} />
          ) : (
            <SqlEditor key={tab.id} value={sql} onChange={setSql} onRun={(text) => runText(text)} onSave={save} errorLine={editorErrorLine} onReady={(h) => (editor.current = h)} />
          )
          )}
        </div>
        {side === 'history' ? (
          <aside className="dp-sql-history" aria-label="Query history">
            <div className="dp-row">
              <strong>History</strong>
              <button type="button" className="dp-btn dp-btn-small" style={{ marginLeft: 'auto' }} onClick={() => setHistory([])} disabled={history.length === 0} title={history.length === 0 ? 'The history is empty' : 'Forget every query run in this browser'}>
                Clear
              </button>
            </div>
            {history.length === 0 ? <Empty>Queries you run appear here (kept in this browser).</Empty> : null}
            <ul>
              {history.map((h) => (
                <li key={h.at + h.sql}>
                  <button type="button" className="dp-history-item" onClick={() => (tab.file ? openTab(h.sql) : setSql(h.sql))} title={tab.file ? `Open in a new tab (this tab is ${tab.file.path}, shared)` : h.sql}>
                    <code>{h.sql.length > 120 ? h.sql.slice(0, 120) + '…' : h.sql}</code>
                    <span className="dp-muted">
                      {new Date(h.at).toLocaleString()} · {h.ms} ms · {h.error ? <span style={{ color: 'var(--dp-bad)' }}>error</span> : `${h.rows} rows`}
                    </span>
                  </button>
                </li>
              ))}
            </ul>
          </aside>
        ) : null}
        {side === 'saved' ? (
          <aside className="dp-sql-history" aria-label="Saved queries">
            <div className="dp-row">
              <strong>Saved queries</strong>
              <span className="dp-muted">in {SAVED_DIR}/</span>
            </div>
            <ErrorBox error={saved.error} onRetry={saved.reload} />
            {saved.data && saved.data.length === 0 ? <Empty>Save a query (Ctrl/Cmd+S) to keep it in the project under {SAVED_DIR}/.</Empty> : null}
            <ul>
              {(saved.data ?? []).map((name) => (
                <li key={name}>
                  <button type="button" className="dp-history-item" onClick={() => void openSaved(name)}>
                    <code>{name}</code>
                  </button>
                </li>
              ))}
            </ul>
          </aside>
        ) : null}
      </div>
      <div className="dp-split-handle" role="separator" aria-orientation="horizontal" aria-label="Resize the editor" aria-valuenow={editorHeight} tabIndex={0} onPointerDown={onSplitDown} onPointerMove={onSplitMove} onPointerUp={() => (splitDrag.current = null)} onKeyDown={onSplitKey} title="Drag (or use the arrow keys) to resize the editor" />
      {names.length ? (
        <div className="dp-row dp-sql-params" aria-label="Parameters">
          <span className="dp-muted">Parameters</span>
          {names.map((n) => (
            <label key={n} className="dp-row">
              <code>${n}</code>
              <input value={paramValues[n] ?? ''} onChange={(e) => setParamValues((p) => ({ ...p, [n]: e.target.value }))} aria-label={`Parameter ${n}`} placeholder="NULL" />
            </label>
          ))}
        </div>
      ) : null}
      {running ? (
        <div className="dp-row dp-result-bar" role="status" data-testid="query-running">
          <span className="dp-spinner" aria-hidden="true" />
          <span>Running…</span>
          <span data-testid="elapsed">{formatElapsed(now - run.startedAt!)}</span>
        </div>
      ) : run.cancelled ? (
        <div className="dp-row dp-result-bar" role="status" data-testid="query-cancelled">
          Cancelled after {formatElapsed(run.elapsed ?? 0)}.
        </div>
      ) : null}
      <ErrorBox error={error} />
      {run.plan !== null ? (
        <div>
          <div className="dp-row">
            <strong>Plan</strong>
            <button type="button" className="dp-btn dp-btn-small" onClick={() => patchRun(tab.id, { plan: null })}>
              Close
            </button>
          </div>
          <pre data-testid="explain-plan">{run.plan}</pre>
        </div>
      ) : null}
      {result ? (
        <>
          <div className="dp-row dp-result-bar" data-testid="result-status">
            {result.message ? <span>{result.message}</span> : null}
            <span>
              {rowsShown === 0 ? 'No rows' : `Rows ${offset + 1}–${offset + rowsShown}`}
              {run.total !== null ? ` of ${run.total}` : result.truncated ? ' (more rows)' : ''}
            </span>
            {run.elapsed !== null ? <span className="dp-muted">{run.elapsed} ms</span> : null}
            {masked.length ? (
              <Badge tone="info" title={masked.map(maskedResultTitle).join('\n')}>
                masked: {masked.map((m) => m.name).join(', ')}
              </Badge>
            ) : null}
            {(result.notes ?? []).map((n) => (
              <Badge key={n} tone="warn">
                {n}
              </Badge>
            ))}
            <div className="dp-toolbar" style={{ marginLeft: 'auto' }}>
              {run.total === null ? (
                <button type="button" className="dp-btn dp-btn-small" onClick={() => void count()} disabled={run.counting} title={run.counting ? 'Counting…' : 'Count every row of the result'}>
                  {run.counting ? 'Counting…' : 'Count rows'}
                </button>
              ) : null}
              <button type="button" className="dp-btn dp-btn-small" disabled={offset === 0 || running} title={offset === 0 ? 'This is the first page' : running ? 'A query is running' : undefined} onClick={() => run.ranSql && runText(run.ranSql, Math.max(0, offset - pageSize))}>
                ← Previous
              </button>
              <button type="button" className="dp-btn dp-btn-small" disabled={!result.truncated || running} title={!result.truncated ? 'This is the last page' : running ? 'A query is running' : undefined} onClick={() => run.ranSql && runText(run.ranSql, offset + pageSize)}>
                Next →
              </button>
            </div>
          </div>
          {result.columns.length ? (
            <>
              <Tabs
                tabs={[
                  { key: 'table', label: 'Table' },
                  { key: 'chart', label: 'Chart' },
                  { key: 'summary', label: 'Summary' },
                ]}
                active={view}
                onChange={setView}
              />
              <div className="dp-sql-results">
                {view === 'table' ? (
                  <ResultsGrid columns={result.columns} columnTypes={result.column_types} rows={result.rows} maskedAt={maskedAt} firstRowNumber={offset + 1} tools />
                ) : view === 'chart' ? (
                  <ResultChart key={result.columns.join('\u0000')} columns={result.columns} columnTypes={result.column_types} rows={result.rows} />
                ) : (
                  <ColumnSummary columns={result.columns} types={result.column_types} rows={result.rows} more={result.truncated || offset > 0} />
                )}
              </div>
            </>
          ) : (
            <Empty>The statement returned no columns.</Empty>
          )}
        </>
      ) : running ? null : !error && !run.cancelled ? (
        catalog.loading && !sql ? <Loading /> : <Empty>Write a query and press Ctrl+Enter (Cmd+Enter on a Mac).</Empty>
      ) : null}
      <Dialog
        open={saveDialog}
        title="Save the query in the project"
        onClose={() => setSaveDialog(false)}
        footer={
          <>
            <button type="button" className="dp-btn" onClick={() => setSaveDialog(false)}>
              Cancel
            </button>
            <button type="button" className="dp-btn dp-btn-primary" disabled={saving || !/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$/.test(saveName)} title={!/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$/.test(saveName) ? 'A name of letters, digits, _ . - (no slash)' : undefined} onClick={() => void saveAs(saveName, tab)}>
              Save
            </button>
          </>
        }
      >
        <Field label="Name" hint={`Saved as ${SAVED_DIR}/${saveName || '<name>'}.sql, shared with the project (and its git repository).`}>
          <input autoFocus value={saveName} onChange={(e) => setSaveName(e.target.value)} aria-label="Query name" onKeyDown={(e) => e.key === 'Enter' && /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$/.test(saveName) && void saveAs(saveName, tab)} />
        </Field>
        <ErrorBox error={saveError} />
      </Dialog>
    </div>
  );
}
