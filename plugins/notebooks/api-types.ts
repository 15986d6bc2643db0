/**
 * The notebook API's request and response shapes, type-only so the web page imports them with
 * `import type` (no server code reaches the browser bundle). The routes' OpenAPI schemas
 * (routes.ts) describe the same shapes.
 */

export type CellType = 'markdown' | 'code' | 'sql' | 'ingest';

export interface NotebookCell {
  type: CellType;
  /** The cell text; a list of lines is joined as written. */
  source: string | string[];
  /** A name later cells use (an identifier): see the README's "Names across cells". */
  id?: string;
  /** Saved outputs, kept as given. */
  outputs?: unknown[];
  metadata?: Record<string, unknown>;
}

export interface Notebook {
  cells: NotebookCell[];
  metadata?: Record<string, unknown>;
}

/** `GET /api/notebooks`: one entry per .dpnb under notebooks/, ingest/ and export/. */
export interface NotebookSummary {
  /** Project-relative path. */
  path: string;
  /** The first markdown heading, else the file name without .dpnb. */
  title: string;
  cell_count: number;
  /** ISO time of the last change of the file. */
  modified: string;
  /** False when the file is not a valid notebook (then `error` says why). */
  valid: boolean;
  error?: string;
}

export interface NotebookList {
  notebooks: NotebookSummary[];
}

/** `GET /api/notebooks/{file}.dpnb`. */
export interface NotebookDocument extends Notebook {
  path: string;
  modified: string;
  /** sha256 of the file's bytes (the files API's base_sha256 for a conditional save). */
  sha256: string;
}

/** `PUT /api/notebooks/{file}.dpnb` request. */
export interface NotebookSaveRequest {
  cells: NotebookCell[];
  metadata?: Record<string, unknown>;
}

export interface NotebookSaveResponse {
  path: string;
  saved: true;
  created: boolean;
  cell_count: number;
  sha256: string;
}

/** `POST /api/notebooks/{file}.dpnb/execute` request. */
export interface ExecuteCellRequest {
  cell_index: number;
}

export interface SqlCellResult {
  type: 'sql';
  cell_index: number;
  columns: string[];
  column_types: string[];
  rows: unknown[][];
  truncated: boolean;
  duration_ms: number;
  /** Set for a statement that changed the warehouse (callers with execute only). */
  statement?: 'write';
}

export interface CodeOutputLine {
  stream: 'stdout' | 'stderr';
  text: string;
}

export interface CodeCellResult {
  type: 'code';
  cell_index: number;
  output: CodeOutputLine[];
  /** JSON-safe rendering of the value of the cell's last expression (null when it has none). */
  value: unknown;
  /** Names the cell exported (`export const x = ...`), now in scope for later cells. */
  exports: string[];
  duration_ms: number;
}

export interface MarkdownCellResult {
  type: 'markdown';
  cell_index: number;
}

export type CellResult = SqlCellResult | CodeCellResult | MarkdownCellResult;

/** `GET /api/notebooks/outputs/{file}.dpnb`: the latest output of each cell run on the server. */
export interface SharedOutputs {
  path: string;
  execution_count: number;
  outputs: Array<{ cell_index: number; execution_count: number; by: string; at: string; withheld?: boolean; result?: CellResult & { execution_count?: number } }>;
}

/** The error body of a failing code cell: `{error: {code: 'notebook_cell_error', message, details}}`. */
export interface CellErrorDetails {
  path: string;
  cell_index: number;
  /** 1-based line within the cell, when known. */
  line: number | null;
  /** Console output captured before the error. */
  output?: CodeOutputLine[];
}
