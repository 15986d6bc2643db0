/** Small shared components: errors, loading, tables, tabs, dialogs, icons. Styled by the shell's CSS (dp-* classes). */
import { useEffect, useRef, useState, type ReactNode } from 'react';
import { ApiError } from './api';

/** The API's message (and code) for an error; never a blank box. */
export function ErrorBox({ error, onRetry }: { error: unknown; onRetry?: () => void }) {
  if (!error) return null;
  const e = error as Partial<ApiError> & { message?: string };
  const message = e.message || String(error) || 'Something went wrong';
  return (
    <div className="dp-error" role="alert">
      <strong>{message}</strong>
      {e.code && e.code !== 'http_error' ? <span className="dp-error-code">{e.code}</span> : null}
      {onRetry ? (
        <button type="button" className="dp-btn dp-btn-small" onClick={onRetry}>
          Retry
        </button>
      ) : null}
    </div>
  );
}

export function Loading({ label = 'Loading…' }: { label?: string }) {
  return (
    <div className="dp-loading" role="status" aria-live="polite">
      <span className="dp-spinner" aria-hidden="true" /> {label}
    </div>
  );
}

export function Empty({ children }: { children: ReactNode }) {
  return <div className="dp-empty">{children}</div>;
}

/** A page's title bar with actions on the right. */
export function PageHeader({ title, subtitle, children }: { title: ReactNode; subtitle?: ReactNode; children?: ReactNode }) {
  return (
    <div className="dp-page-header">
      <div>
        <h1>{title}</h1>
        {subtitle ? <div className="dp-muted">{subtitle}</div> : null}
      </div>
      <div className="dp-toolbar">{children}</div>
    </div>
  );
}

export function Badge({ children, tone = 'neutral', title }: { children: ReactNode; tone?: 'neutral' | 'ok' | 'warn' | 'bad' | 'info'; title?: string }) {
  return (
    <span className={`dp-badge dp-badge-${tone}`} title={title}>
      {children}
    </span>
  );
}

/** A status word as a coloured badge (ok/pass/success green, fail/error red, warn amber). */
export function StatusBadge({ status }: { status: string | null | undefined }) {
  const s = String(status ?? 'unknown').toLowerCase();
  const tone = /^(ok|pass|passed|success|succeeded|done|fresh|healthy)$/.test(s)
    ? 'ok'
    : /^(fail|failed|error|errored|stale|unhealthy)$/.test(s)
      ? 'bad'
      : /^(warn|warning|skipped|running|pending|queued)$/.test(s)
        ? 'warn'
        : 'neutral';
  return <Badge tone={tone}>{s}</Badge>;
}

export interface Column<T> {
  key: string;
  header: ReactNode;
  render?: (row: T) => ReactNode;
  align?: 'left' | 'right';
}

/** A plain table for short lists (use ResultsGrid for query results). */
export function Table<T>({ columns, rows, rowKey, onRowClick, empty = 'Nothing here yet' }: { columns: Column<T>[]; rows: T[]; rowKey?: (row: T, i: number) => string; onRowClick?: (row: T) => void; empty?: ReactNode }) {
  if (rows.length === 0) return <Empty>{empty}</Empty>;
  return (
    <div className="dp-table-wrap">
      <table className="dp-table">
        <thead>
          <tr>
            {columns.map((c) => (
              <th key={c.key} style={{ textAlign: c.align ?? 'left' }}>
                {c.header}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((r, i) => (
            <tr
              key={rowKey ? rowKey(r, i) : i}
              className={onRowClick ? 'dp-clickable' : undefined}
              onClick={onRowClick ? () => onRowClick(r) : undefined}
              tabIndex={onRowClick ? 0 : undefined}
              onKeyDown={onRowClick ? (e) => e.key === 'Enter' && onRowClick(r) : undefined}
            >
              {columns.map((c) => (
                <td key={c.key} style={{ textAlign: c.align ?? 'left' }}>
                  {c.render ? c.render(r) : formatValue((r as Record<string, unknown>)[c.key])}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

export function Tabs<K extends string>({ tabs, active, onChange }: { tabs: Array<{ key: K; label: ReactNode }>; active: K; onChange: (k: K) => void }) {
  return (
    <div className="dp-tabs" role="tablist">
      {tabs.map((t) => (
        <button key={t.key} type="button" role="tab" aria-selected={t.key === active} className={t.key === active ? 'dp-tab dp-tab-active' : 'dp-tab'} onClick={() => onChange(t.key)}>
          {t.label}
        </button>
      ))}
    </div>
  );
}

/** A modal dialog (native <dialog>: focus trap and Escape for free). */
export function Dialog({ open, title, onClose, children, footer }: { open: boolean; title: ReactNode; onClose: () => void; children: ReactNode; footer?: ReactNode }) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (open && !d.open) d.showModal();
    if (!open && d.open) d.close();
  }, [open]);
  return (
    <dialog ref={ref} className="dp-dialog" onClose={onClose} onCancel={onClose}>
      <div className="dp-dialog-title">{title}</div>
      <div className="dp-dialog-body">{open ? children : null}</div>
      {footer ? <div className="dp-dialog-footer">{footer}</div> : null}
    </dialog>
  );
}

/**
 * A dialog whose one action runs `onSubmit`: Cancel and the action in the footer, the action
 * disabled while it runs or while `blocked` says why (its title), a failure shown under the form.
 */
export function FormDialog({ open, title, onClose, action, actionTitle, busyTitle, blocked, onSubmit, children }: {
  open: boolean;
  title: ReactNode;
  onClose: () => void;
  action: string;
  /** The action button's title when it can run. */
  actionTitle: string;
  busyTitle: string;
  /** Why the action cannot run yet (the form is incomplete), or null. */
  blocked: string | null;
  onSubmit: () => Promise<void>;
  children: ReactNode;
}) {
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const submit = async () => {
    setBusy(true);
    setError(null);
    try {
      await onSubmit();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <Dialog
      open={open}
      title={title}
      onClose={onClose}
      footer={
        <>
          <button type="button" className="dp-btn" onClick={onClose}>
            Cancel
          </button>
          <button type="button" className="dp-btn dp-btn-primary" disabled={busy || blocked !== null} title={busy ? busyTitle : (blocked ?? actionTitle)} onClick={() => void submit()}>
            {action}
          </button>
        </>
      }
    >
      {children}
      <ErrorBox error={error} />
    </Dialog>
  );
}

/** A label above a form control. */
export function Field({ label, children, hint }: { label: ReactNode; children: ReactNode; hint?: ReactNode }) {
  return (
    <label className="dp-field">
      <span className="dp-field-label">{label}</span>
      {children}
      {hint ? <span className="dp-muted dp-field-hint">{hint}</span> : null}
    </label>
  );
}

/** One cell value as text: NULL, JSON for nested values, numbers as they came. */
export function formatValue(v: unknown): string {
  if (v === null || v === undefined) return 'NULL';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

/**
 * A stored detail (an assertion's outcome, an alert's payload) as people read it: an object as a
 * key/value table, a list of objects as a table, a missing value as `none` (never raw JSON or NULL).
 */
export function DetailView({ value, label }: { value: unknown; label?: string }) {
  const cell = (v: unknown): ReactNode => {
    if (v === null || v === undefined || v === '') return <span className="dp-muted">none</span>;
    if (Array.isArray(v) || (typeof v === 'object' && v !== null)) return <DetailView value={v} />;
    return String(v);
  };
  if (value === null || value === undefined) return <span className="dp-muted">none</span>;
  if (Array.isArray(value)) {
    if (value.length === 0) return <span className="dp-muted">none</span>;
    if (value.every((v) => v && typeof v === 'object' && !Array.isArray(v))) {
      const keys = [...new Set(value.flatMap((v) => Object.keys(v as object)))];
      return <Table rows={value as Array<Record<string, unknown>>} columns={keys.map((k) => ({ key: k, header: k.replace(/_/g, ' '), render: (r: Record<string, unknown>) => cell(r[k]) }))} />;
    }
    return <>{value.map((v) => (typeof v === 'object' ? JSON.stringify(v) : String(v))).join(', ')}</>;
  }
  if (typeof value !== 'object') return <>{String(value)}</>;
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length === 0) return <span className="dp-muted">none</span>;
  return (
    <table className="dp-table dp-detail" aria-label={label}>
      <tbody>
        {entries.map(([k, v]) => (
          <tr key={k}>
            <th scope="row">{k.replace(/_/g, ' ')}</th>
            <td>{cell(v)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** True for DuckDB numeric types (right-aligned in grids). */
export function isNumericType(type: string | undefined): boolean {
  return !!type && /^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|UHUGEINT|FLOAT|DOUBLE|REAL|DECIMAL.*|NUMERIC.*|INT\d*)$/i.test(type);
}

const ICONS: Record<string, string> = {
  code: 'M8 6 2 12l6 6M16 6l6 6-6 6',
  table: 'M3 5h18v14H3zM3 10h18M9 5v14',
  database: 'M4 6c0-1.7 3.6-3 8-3s8 1.3 8 3-3.6 3-8 3-8-1.3-8-3zm0 0v12c0 1.7 3.6 3 8 3s8-1.3 8-3V6M4 12c0 1.7 3.6 3 8 3s8-1.3 8-3',
  graph: 'M5 6a2 2 0 1 0 0-.1M19 6a2 2 0 1 0 0-.1M12 18a2 2 0 1 0 0-.1M6.5 7.5 11 16.5M17.5 7.5 13 16.5',
  check: 'M4 12l5 5L20 6',
  shield: 'M12 3l8 3v6c0 5-3.5 8-8 9-4.5-1-8-4-8-9V6z',
  file: 'M6 3h8l4 4v14H6zM14 3v4h4',
  play: 'M7 4l13 8-13 8z',
  user: 'M12 12a4 4 0 1 0 0-8 4 4 0 0 0 0 8zm-8 9c0-4 3.6-6 8-6s8 2 8 6',
  settings: 'M12 15a3 3 0 1 0 0-6 3 3 0 0 0 0 6zM19 12l2-1-1-3-2 .3-1.3-1.3L17 5l-3-1-1 2h-2L10 4 7 5l.3 2L6 8.3 4 8l-1 3 2 1v0l-2 1 1 3 2-.3L7.3 17 7 19l3 1 1-2h2l1 2 3-1-.3-2 1.3-1.3 2 .3 1-3z',
  chart: 'M4 20V10M10 20V4M16 20v-7M22 20H2',
  puzzle: 'M10 3h4v3a2 2 0 1 0 4 0V6h3v5h-2a2 2 0 1 0 0 4h2v6h-6v-2a2 2 0 1 0-4 0v2H5v-6h2a2 2 0 1 0 0-4H5V6h5z',
  lock: 'M6 11h12v10H6zM8 11V7a4 4 0 0 1 8 0v4',
  book: 'M4 4h7a3 3 0 0 1 3 3v13a2 2 0 0 0-2-2H4zM20 4h-5a3 3 0 0 0-3 3',
  bell: 'M6 16V11a6 6 0 0 1 12 0v5l2 2H4zM10 20a2 2 0 0 0 4 0',
  stream: 'M3 7h13l-3-3M21 17H8l3 3',
  plug: 'M9 2v6M15 2v6M6 8h12v4a6 6 0 0 1-12 0zM12 18v4',
  history: 'M3 12a9 9 0 1 0 3-6.7L3 8M3 3v5h5M12 7v5l3 3',
  notebook: 'M5 3h13v18H5zM9 3v18M12 8h4M12 12h4',
  metric: 'M3 17l6-6 4 4 8-8M15 7h6v6',
};

/** An icon of the shell's set by name (docs/ui.md lists them); unknown names show `fallback`'s first letter. */
export function Icon({ name, fallback = '?', size = 18 }: { name: string | null | undefined; fallback?: string; size?: number }) {
  const d = name ? ICONS[name] : undefined;
  if (!d) {
    return (
      <span className="dp-icon-letter" style={{ width: size, height: size }} aria-hidden="true">
        {fallback.slice(0, 1).toUpperCase()}
      </span>
    );
  }
  return (
    <svg className="dp-icon" width={size} height={size} viewBox="0 0 24 24" fill="none" stroke="currentColor" strokeWidth="1.8" strokeLinecap="round" strokeLinejoin="round" aria-hidden="true">
      <path d={d} />
    </svg>
  );
}

export const ICON_NAMES = Object.keys(ICONS);
