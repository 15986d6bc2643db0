/**
 * Overview: the project at a glance (GET /api/overview): totals, schemas and tables with row
 * counts, recent transform runs, connectors, and the declared sources and exposures.
 */
import { Link } from 'react-router-dom';
import { api, Badge, ErrorBox, Loading, PageHeader, StatusBadge, Table, useApi, type PageProps } from '@dp/ui';
import './catalog.css';

interface Overview {
  project: string;
  environment: string | null;
  totals: Record<string, number | null>;
  schemas: Array<{ name: string; tables: number; views: number; rows: number }>;
  tables: Array<{ schema: string; name: string; type: string; rows: number | null }>;
  recent_runs: Array<{ run_id: string; trigger: string; status: string; started_at: string; duration_ms: number; built: number; skipped: number; failed: number }>;
  connectors: Array<{ name: string; type: string | null }>;
}

interface Source {
  name: string;
  schema: string;
  description?: string;
  freshness_hours?: number;
  tables: Array<{ name: string; description?: string; exists: boolean; rows: number | null }>;
}

interface Exposure {
  name: string;
  type?: string;
  owner?: string;
  url?: string;
  depends_on: string[];
  unknown_dependencies: string[];
}

const number = (n: number | null | undefined) => (n === null || n === undefined ? '—' : n.toLocaleString());

export default function OverviewPage({ page }: PageProps) {
  const overview = useApi((signal) => api.get<Overview>('/api/overview', { signal }), []);
  const sources = useApi((signal) => api.get<Source[]>('/api/sources', { signal }), []);
  const exposures = useApi((signal) => api.get<Exposure[]>('/api/exposures', { signal }), []);
  const o = overview.data;
  return (
    <div className="dp-col dp-doc-page">
      <PageHeader title={page.title} subtitle={o ? `${o.project}${o.environment ? ` · ${o.environment}` : ''}` : undefined}>
        <button type="button" className="dp-btn" onClick={() => { overview.reload(); sources.reload(); exposures.reload(); }}>
          Refresh
        </button>
      </PageHeader>
      <ErrorBox error={overview.error} onRetry={overview.reload} />
      {!o && !overview.error ? <Loading /> : null}
      {o ? (
        <>
          <div className="dp-cards" data-testid="overview-totals">
            {(['models', 'tables', 'views', 'rows', 'seeds', 'sources', 'exposures', 'metrics'] as const).map((k) => (
              <div key={k} className="dp-card">
                <div className="dp-muted" style={{ fontSize: 12 }}>
                  {k}
                </div>
                <div style={{ fontSize: 22, fontWeight: 600 }} data-testid={`total-${k}`}>
                  {number(o.totals[k])}
                </div>
              </div>
            ))}
          </div>
          <h3>Schemas</h3>
          <Table
            rows={o.schemas}
            rowKey={(s) => s.name}
            columns={[
              { key: 'name', header: 'Schema' },
              { key: 'tables', header: 'Tables', align: 'right' },
              { key: 'views', header: 'Views', align: 'right' },
              { key: 'rows', header: 'Rows', align: 'right', render: (s) => number(s.rows) },
            ]}
          />
          <h3>Tables</h3>
          <Table
            rows={o.tables}
            rowKey={(t) => `${t.schema}.${t.name}`}
            columns={[
              { key: 'name', header: 'Table', render: (t) => <Link to={`/explorer/${encodeURIComponent(t.schema)}/${encodeURIComponent(t.name)}`}>{`${t.schema}.${t.name}`}</Link> },
              { key: 'type', header: 'Type', render: (t) => <Badge tone={t.type === 'view' ? 'info' : 'neutral'}>{t.type}</Badge> },
              { key: 'rows', header: 'Rows', align: 'right', render: (t) => (t.rows === null ? <span className="dp-muted">view</span> : number(t.rows)) },
            ]}
          />
          <h3>Recent transform runs</h3>
          <Table
            rows={o.recent_runs}
            rowKey={(r) => r.run_id}
            empty="No transform has run yet."
            columns={[
              { key: 'started_at', header: 'Started' },
              { key: 'status', header: 'Status', render: (r) => <StatusBadge status={r.status} /> },
              { key: 'trigger', header: 'Trigger' },
              { key: 'built', header: 'Built', align: 'right' },
              { key: 'skipped', header: 'Skipped', align: 'right' },
              { key: 'failed', header: 'Failed', align: 'right' },
              { key: 'duration_ms', header: 'ms', align: 'right', render: (r) => Math.round(r.duration_ms) },
            ]}
          />
          <h3>Connectors</h3>
          <Table
            rows={o.connectors}
            rowKey={(c) => c.name}
            empty="No connections in project.yml."
            columns={[
              { key: 'name', header: 'Name' },
              { key: 'type', header: 'Type' },
            ]}
          />
        </>
      ) : null}
      <h3>Sources</h3>
      <ErrorBox error={sources.error} onRetry={sources.reload} />
      <Table
        rows={(sources.data ?? []).flatMap((s) => s.tables.map((t) => ({ ...t, source: s.name, schema: s.schema, freshness_hours: s.freshness_hours })))}
        rowKey={(t) => `${t.schema}.${t.name}`}
        empty="No sources declared in project.yml."
        columns={[
          { key: 'source', header: 'Source' },
          { key: 'name', header: 'Table', render: (t) => `${t.schema}.${t.name}` },
          { key: 'description', header: 'Description' },
          { key: 'rows', header: 'Rows', align: 'right', render: (t) => (t.exists ? number(t.rows) : <Badge tone="warn">not loaded</Badge>) },
          { key: 'freshness_hours', header: 'Fresh within', render: (t) => (t.freshness_hours ? `${t.freshness_hours} h` : '') },
        ]}
      />
      <h3>Exposures</h3>
      <ErrorBox error={exposures.error} onRetry={exposures.reload} />
      <Table
        rows={exposures.data ?? []}
        rowKey={(e) => e.name}
        empty="No exposures declared in project.yml."
        columns={[
          { key: 'name', header: 'Exposure', render: (e) => (e.url && /^https?:\/\//.test(e.url) ? <a href={e.url} target="_blank" rel="noreferrer">{e.name}</a> : e.name) },
          { key: 'type', header: 'Type' },
          { key: 'owner', header: 'Owner' },
          {
            key: 'depends_on',
            header: 'Depends on',
            render: (e) => (
              <>
                {e.depends_on.join(', ')}
                {e.unknown_dependencies.length ? <Badge tone="warn" title="Not defined in the project">{` ${e.unknown_dependencies.length} undefined`}</Badge> : null}
              </>
            ),
          },
        ]}
      />
    </div>
  );
}
