/**
 * The catalog plugin's service: the project's generated documentation and dp's user guide (the
 * wiki), for other plugins (the agents plugin serves both as MCP resources).
 */
import type { Caller } from './auth.js';
import { createServiceRef } from './plugin.js';

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
