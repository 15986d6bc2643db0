/**
 * The SQL workspace's catalog: schemas, their tables and views, each table's columns with
 * types (from /api/autocomplete, masked or not: names and types only). A click inserts the
 * name at the editor's cursor: `schema.table` for a table, the bare name for a column.
 */
import { useMemo, useState } from 'react';
import { Empty, ErrorBox, Loading } from '@dp/ui';

export interface CatalogTable {
  schema: string;
  name: string;
  type?: string;
  columns: Array<{ name: string; type: string }>;
}

/** A name as SQL writes it: quoted when it is not a plain lower-case identifier. */
export function sqlName(name: string): string {
  return /^[a-z_][a-z0-9_]*$/.test(name) ? name : `"${name.replace(/"/g, '""')}"`;
}

export function CatalogPanel({ tables, error, loading, onInsert, onRefresh }: { tables: CatalogTable[] | undefined; error: unknown; loading: boolean; onInsert: (text: string) => void; onRefresh: () => void }) {
  const [filter, setFilter] = useState('');
  const [open, setOpen] = useState<Record<string, boolean>>({});
  const bySchema = useMemo(() => {
    const needle = filter.trim().toLowerCase();
    const out = new Map<string, CatalogTable[]>();
    for (const t of tables ?? []) {
      const hit = !needle || `${t.schema}.${t.name}`.toLowerCase().includes(needle) || t.columns.some((c) => c.name.toLowerCase().includes(needle));
      if (!hit) continue;
      if (!out.has(t.schema)) out.set(t.schema, []);
      out.get(t.schema)!.push(t);
    }
    return out;
  }, [tables, filter]);

  return (
    <aside className="dp-sql-catalog" aria-label="Catalog">
      <div className="dp-row">
        <strong>Catalog</strong>
        <button type="button" className="dp-btn dp-btn-small" style={{ marginLeft: 'auto' }} onClick={onRefresh} disabled={loading} title={loading ? 'Loading the catalog…' : 'Read the schemas and tables again'}>
          Refresh
        </button>
      </div>
      <input type="search" value={filter} onChange={(e) => setFilter(e.target.value)} placeholder="Find a table or column" aria-label="Find in catalog" />
      <ErrorBox error={error} onRetry={onRefresh} />
      {!tables && loading ? <Loading /> : null}
      {tables && bySchema.size === 0 ? <Empty>{filter ? 'Nothing matches.' : 'No tables yet: seed or transform the project.'}</Empty> : null}
      <ul className="dp-catalog-tree">
        {[...bySchema].map(([schema, list]) => (
          <li key={schema}>
            <div className="dp-catalog-schema">{schema}</div>
            <ul>
              {list.map((t) => {
                const key = `${t.schema}.${t.name}`;
                const expanded = open[key] ?? (filter.trim() !== '' && t.columns.some((c) => c.name.toLowerCase().includes(filter.trim().toLowerCase())));
                return (
                  <li key={key}>
                    <div className="dp-catalog-table">
                      <button type="button" className="dp-catalog-toggle" aria-expanded={expanded} aria-label={`${expanded ? 'Hide' : 'Show'} columns of ${key}`} onClick={() => setOpen((o) => ({ ...o, [key]: !expanded }))}>
                        {expanded ? '▾' : '▸'}
                      </button>
                      <button type="button" className="dp-catalog-name" title={`Insert ${key}${t.type ? ` (${t.type.toLowerCase()})` : ''}`} onClick={() => onInsert(`${sqlName(t.schema)}.${sqlName(t.name)}`)}>
                        {t.name}
                      </button>
                      {t.type && /view/i.test(t.type) ? <span className="dp-muted dp-catalog-type">view</span> : null}
                    </div>
                    {expanded ? (
                      <ul className="dp-catalog-columns" aria-label={`Columns of ${key}`}>
                        {t.columns.map((c) => (
                          <li key={c.name}>
                            <button type="button" className="dp-catalog-name" title={`Insert ${c.name}`} onClick={() => onInsert(sqlName(c.name))}>
                              {c.name}
                            </button>
                            <span className="dp-muted dp-catalog-type">{c.type}</span>
                          </li>
                        ))}
                      </ul>
                    ) : null}
                  </li>
                );
              })}
            </ul>
          </li>
        ))}
      </ul>
    </aside>
  );
}
