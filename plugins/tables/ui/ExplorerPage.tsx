/**
 * The explorer: schemas, tables and columns on the left; a table's columns, sample rows
 * (masked for the caller, paged) and profile with a chart per column on the right.
 * Deep links: /explorer/<schema>/<table>.
 */
import { useMemo, useState } from 'react';
import { Link, Route, Routes, useNavigate, useParams } from 'react-router-dom';
import { api, Badge, Empty, ErrorBox, Icon, isNumericType, Loading, maskedAtOf, PageHeader, ResultsGrid, seg, Table, Tabs, useApi, usePersistentState, useSession, type MaskedResultColumn, type PageProps } from '@dp/ui';
import { BarChart } from '@dp/ui/chart';
import type { ColumnProfile, TableProfile } from '../../quality/api-types';

interface TableEntry {
  schema: string;
  name: string;
  type: string;
}

interface Described extends TableEntry {
  columns: Array<{ name: string; type: string; nullable: boolean }>;
}

interface Sample {
  columns: string[];
  rows: unknown[][];
  limit: number;
  offset: number;
  /** The columns the server masked for this caller. */
  masked_columns?: MaskedResultColumn[];
}

export default function ExplorerPage({ page }: PageProps) {
  return (
    <Routes>
      <Route path=":schema/:table" element={<Explorer base={page.path} />} />
      <Route path="*" element={<Explorer base={page.path} />} />
    </Routes>
  );
}

function Explorer({ base }: { base: string }) {
  const { schema, table } = useParams();
  const tables = useApi((signal) => api.get<TableEntry[]>('/api/tables', { signal }), []);
  const [filter, setFilter] = useState('');
  const [open, setOpen] = usePersistentState<Record<string, boolean>>('explorer.open', {});
  const bySchema = useMemo(() => {
    const out = new Map<string, TableEntry[]>();
    const f = filter.trim().toLowerCase();
    for (const t of tables.data ?? []) {
      if (f && !`${t.schema}.${t.name}`.toLowerCase().includes(f)) continue;
      out.set(t.schema, [...(out.get(t.schema) ?? []), t]);
    }
    return out;
  }, [tables.data, filter]);

  return (
    <div className="dp-split">
      <aside className="dp-sidebar" aria-label="Schemas and tables">
        <input type="search" placeholder="Filter tables" value={filter} onChange={(e) => setFilter(e.target.value)} aria-label="Filter tables" style={{ width: '100%', marginBottom: '0.5rem' }} />
        <ErrorBox error={tables.error} onRetry={tables.reload} />
        {tables.loading && !tables.data ? <Loading /> : null}
        <ul className="dp-tree">
          {[...bySchema.entries()].map(([s, list]) => {
            const expanded = open[s] ?? true;
            return (
              <li key={s}>
                <button type="button" className="dp-tree-node" aria-expanded={expanded} onClick={() => setOpen((o) => ({ ...o, [s]: !expanded }))}>
                  {expanded ? '▾' : '▸'} <Icon name="database" size={14} /> {s}
                </button>
                {expanded ? (
                  <ul>
                    {list.map((t) => (
                      <li key={t.name}>
                        <Link className={`dp-tree-leaf${t.schema === schema && t.name === table ? ' dp-tree-active' : ''}`} to={`${base}/${seg(t.schema)}/${seg(t.name)}`}>
                          <Icon name="table" size={14} /> {t.name} {t.type === 'view' ? <span className="dp-muted">view</span> : null}
                        </Link>
                      </li>
                    ))}
                  </ul>
                ) : null}
              </li>
            );
          })}
        </ul>
        {tables.data && bySchema.size === 0 ? <Empty>No tables{filter ? ' match' : ' yet: run dp seed and dp transform'}.</Empty> : null}
      </aside>
      <section className="dp-grow dp-explorer-main">{schema && table ? <TableView key={`${schema}.${table}`} schema={schema} table={table} /> : <Empty>Pick a table on the left.</Empty>}</section>
    </div>
  );
}

type TabKey = 'columns' | 'sample' | 'profile';

function TableView({ schema, table }: { schema: string; table: string }) {
  const [tab, setTab] = usePersistentState<TabKey>('explorer.tab', 'sample');
  const described = useApi((signal) => api.get<Described>(`/api/tables/${seg(schema)}/${seg(table)}`, { signal }), [schema, table]);
  const navigate = useNavigate();
  if (described.error) return <ErrorBox error={described.error} onRetry={described.reload} />;
  if (!described.data) return <Loading />;
  const d = described.data;
  return (
    <div className="dp-col">
      <PageHeader
        title={
          <>
            {schema}.{table} <Badge>{d.type}</Badge>
          </>
        }
        subtitle={`${d.columns.length} columns`}
      >
        <button type="button" className="dp-btn" onClick={() => navigate('/sql', { state: { sql: `SELECT *\nFROM ${quoteIdent(schema)}.${quoteIdent(table)}\nLIMIT 100` } })}>
          Query in SQL
        </button>
      </PageHeader>
      <Tabs<TabKey>
        tabs={[
          { key: 'sample', label: 'Sample rows' },
          { key: 'columns', label: 'Columns' },
          { key: 'profile', label: 'Profile' },
        ]}
        active={tab}
        onChange={setTab}
      />
      {tab === 'columns' ? (
        <Table
          rows={d.columns}
          rowKey={(c) => c.name}
          columns={[
            { key: 'name', header: 'Column' },
            { key: 'type', header: 'Type', render: (c) => <code>{c.type}</code> },
            { key: 'nullable', header: 'Nullable', render: (c) => (c.nullable ? 'yes' : 'no') },
          ]}
        />
      ) : null}
      {tab === 'sample' ? <SampleView schema={schema} table={table} types={d.columns.map((c) => c.type)} /> : null}
      {tab === 'profile' ? <ProfileView schema={schema} table={table} /> : null}
    </div>
  );
}

const SAMPLE_PAGE = 100;

function SampleView({ schema, table, types }: { schema: string; table: string; types: string[] }) {
  const [offset, setOffset] = useState(0);
  const sample = useApi((signal) => api.get<Sample>(`/api/tables/${seg(schema)}/${seg(table)}/sample`, { signal, query: { limit: SAMPLE_PAGE, offset } }), [schema, table, offset]);
  if (sample.error) return <ErrorBox error={sample.error} onRetry={sample.reload} />;
  if (!sample.data) return <Loading />;
  const s = sample.data;
  return (
    <>
      <div className="dp-row">
        <span>{s.rows.length ? `Rows ${offset + 1}–${offset + s.rows.length}` : 'No rows'}</span>
        <button type="button" className="dp-btn dp-btn-small" title={offset === 0 ? 'Already at the first rows' : 'Previous rows'} disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - SAMPLE_PAGE))}>
          ← Previous
        </button>
        <button type="button" className="dp-btn dp-btn-small" title={s.rows.length < SAMPLE_PAGE ? 'No more rows' : 'Next rows'} disabled={s.rows.length < SAMPLE_PAGE} onClick={() => setOffset(offset + SAMPLE_PAGE)}>
          Next →
        </button>
      </div>
      <div style={{ height: 480, display: 'flex' }}>
        <ResultsGrid columns={s.columns} columnTypes={types} rows={s.rows} firstRowNumber={offset + 1} maskedAt={maskedAtOf(s.masked_columns)} />
      </div>
    </>
  );
}

function ProfileView({ schema, table }: { schema: string; table: string }) {
  if (!useSession().plugins.includes('quality')) return <Empty>Profiles come from the quality plugin, which is disabled.</Empty>;
  return <Profiled schema={schema} table={table} />;
}

function Profiled({ schema, table }: { schema: string; table: string }) {
  const profile = useApi((signal) => api.get<TableProfile>(`/api/tables/${seg(schema)}/${seg(table)}/profile`, { signal }), [schema, table]);
  if (profile.error) {
    return <ErrorBox error={profile.error} onRetry={profile.reload} />;
  }
  if (!profile.data) return <Loading label="Profiling…" />;
  const p = profile.data;
  return (
    <>
      <div className="dp-row">
        <Badge tone="info">{p.row_count} rows</Badge>
        <Badge>{p.column_count} columns</Badge>
        {(p.notes ?? []).map((n) => (
          <Badge key={n} tone="warn">
            {n}
          </Badge>
        ))}
      </div>
      <div className="dp-cards" data-testid="profile">
        {p.columns.map((c) => (
          <div className="dp-card" key={c.name}>
            <div className="dp-row">
              <strong>{c.name}</strong> <code className="dp-muted">{c.type}</code>
              {c.masked ? <Badge tone="info">masked</Badge> : null}
            </div>
            <div className="dp-muted" style={{ fontSize: '0.85rem' }}>
              {c.null_pct}% null · {c.distinct_count} distinct
              {c.min !== null && c.min !== undefined ? ` · min ${String(c.min)} · max ${String(c.max)}` : ''}
              {typeof c.avg === 'number' ? ` · avg ${Math.round(c.avg * 100) / 100}` : ''}
            </div>
            <ColumnChart schema={schema} table={table} column={c} />
          </div>
        ))}
      </div>
    </>
  );
}

const quoteIdent = (s: string) => `"${s.replace(/"/g, '""')}"`;

/** A histogram (numbers: ten equal-width buckets) or the top values (anything else), through /api/query (masked like any query). */
function ColumnChart({ schema, table, column }: { schema: string; table: string; column: ColumnProfile }) {
  const from = `${quoteIdent(schema)}.${quoteIdent(table)}`;
  const col = quoteIdent(column.name);
  const numeric = isNumericType(column.type) && typeof column.min === 'number' && typeof column.max === 'number' && column.max > column.min;
  const sql = numeric
    ? `SELECT least(floor((${col} - ${column.min}) / ((${column.max} - ${column.min}) / 10.0)), 9)::INTEGER AS bucket, count(*) AS n FROM ${from} WHERE ${col} IS NOT NULL GROUP BY 1 ORDER BY 1`
    : `SELECT CAST(${col} AS VARCHAR) AS value, count(*) AS n FROM ${from} GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 8`;
  const data = useApi((signal) => api.post<{ rows: unknown[][] }>('/api/query', { sql, limit: 20 }, { signal }), [sql]);
  if (data.error) return <div className="dp-muted" style={{ fontSize: '0.8rem' }}>No chart: {(data.error as Error).message}</div>;
  if (!data.data) return <div style={{ height: 120 }} />;
  let labels: string[];
  let values: number[];
  if (numeric) {
    const min = column.min as number;
    const width = ((column.max as number) - min) / 10;
    const counts = new Array(10).fill(0) as number[];
    for (const [b, n] of data.data.rows) counts[Number(b)] = Number(n);
    labels = counts.map((_, i) => String(Math.round((min + i * width) * 100) / 100));
    values = counts;
  } else {
    labels = data.data.rows.map((r) => (r[0] === null ? 'NULL' : String(r[0]).slice(0, 12)));
    values = data.data.rows.map((r) => Number(r[1]));
  }
  if (values.length === 0) return <Empty>No values</Empty>;
  return <BarChart labels={labels} values={values} ariaLabel={`${column.name} distribution`} />;
}
