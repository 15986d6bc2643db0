/**
 * The SQL workspace: a CodeMirror editor (completion from /api/autocomplete), run with
 * Ctrl/Cmd+Enter, $name parameters, a typed and virtualized results grid with paging and a row
 * count, CSV export, the explain plan, errors marked at their line, and a query history kept in
 * this browser.
 */
import { useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { useLocation, useNavigate } from 'react-router-dom';
import { api, ApiError, Badge, download, Empty, ErrorBox, Loading, maskedAtOf, maskedResultTitle, ResultsGrid, usePersistentState, useSession, type MaskedResultColumn, type PageProps } from '@dp/ui';
import { SqlEditor } from '@dp/ui/editor';

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

const PAGE_SIZES = [100, 500, 1000, 5000, 10000];
const HISTORY_MAX = 50;
const PARAM = /\$([A-Za-z_][A-Za-z0-9_]*)/g;

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

export default function SqlPage(_props: PageProps) {
  const [sql, setSql] = usePersistentState('sql.draft', 'SELECT *\nFROM marts.orders\nLIMIT 100');
  const [paramValues, setParamValues] = usePersistentState<Record<string, string>>('sql.params', {});
  const [history, setHistory] = usePersistentState<HistoryEntry[]>('sql.history', []);
  const [pageSize, setPageSize] = usePersistentState('sql.pageSize', 500);
  // Admins may run a query as a lower role would see it (its masking): the API's `as` field.
  const isAdmin = useSession().user.role === 'admin';
  const [asRole, setAsRole] = useState('');
  const [result, setResult] = useState<QueryResult | null>(null);
  const [ranSql, setRanSql] = useState<string | null>(null);
  // The text that produced the current error (the selection when only that ran), to find its line.
  const [ranSqlForError, setRanSqlForError] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [running, setRunning] = useState(false);
  const [elapsed, setElapsed] = useState<number | null>(null);
  const [plan, setPlan] = useState<string | null>(null);
  const [total, setTotal] = useState<number | null>(null);
  const [counting, setCounting] = useState(false);
  const [showHistory, setShowHistory] = useState(false);
  const inflight = useRef<AbortController | null>(null);
  const location = useLocation();
  const navigate = useNavigate();

  // Another page sent SQL to open here (the explorer's "Query in SQL").
  useEffect(() => {
    const sent = (location.state as { sql?: unknown } | null)?.sql;
    if (typeof sent === 'string') {
      setSql(sent);
      navigate(location.pathname, { replace: true, state: null });
    }
  }, [location, navigate, setSql]);

  const names = useMemo(() => paramNames(sql), [sql]);
  const boundParams = useCallback(
    (text: string) => {
      const used = paramNames(text);
      if (used.length === 0) return undefined;
      return Object.fromEntries(used.map((n) => [n, paramValue(paramValues[n] ?? '')]));
    },
    [paramValues],
  );

  const run = useCallback(
    async (text: string, offset = 0) => {
      const query = text.trim();
      if (!query) return;
      inflight.current?.abort();
      const ctl = new AbortController();
      inflight.current = ctl;
      setRunning(true);
      setError(null);
      setPlan(null);
      if (offset === 0) setTotal(null);
      const started = performance.now();
      try {
        const r = await api.post<QueryResult>('/api/query', { sql: query, params: boundParams(query), limit: pageSize, offset, ...(isAdmin && asRole ? { as: asRole } : {}) }, { signal: ctl.signal });
        const ms = Math.round(performance.now() - started);
        setResult(r);
        setRanSql(query);
        setElapsed(ms);
        if (offset === 0) {
          setHistory((h) => [{ sql: query, at: new Date().toISOString(), ms, rows: r.rows.length + (r.truncated ? 1 : 0) }, ...h.filter((e) => e.sql !== query)].slice(0, HISTORY_MAX));
          // The whole result fits on this page: that is the row count.
          if (!r.truncated) setTotal(r.rows.length);
        }
      } catch (e) {
        if ((e as Error).name === 'AbortError') return;
        setError(e);
        setRanSqlForError(query);
        if (offset === 0) {
          setResult(null);
          setHistory((h) => [{ sql: query, at: new Date().toISOString(), ms: Math.round(performance.now() - started), rows: null, error: (e as Error).message }, ...h.filter((x) => x.sql !== query)].slice(0, HISTORY_MAX));
        }
      } finally {
        if (inflight.current === ctl) {
          inflight.current = null;
          setRunning(false);
        }
      }
    },
    [boundParams, pageSize, setHistory, isAdmin, asRole],
  );

  const cancel = () => inflight.current?.abort();

  const explain = async () => {
    setError(null);
    try {
      const r = await api.post<{ raw: string }>('/api/query/explain', { sql: sql.trim(), params: boundParams(sql) });
      setPlan(r.raw);
    } catch (e) {
      setError(e);
      setRanSqlForError(sql.trim());
    }
  };

  const count = async () => {
    if (!ranSql) return;
    setCounting(true);
    try {
      const r = await api.post<QueryResult>('/api/query', { sql: `SELECT count(*) AS n FROM (\n${ranSql}\n) AS dp_counted`, params: boundParams(ranSql), limit: 1 });
      setTotal(Number(r.rows[0]?.[0] ?? 0));
    } catch (e) {
      setError(e);
    } finally {
      setCounting(false);
    }
  };

  const exportCsv = async () => {
    try {
      await download('POST', '/api/query/export-csv', { sql: (ranSql ?? sql).trim(), params: boundParams(ranSql ?? sql) }, 'query.csv');
    } catch (e) {
      setError(e);
    }
  };

  const errorLine = ranSqlForError ? errorLineOf(error, ranSqlForError) : null;
  const editorErrorLine = errorLine !== null && ranSqlForError ? firstLineIn(sql, ranSqlForError) + errorLine - 1 : null;
  // What the server says it masked (never guessed here from policies and the SQL text).
  const masked = useMemo(() => result?.masked_columns ?? [], [result]);
  const maskedAt = useMemo(() => maskedAtOf(masked), [masked]);
  const offset = result?.offset ?? 0;
  const rowsShown = result?.rows.length ?? 0;

  return (
    <div className="dp-sql">
      <div className="dp-row">
        <h1>SQL</h1>
        <div className="dp-toolbar" style={{ marginLeft: 'auto' }}>
          <button type="button" className="dp-btn dp-btn-primary" onClick={() => void run(sql)} disabled={running} title="Run (Ctrl/Cmd+Enter)" data-testid="run-query">
            ▶ Run
          </button>
          {running ? (
            <button type="button" className="dp-btn" onClick={cancel}>
              Cancel
            </button>
          ) : null}
          <button type="button" className="dp-btn" onClick={() => void explain()} disabled={running}>
            Explain
          </button>
          <button type="button" className="dp-btn" onClick={() => void exportCsv()} disabled={!ranSql && !sql.trim()}>
            Export CSV
          </button>
          <button type="button" className="dp-btn" aria-pressed={showHistory} onClick={() => setShowHistory((s) => !s)}>
            History ({history.length})
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
      <div className="dp-sql-top">
        <div className="dp-grow" style={{ height: '100%' }}>
          <SqlEditor value={sql} onChange={setSql} onRun={(text) => void run(text)} errorLine={editorErrorLine} />
        </div>
        {showHistory ? (
          <aside className="dp-sql-history" aria-label="Query history">
            <div className="dp-row">
              <strong>History</strong>
              <button type="button" className="dp-btn dp-btn-small" style={{ marginLeft: 'auto' }} onClick={() => setHistory([])}>
                Clear
              </button>
            </div>
            {history.length === 0 ? <Empty>Queries you run appear here (kept in this browser).</Empty> : null}
            <ul>
              {history.map((h) => (
                <li key={h.at + h.sql}>
                  <button type="button" className="dp-history-item" onClick={() => setSql(h.sql)} title={h.sql}>
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
      </div>
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
      <ErrorBox error={error} />
      {plan !== null ? (
        <div>
          <div className="dp-row">
            <strong>Plan</strong>
            <button type="button" className="dp-btn dp-btn-small" onClick={() => setPlan(null)}>
              Close
            </button>
          </div>
          <pre data-testid="explain-plan">{plan}</pre>
        </div>
      ) : null}
      {result ? (
        <>
          <div className="dp-row dp-result-bar" data-testid="result-status">
            {result.message ? <span>{result.message}</span> : null}
            <span>
              {rowsShown === 0 ? 'No rows' : `Rows ${offset + 1}–${offset + rowsShown}`}
              {total !== null ? ` of ${total}` : result.truncated ? ' (more rows)' : ''}
            </span>
            {elapsed !== null ? <span className="dp-muted">{elapsed} ms</span> : null}
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
              {total === null ? (
                <button type="button" className="dp-btn dp-btn-small" onClick={() => void count()} disabled={counting}>
                  {counting ? 'Counting…' : 'Count rows'}
                </button>
              ) : null}
              <button type="button" className="dp-btn dp-btn-small" disabled={offset === 0 || running} onClick={() => ranSql && void run(ranSql, Math.max(0, offset - pageSize))}>
                ← Previous
              </button>
              <button type="button" className="dp-btn dp-btn-small" disabled={!result.truncated || running} onClick={() => ranSql && void run(ranSql, offset + pageSize)}>
                Next →
              </button>
            </div>
          </div>
          <div className="dp-sql-results">
            {result.columns.length ? <ResultsGrid columns={result.columns} columnTypes={result.column_types} rows={result.rows} maskedAt={maskedAt} firstRowNumber={offset + 1} /> : <Empty>The statement returned no columns.</Empty>}
          </div>
        </>
      ) : running ? (
        <Loading label="Running…" />
      ) : !error ? (
        <Empty>Write a query and press Ctrl+Enter (Cmd+Enter on a Mac).</Empty>
      ) : null}
    </div>
  );
}
