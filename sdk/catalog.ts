/**
 * The catalog plugin's service: the project's generated documentation and dp's user guide (the
 * wiki), for other plugins; and its `catalog.docs` extension point, through which a plugin gives
 * the catalog what it owns (semantic its metrics, quality its contracts, lineage the column
 * lineage and the exposures, tables the warehouse's relations with their row counts), so the
 * catalog names none of them.
 */
import type { Caller } from './auth.js';
import type { QueryStopSignal } from './routes.js';
import { createExtensionPoint, createServiceRef } from './refs.js';
import type { ColumnSource, ExposureConfig } from './lineage.js';

export interface WikiPageInfo {
  /** The page's file stem: `getting-started`. */
  slug: string;
  title: string;
  category: string;
  /** The plugin whose feature the page documents, or null for general pages. */
  plugin: string | null;
}

export interface CatalogService {
  /** The generated documentation of the project as one Markdown document, as `caller` may see it (what `dp docs` prints); its row counts run as the caller's read. */
  docsMarkdown(caller: Caller): Promise<string>;
  /** Every wiki page, by order then title. */
  wikiPages(): WikiPageInfo[];
  /** One wiki page with its Markdown; 404 `wiki_page_not_found` for an unknown slug. */
  wikiPage(slug: string): WikiPageInfo & { content: string };
}

export const CATALOG_SERVICE = createServiceRef<CatalogService>('catalog');

/** Who reads the generated documentation. */
export interface DocReader {
  readonly caller: Caller;
  /** True for a relation (`schema.name`) in a schema the reader may not see: leave it out. */
  hidden(relation: string): boolean;
}

/** A section's content for one reader. */
export interface DocSectionContent<T = unknown> {
  /** The section's entries (the structured docs' `<key>` list; `counts.<key>` is their number). */
  entries: T[];
  /** Further keys of the structured docs (`metric_errors`). */
  extra?: Record<string, unknown>;
  /** Lower-case model full name → the names of the entries about it (the model's `<key>` list and "<title>:" line). */
  byModel: Map<string, string[]>;
}

/** A top-level section of the generated documentation, after models, seeds, sources and exposures. */
export interface DocSection<T = unknown> {
  /** Key in the structured docs and in `counts` (`metrics`); also the key of each model's list. */
  key: string;
  /** Heading in the Markdown document (`Metrics`). */
  title: string;
  /** Orders the sections (lower first). */
  order: number;
  collect(reader: DocReader): Promise<DocSectionContent<T>>;
  /** The Markdown body of the section (after its heading); the catalog writes "No <key>." for an empty one. */
  markdown(content: DocSectionContent<T>): string[];
}

/** A table or view of the warehouse; `rows` is exact for a table, null for a view. */
export interface CountedRelation {
  schema: string;
  name: string;
  type: 'table' | 'view';
  rows?: number | null;
}

/**
 * A plugin's contribution to the catalog (its sources, exposures, overview and generated docs):
 * a docs section, the column lineage of models, the exposures, the warehouse's relations, counts
 * for the overview. Each is absent with the plugin that gives it.
 */
export interface DocContribution {
  section?: DocSection<any>;
  /** Column → upstream columns of a model (`schema.name`); throws when it cannot tell. */
  columnLineage?(model: string): Promise<Record<string, ColumnSource[]>>;
  /** The project's exposures (`depends_on` defaulted to []): the exposures route, the docs and the overview's count. */
  exposures?(): ExposureConfig[];
  /**
   * The warehouse's tables and views with row counts, counted as the reader's read (its query
   * slot, deadline and signal); the catalog leaves out the schemas hidden from the reader.
   */
  relations?(reader: { caller: Caller; signal?: QueryStopSignal }): Promise<CountedRelation[]>;
  /** Counts the overview adds to its totals after its own (semantic: `metrics`). */
  overviewTotals?(): Promise<Record<string, number>>;
}

export const CATALOG_DOCS = createExtensionPoint<DocContribution>('catalog.docs');

/** Markdown helpers for doc sections: inline code, a list of them ("none" when empty). */
export const markdownCode = (value: string): string => '`' + value.replace(/`/g, "'") + '`';
export const markdownCodes = (values: string[]): string => (values.length ? values.map(markdownCode).join(', ') : 'none');
