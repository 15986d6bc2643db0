/**
 * The wiki: dp's own user guide, shipped with the plugin as markdown pages in `wiki/` (one file per
 * page, the slug is the file stem), each opening with YAML front matter:
 *
 *     ---
 *     title: Getting started
 *     category: Basics
 *     order: 1
 *     plugin: models      # optional: the plugin whose feature the page documents
 *     ---
 *
 * Pages are read once per process (they are part of the installed package, not of the project).
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { notFound, readYaml } from '../../sdk/index.js';

export interface WikiPage {
  slug: string;
  title: string;
  category: string;
  order: number;
  /** The plugin whose feature the page documents (front matter `plugin`), or null for general pages. */
  plugin: string | null;
  content: string;
}

/**
 * The folder of the pages. This module runs compiled from `dist/plugins/catalog/`, the pages stay
 * beside the plugin's source (`plugins/catalog/wiki/`), so both places are tried.
 */
export function wikiDir(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const candidates = [path.join(here, 'wiki'), path.resolve(here, '..', '..', '..', 'plugins', 'catalog', 'wiki')];
  return candidates.find((d) => fs.existsSync(d)) ?? candidates[0]!;
}

const FRONT_MATTER = /^---\r?\n([\s\S]*?)\r?\n---\r?\n?/;

/** One page file: front matter (title and category required) and the markdown after it. */
export function parsePage(slug: string, text: string): WikiPage {
  const match = FRONT_MATTER.exec(text);
  if (!match) throw new Error(`wiki/${slug}.md has no front matter`);
  const meta = readYaml(match[1]!, `wiki/${slug}.md`).value as Record<string, unknown> | null;
  if (!meta || typeof meta.title !== 'string' || typeof meta.category !== 'string') throw new Error(`wiki/${slug}.md front matter needs title and category`);
  return {
    slug,
    title: meta.title,
    category: meta.category,
    order: typeof meta.order === 'number' ? meta.order : 1000,
    plugin: typeof meta.plugin === 'string' ? meta.plugin : null,
    content: text.slice(match[0].length).replace(/^\s+/, ''),
  };
}

let cached: WikiPage[] | null = null;

/** Every page, by order then title. */
export function wikiPages(): WikiPage[] {
  if (cached) return cached;
  const dir = wikiDir();
  const files = fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => f.endsWith('.md')) : [];
  cached = files.map((f) => parsePage(f.slice(0, -3), fs.readFileSync(path.join(dir, f), 'utf8'))).sort((a, b) => a.order - b.order || a.title.localeCompare(b.title));
  return cached;
}

export function wikiPage(slug: string): WikiPage {
  const page = wikiPages().find((p) => p.slug === slug);
  if (!page) throw notFound('wiki_page_not_found', `No wiki page '${slug}'`, { slug, available: wikiPages().map((p) => p.slug) });
  return page;
}

/**
 * Pages that hold every word of `query` (case-insensitive), with the first matching line of each
 * as a snippet: the reader's search box.
 */
export function searchWiki(query: string): Array<{ slug: string; title: string; category: string; snippet: string }> {
  const words = query.toLowerCase().split(/\s+/).filter(Boolean);
  if (!words.length) return [];
  return wikiPages()
    .filter((p) => {
      const text = `${p.title}\n${p.content}`.toLowerCase();
      return words.every((w) => text.includes(w));
    })
    .map((p) => {
      const lines = p.content.split('\n').filter((l) => l.trim() && !l.startsWith('#') && !l.startsWith('```'));
      const line = lines.find((l) => words.every((w) => l.toLowerCase().includes(w))) ?? lines.find((l) => words.some((w) => l.toLowerCase().includes(w))) ?? '';
      return { slug: p.slug, title: p.title, category: p.category, snippet: line.trim().slice(0, 200) };
    });
}
