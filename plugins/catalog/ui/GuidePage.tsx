/**
 * Docs and guide: the generated documentation of this project (GET /api/docs/markdown) and dp's
 * user guide (GET /api/wiki, /api/wiki/{slug}), with a search over the guide. Each page has its
 * own URL: `<page>/project` for the project docs, `<page>/<slug>` for a guide page.
 */
import { useMemo, useState } from 'react';
import { Link, Route, Routes, useParams } from 'react-router-dom';
import { api, Empty, ErrorBox, Loading, PageHeader, seg, useApi, type PageProps } from '@dp/ui';
import { Markdown } from './markdown';
import './catalog.css';

interface WikiEntry {
  slug: string;
  title: string;
  category: string;
  snippet?: string;
}

const PROJECT = 'project';

export default function GuidePage({ page }: PageProps) {
  return (
    <div className="dp-col dp-doc-page">
      <PageHeader title={page.title} subtitle="This project's documentation and dp's user guide" />
      <Routes>
        <Route path="" element={<Reader base={page.path} slug={PROJECT} />} />
        <Route path=":slug" element={<ReaderFromUrl base={page.path} />} />
      </Routes>
    </div>
  );
}

function ReaderFromUrl({ base }: { base: string }) {
  const { slug } = useParams();
  return <Reader base={base} slug={slug ?? PROJECT} />;
}

function Reader({ base, slug }: { base: string; slug: string }) {
  const [query, setQuery] = useState('');
  const pages = useApi((signal) => api.get<WikiEntry[]>('/api/wiki', { signal }), []);
  const hits = useApi((signal) => (query.trim() ? api.get<WikiEntry[]>('/api/wiki', { signal, query: { q: query.trim() } }) : Promise.resolve(null)), [query]);
  const byCategory = useMemo(() => {
    const groups = new Map<string, WikiEntry[]>();
    for (const p of pages.data ?? []) groups.set(p.category, [...(groups.get(p.category) ?? []), p]);
    return [...groups.entries()];
  }, [pages.data]);

  return (
    <div className="dp-split" style={{ alignItems: 'flex-start', gap: 20 }}>
      <nav className="dp-sidebar dp-guide-nav" aria-label="Guide pages" style={{ minWidth: 220, maxWidth: 260 }}>
        <input type="search" placeholder="Search the guide" aria-label="Search the guide" value={query} onChange={(e) => setQuery(e.target.value)} style={{ width: '100%' }} />
        {hits.data ? (
          <div className="dp-col" data-testid="wiki-search-results" style={{ gap: 6, marginTop: 8 }}>
            {hits.data.length === 0 ? <Empty>No page holds every word.</Empty> : null}
            {hits.data.map((h) => (
              <Link key={h.slug} to={`${base}/${seg(h.slug)}`}>
                <strong>{h.title}</strong>
                <div className="dp-muted" style={{ fontSize: 12 }}>
                  {h.snippet}
                </div>
              </Link>
            ))}
          </div>
        ) : (
          <div className="dp-col" style={{ gap: 2, marginTop: 8 }}>
            <Link to={`${base}/${PROJECT}`} aria-current={slug === PROJECT ? 'page' : undefined}>
              This project
            </Link>
            <ErrorBox error={pages.error} onRetry={pages.reload} />
            {byCategory.map(([category, entries]) => (
              <div key={category} className="dp-col" style={{ gap: 2 }}>
                <div className="dp-muted" style={{ fontSize: 11, textTransform: 'uppercase', marginTop: 8 }}>
                  {category}
                </div>
                {entries.map((p) => (
                  <Link key={p.slug} to={`${base}/${seg(p.slug)}`} aria-current={p.slug === slug ? 'page' : undefined}>
                    {p.title}
                  </Link>
                ))}
              </div>
            ))}
          </div>
        )}
      </nav>
      <article className="dp-grow dp-card" data-testid="guide-content" style={{ minWidth: 0 }}>
        {slug === PROJECT ? <ProjectDocs /> : <WikiPage slug={slug} />}
      </article>
    </div>
  );
}

function ProjectDocs() {
  const docs = useApi((signal) => api.get<string>('/api/docs/markdown', { signal }), []);
  if (docs.error) return <ErrorBox error={docs.error} onRetry={docs.reload} />;
  if (docs.data === null || docs.data === undefined) return <Loading />;
  return <Markdown text={String(docs.data)} />;
}

function WikiPage({ slug }: { slug: string }) {
  const page = useApi((signal) => api.get<{ title: string; category: string; content: string }>(`/api/wiki/${seg(slug)}`, { signal }), [slug]);
  if (page.error) return <ErrorBox error={page.error} onRetry={page.reload} />;
  if (!page.data) return <Loading />;
  return <Markdown text={page.data.content} />;
}
