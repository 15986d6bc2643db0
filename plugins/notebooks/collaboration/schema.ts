/**
 * A file as a shared Y.Doc and back. A `.dpnb` notebook is `cells`: a Y.Array of Y.Map
 * {id: string, type: string, source: Y.Text} (`id` is the cell's name from the file, '' when it
 * has none: it is the name later cells use, so collaboration never invents one), so two people typing in one cell merge character
 * by character and adding, moving or deleting cells are array operations. Any other text file is
 * one Y.Text `content`.
 */
import path from 'node:path';
import * as Y from 'yjs';
import { readNotebook } from '../../../sdk/index.js';
import { NOTEBOOK_CELLS, TEXT_CONTENT } from './protocol.js';

export type DocumentKind = 'notebook' | 'text';

export const kindOf = (rel: string): DocumentKind => (path.extname(rel).toLowerCase() === '.dpnb' ? 'notebook' : 'text');

/** Transaction origin of seeding: not an edit, so it neither marks the document dirty nor is broadcast as one. */
export const SEED_ORIGIN = Symbol('seed');

interface StoredCell {
  id?: unknown;
  type?: unknown;
  source?: unknown;
  [field: string]: unknown;
}

/** Parses a notebook file; 400 `invalid_notebook` (sdk) when it is not `{cells: [...]}`. */
function storedNotebook(content: string, rel: string): { cells: StoredCell[]; [field: string]: unknown } {
  readNotebook(content, rel);
  return JSON.parse(content);
}

const sourceText = (source: unknown) => (Array.isArray(source) ? source.join('') : String(source ?? ''));

/** Fills an empty Y.Doc from the file's content. */
export function seedDocument(doc: Y.Doc, kind: DocumentKind, content: string, rel: string): void {
  doc.transact(() => {
    if (kind === 'text') {
      doc.getText(TEXT_CONTENT).insert(0, content);
      return;
    }
    const cells = storedNotebook(content, rel).cells.map((c) => {
      const id = typeof c?.id === 'string' ? c.id : '';
      const cell = new Y.Map<unknown>();
      cell.set('id', id);
      cell.set('type', String(c?.type ?? 'code'));
      cell.set('source', new Y.Text(sourceText(c?.source)));
      return cell;
    });
    doc.getArray<Y.Map<unknown>>(NOTEBOOK_CELLS).insert(0, cells);
  }, SEED_ORIGIN);
}

/**
 * The file content of the document. For a notebook, `previous` (the file as it is on disk) keeps
 * what the shared document does not hold: top-level fields, and each cell's other fields (saved
 * `outputs`, `metadata`) matched by id (a cell without one: the cell at the same index), outputs
 * only while the cell's type and source are unchanged.
 */
export function documentContent(doc: Y.Doc, kind: DocumentKind, previous: string | null, rel: string): string {
  if (kind === 'text') return doc.getText(TEXT_CONTENT).toString();
  let stored: { cells: StoredCell[]; [field: string]: unknown } = { cells: [] };
  try {
    if (previous !== null) stored = storedNotebook(previous, rel);
  } catch {
    /* an unreadable file on disk keeps nothing */
  }
  const byId = new Map(stored.cells.filter((c) => typeof c?.id === 'string' && c.id).map((c) => [c.id as string, c]));
  const cells = doc
    .getArray<Y.Map<unknown>>(NOTEBOOK_CELLS)
    .toArray()
    .map((cell, index) => {
      const id = typeof cell.get('id') === 'string' ? (cell.get('id') as string) : '';
      const type = String(cell.get('type') ?? 'code');
      const source = String(cell.get('source') ?? '');
      const previousCell = id ? byId.get(id) : stored.cells[index] && !stored.cells[index].id ? stored.cells[index] : undefined;
      const { id: _id, type: oldType, source: oldSource, outputs, ...rest } = previousCell ?? {};
      const unchanged = oldType === type && sourceText(oldSource) === source;
      return { ...(id ? { id } : {}), type, source, ...rest, ...(unchanged && outputs !== undefined ? { outputs } : {}) };
    });
  return JSON.stringify({ ...stored, cells }, null, 2) + '\n';
}
