/**
 * Notebook files: which paths are notebooks (a `.dpnb` under notebooks/, ingest/ or export/,
 * checked as written and again on its real path, like the script runner), listing, reading and
 * the validated atomic save (ctx.project.writeFile: temp file + rename, the files API's helper).
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { badRequest, errorMessage, notFound, walkProjectFiles, type PluginContext } from '../../sdk/index.js';
import type { Notebook, NotebookDocument, NotebookSaveResponse, NotebookSummary } from './api-types.js';
import { assertNotebook, cellSource, parseNotebook } from './schema.js';

export const NOTEBOOK_FOLDERS = ['notebooks', 'ingest', 'export'] as const;

/** Notebooks larger than this are refused on read and save. */
export const MAX_NOTEBOOK_BYTES = 5 * 1024 * 1024;

export interface NotebookFile {
  /** Project-relative, forward slashes. */
  rel: string;
  abs: string;
}

const sha256 = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');

function inFolders(rel: string): boolean {
  const parts = rel.split('/');
  return parts.length >= 2 && (NOTEBOOK_FOLDERS as readonly string[]).includes(parts[0]) && parts.every((p) => p !== '' && p !== '.' && p !== '..') && !parts.some((p) => p.startsWith('.'));
}

/**
 * Resolves a requested notebook path: 400 `notebook_path_refused` unless it is a `.dpnb` inside
 * the notebook folders both as written and once symlinks are resolved (ctx.project.resolve
 * already refuses anything outside the project with `path_outside_project`).
 */
export function locateNotebook(ctx: PluginContext, raw: string | undefined): NotebookFile {
  const requested = String(raw ?? '').replace(/^\/+/, '');
  // A bare name (`explore.dpnb`, as SPEC.md writes the routes) is a notebook of notebooks/.
  const written = path.posix.normalize(requested).replace(/^\.\//, '');
  const rel = written.includes('/') ? written : `notebooks/${written}`;
  const refuse = () =>
    badRequest('notebook_path_refused', `Notebooks are .dpnb files under ${NOTEBOOK_FOLDERS.map((f) => `${f}/`).join(', ')}: '${requested}' is not one`, {
      path: requested,
      allowed: [...NOTEBOOK_FOLDERS],
    });
  if (!requested || Buffer.byteLength(requested) > 1024 || !inFolders(rel) || path.posix.extname(rel).toLowerCase() !== '.dpnb') throw refuse();
  const abs = ctx.project.resolveReadable(rel);
  // The file (or, for a new one, its nearest existing folder) must really be inside the folders too.
  let probe = abs;
  while (!fs.existsSync(probe) && path.dirname(probe) !== probe) probe = path.dirname(probe);
  const realRoot = fs.realpathSync(ctx.project.root);
  const realProbe = path.relative(realRoot, fs.realpathSync(probe)).split(path.sep).join('/');
  const realRel = probe === abs ? realProbe : `${realProbe}/${path.relative(probe, abs).split(path.sep).join('/')}`;
  if (!inFolders(realRel) || (probe === abs && path.extname(realRel).toLowerCase() !== '.dpnb')) throw refuse();
  return { rel, abs };
}

function readFile(file: NotebookFile): Buffer {
  let stat: fs.Stats;
  try {
    stat = fs.statSync(file.abs);
  } catch {
    throw notFound('file_not_found', `No notebook '${file.rel}'`, { path: file.rel });
  }
  if (!stat.isFile()) throw notFound('file_not_found', `No notebook '${file.rel}'`, { path: file.rel });
  if (stat.size > MAX_NOTEBOOK_BYTES) throw badRequest('file_too_large', `'${file.rel}' is larger than 5 MiB`, { path: file.rel });
  return fs.readFileSync(file.abs);
}

export function readNotebookFile(file: NotebookFile): NotebookDocument {
  const bytes = readFile(file);
  const notebook = parseNotebook(bytes.toString('utf8'), file.rel);
  return { path: file.rel, ...notebook, modified: fs.statSync(file.abs).mtime.toISOString(), sha256: sha256(bytes) };
}

/** The first markdown heading of a notebook, without its #s. */
export function notebookTitle(notebook: Notebook, rel: string): string {
  for (const cell of notebook.cells) {
    if (cell.type !== 'markdown') continue;
    const heading = /^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$/m.exec(cellSource(cell.source));
    if (heading) return heading[1];
  }
  return path.posix.basename(rel, '.dpnb');
}

export function listNotebooks(ctx: PluginContext): NotebookSummary[] {
  const out: NotebookSummary[] = [];
  for (const folder of NOTEBOOK_FOLDERS) {
    let entries: ReturnType<typeof walkProjectFiles>;
    try {
      entries = walkProjectFiles(ctx.project, folder, { extensions: ['.dpnb'] });
    } catch {
      continue; // a folder that is a link out of the project, or unreadable: nothing of it is listed
    }
    for (const entry of entries) {
      const modified = new Date(entry.mtimeMs ?? 0).toISOString();
      try {
        const file = locateNotebook(ctx, entry.path);
        const notebook = parseNotebook(readFile(file).toString('utf8'), entry.path);
        out.push({ path: entry.path, title: notebookTitle(notebook, entry.path), cell_count: notebook.cells.length, modified, valid: true });
      } catch (e) {
        // A broken file is listed (so it can be opened and fixed), never a reason to fail the list.
        out.push({ path: entry.path, title: path.posix.basename(entry.path, '.dpnb'), cell_count: 0, modified, valid: false, error: errorMessage(e) });
      }
    }
  }
  return out;
}

/**
 * The text a notebook is saved as: two-space JSON with a final newline and keys in one order
 * (cell: type, id, source, outputs, metadata), so the same notebook is always the same bytes
 * whoever wrote it (the API, the converter, the editor) and diffs stay small.
 */
export function notebookText(notebook: Notebook): string {
  const cells = notebook.cells.map((c) => ({
    type: c.type,
    ...(c.id !== undefined ? { id: c.id } : {}),
    source: c.source,
    ...(c.outputs !== undefined ? { outputs: c.outputs } : {}),
    ...(c.metadata !== undefined ? { metadata: c.metadata } : {}),
  }));
  return JSON.stringify(notebook.metadata === undefined ? { cells } : { cells, metadata: notebook.metadata }, null, 2) + '\n';
}

/** Validates, then writes atomically; a refused notebook leaves the file as it was. */
export function saveNotebook(ctx: PluginContext, file: NotebookFile, body: unknown): NotebookSaveResponse {
  const notebook = assertNotebook(body, file.rel);
  const text = notebookText(notebook);
  if (Buffer.byteLength(text) > MAX_NOTEBOOK_BYTES) throw badRequest('file_too_large', `'${file.rel}' would be larger than 5 MiB`, { path: file.rel });
  if (fs.existsSync(file.abs) && fs.statSync(file.abs).isDirectory()) throw badRequest('is_directory', `'${file.rel}' is a folder`, { path: file.rel });
  const created = !fs.existsSync(file.abs);
  ctx.project.writeFile(file.rel, text);
  ctx.log.info('notebook saved', { path: file.rel, cells: notebook.cells.length });
  return { path: file.rel, saved: true, created, cell_count: notebook.cells.length, sha256: sha256(text) };
}
