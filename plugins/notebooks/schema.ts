/**
 * The JSON schema of a `.dpnb` file, the one source for PUT's validation (ajv), the OpenAPI
 * description of the routes and docs/notebooks.md. A notebook is `{cells: [{type, source}]}`;
 * a cell may carry an `id` (a name later cells use, see session.ts) and its saved `outputs`.
 */
import { Ajv, type ErrorObject } from 'ajv';
import { ajvFieldError, badRequest, compileOnFirstUse, type JsonSchema } from '../../sdk/index.js';
import type { Notebook } from './api-types.js';

export const CELL_TYPES = ['markdown', 'code', 'sql', 'ingest'] as const;

/** A cell id is an identifier in both SQL and TypeScript, so later cells can name it as is. */
export const CELL_ID_PATTERN = '^[A-Za-z_][A-Za-z0-9_]*$';

export const CELL_SCHEMA: JsonSchema = {
  type: 'object',
  required: ['type', 'source'],
  additionalProperties: false,
  properties: {
    type: { type: 'string', enum: [...CELL_TYPES], description: 'markdown, code (TypeScript/JavaScript), sql, ingest (code that writes to the warehouse)' },
    source: {
      description: 'The cell text (a list of lines is joined as written, Jupyter style)',
      oneOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }],
    },
    id: { type: 'string', pattern: CELL_ID_PATTERN, maxLength: 128, description: 'A name later cells use: a sql cell with an id is a table expression later sql cells select from, and its rows a value later code cells read' },
    outputs: { type: 'array', items: {}, description: 'Saved outputs of the cell (kept as given)' },
    metadata: { type: 'object', description: 'Free-form editor metadata (kept as given)' },
  },
};

export const NOTEBOOK_SCHEMA: JsonSchema = {
  type: 'object',
  required: ['cells'],
  additionalProperties: false,
  properties: {
    cells: { type: 'array', items: CELL_SCHEMA, maxItems: 10000 },
    metadata: { type: 'object', description: 'Free-form notebook metadata (kept as given)' },
  },
};

const validate = compileOnFirstUse(() => new Ajv({ allErrors: false, strict: false }).compile<Notebook>(NOTEBOOK_SCHEMA));

/**
 * Validates a parsed notebook against NOTEBOOK_SCHEMA plus the one rule a schema cannot say
 * (ids unique); throws DpError 400 `invalid_notebook` naming the field.
 */
export function assertNotebook(value: unknown, file: string): Notebook {
  if (!validate(value)) {
    const error = ajvFieldError((validate.errors as ErrorObject[])[0]);
    throw badRequest('invalid_notebook', `${file}: ${error.message}`, { path: file, field: error.field });
  }
  const seen = new Set<string>();
  for (const [i, cell] of value.cells.entries()) {
    if (cell.id === undefined) continue;
    if (seen.has(cell.id)) throw badRequest('invalid_notebook', `${file}: cell id '${cell.id}' is used twice`, { path: file, field: `cells.${i}.id` });
    seen.add(cell.id);
  }
  return value;
}

/** Parses and validates notebook text (a file's content). */
export function parseNotebook(text: string, file: string): Notebook {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw badRequest('invalid_notebook', `${file}: a notebook is JSON {"cells": [...]}`, { path: file });
  }
  return assertNotebook(json, file);
}

/** A cell's text: a list of lines joined as written. */
export function cellSource(source: string | string[]): string {
  return Array.isArray(source) ? source.join('') : source;
}
