/**
 * The notebook API (SPEC "Notebooks and collaboration"): list, read, validated save and cell
 * execution. Every route carries request and response schemas, so /docs lists the whole API.
 * The execute route is declared `read` because a viewer may run sql cells (read-only, masked,
 * like POST /api/query); code and ingest cells, and sql statements that write, need `execute`,
 * checked per cell (403 `insufficient_role`).
 */
import type { FastifyReply } from 'fastify';
import { badRequest, errorTextsFor, notFound, VALUES_HIDDEN_FROM, type JsonSchema, type PluginContext, type Role } from '../../sdk/index.js';
import type { CellResult, ExecuteCellRequest, Notebook } from './api-types.js';
import { listNotebooks, locateNotebook, MAX_NOTEBOOK_BYTES, readNotebookFile, saveNotebook } from './files.js';
import { assertNotebook, CELL_SCHEMA, NOTEBOOK_SCHEMA } from './schema.js';
import type { NotebookSessions } from './session.js';

const TAGS = ['notebooks'];

const pathParam: JsonSchema = {
  type: 'object',
  properties: { '*': { type: 'string', description: 'Project-relative notebook path, e.g. notebooks/explore.dpnb (POST: followed by /execute)' } },
};

const summarySchema: JsonSchema = {
  type: 'object',
  properties: {
    path: { type: 'string' },
    title: { type: 'string', description: 'First markdown heading, else the file name' },
    cell_count: { type: 'integer' },
    modified: { type: 'string', format: 'date-time' },
    valid: { type: 'boolean' },
    error: { type: 'string' },
  },
};

const documentSchema: JsonSchema = {
  type: 'object',
  properties: {
    path: { type: 'string' },
    cells: { type: 'array', items: CELL_SCHEMA },
    metadata: { type: 'object', additionalProperties: true },
    modified: { type: 'string', format: 'date-time' },
    sha256: { type: 'string' },
  },
};

const cellResultSchema: JsonSchema = {
  type: 'object',
  description: "By cell type: sql {columns, column_types, rows, truncated, duration_ms}; code/ingest {output, value, exports, duration_ms}; markdown {}",
  properties: {
    type: { type: 'string', enum: ['sql', 'code', 'markdown'] },
    cell_index: { type: 'integer' },
    columns: { type: 'array', items: { type: 'string' } },
    column_types: { type: 'array', items: { type: 'string' } },
    rows: { type: 'array', items: { type: 'array', items: {} } },
    truncated: { type: 'boolean' },
    statement: { type: 'string', enum: ['write'] },
    output: {
      type: 'array',
      items: { type: 'object', properties: { stream: { type: 'string', enum: ['stdout', 'stderr'] }, text: { type: 'string' } } },
    },
    value: { description: 'JSON-safe rendering of the last expression (null when none)' },
    exports: { type: 'array', items: { type: 'string' } },
    duration_ms: { type: 'number' },
    execution_count: { type: 'integer', description: "The notebook's run counter after this run (shared by everyone running cells of the notebook on this server)" },
  },
};

/**
 * The latest output of each cell of each notebook, so collaborators see what someone ran (the
 * page hears of a run through the collaboration socket's awareness, then reads them here). An
 * output is shown only to callers of the role that made it: masking made it for that role, and
 * policies exempt roles by name, not by rank.
 */
interface SharedOutput {
  cell_index: number;
  execution_count: number;
  by: string;
  role: Role;
  at: string;
  result: CellResult;
}

const outputSchema: JsonSchema = {
  type: 'object',
  properties: {
    cell_index: { type: 'integer' },
    execution_count: { type: 'integer' },
    by: { type: 'string' },
    at: { type: 'string', format: 'date-time' },
    withheld: { type: 'boolean', description: 'Made by another role (masked for that role): run the cell to see it as your role sees it' },
    result: cellResultSchema,
  },
};

/** Aborted when the client closes its connection before the answer: the cell's queries stop. */
function clientLeaves(reply: FastifyReply): AbortSignal {
  const left = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) left.abort(new Error('the client left'));
  });
  return left.signal;
}

export function registerRoutes(ctx: PluginContext, sessions: NotebookSessions): void {
  const valuesHidden = ctx.hook(VALUES_HIDDEN_FROM);
  const shared = new Map<string, { count: number; cells: Map<number, SharedOutput> }>();
  const outputsOf = (rel: string) => {
    let entry = shared.get(rel);
    if (!entry) shared.set(rel, (entry = { count: 0, cells: new Map() }));
    return entry;
  };

  ctx.route<unknown, unknown, { '*': string }>({
    method: 'GET',
    url: '/api/notebooks/outputs/*',
    permission: 'read',
    tags: TAGS,
    summary: "The latest output of each cell run on this server, with the notebook's execution counter (an output made by another role is withheld)",
    schema: {
      params: pathParam,
      response: { 200: { type: 'object', properties: { path: { type: 'string' }, execution_count: { type: 'integer' }, outputs: { type: 'array', items: outputSchema } } } },
    },
    handler: async (req) => {
      const file = locateNotebook(ctx, req.params['*']);
      const entry = shared.get(file.rel);
      const errorTexts = await errorTextsFor(valuesHidden, req.caller);
      const outputs = [...(entry?.cells.values() ?? [])]
        .sort((a, b) => a.cell_index - b.cell_index)
        .map(({ role, result, ...o }) => (role !== req.caller.role ? { ...o, withheld: true } : { ...o, result: errorTexts.fields(result) }));
      return { path: file.rel, execution_count: entry?.count ?? 0, outputs };
    },
  });
  ctx.route({
    method: 'GET',
    url: '/api/notebooks',
    permission: 'read',
    tags: TAGS,
    summary: 'List the notebooks (.dpnb under notebooks/, ingest/, export/) with title, cell count and modification time',
    schema: { response: { 200: { type: 'object', properties: { notebooks: { type: 'array', items: summarySchema } } } } },
    handler: () => ({ notebooks: listNotebooks(ctx) }),
  });

  ctx.route<unknown, unknown, { '*': string }>({
    method: 'GET',
    url: '/api/notebooks/*',
    permission: 'read',
    tags: TAGS,
    summary: 'Read a notebook: {path, cells, modified, sha256}',
    schema: { params: pathParam, response: { 200: documentSchema } },
    // Saved outputs hold the error texts of earlier runs, maybe an admin's: redacted for a caller masking binds.
    handler: async (req) => (await errorTextsFor(valuesHidden, req.caller)).fields(readNotebookFile(locateNotebook(ctx, req.params['*']))),
  });

  ctx.route<Notebook, unknown, { '*': string }>({
    method: 'PUT',
    url: '/api/notebooks/*',
    permission: 'write',
    tags: TAGS,
    summary: 'Save a notebook {cells} (validated against the notebook schema; written atomically; a refused body leaves the file untouched)',
    bodyLimit: MAX_NOTEBOOK_BYTES,
    schema: {
      params: pathParam,
      // Validated by the handler against NOTEBOOK_SCHEMA, so a bad body is a 400 invalid_notebook naming the field.
      body: NOTEBOOK_SCHEMA,
      response: {
        200: {
          type: 'object',
          properties: { path: { type: 'string' }, saved: { type: 'boolean' }, created: { type: 'boolean' }, cell_count: { type: 'integer' }, sha256: { type: 'string' } },
        },
      },
    },
    handler: (req) => saveNotebook(ctx, locateNotebook(ctx, req.params['*']), req.body),
  });

  ctx.route<ExecuteCellRequest & { cells?: Notebook['cells'] }, unknown, { '*': string }>({
    method: 'POST',
    url: '/api/notebooks/*',
    permission: 'read',
    tags: TAGS,
    summary: 'POST /api/notebooks/{file}.dpnb/execute {cell_index}: run one cell in the notebook\'s session (sql: read, code/ingest: execute)',
    description:
      'Runs cell `cell_index` of the saved notebook (or of `cells` when given: the editor\'s unsaved state). ' +
      'sql cells run through the guarded query runner as the caller (masking, role timeout, row limit); a sql cell with an `id` can be selected from by later sql cells and read as rows by later code cells. ' +
      'code/ingest cells (TypeScript/JavaScript) need the execute permission, see `db` and earlier cells\' exports, and answer their console output and the last expression\'s value; ' +
      'an error answers 400 notebook_cell_error with details {cell_index, line}. Past the role\'s timeout: 408 query_timeout.',
    schema: {
      params: pathParam,
      body: {
        type: 'object',
        required: ['cell_index'],
        additionalProperties: false,
        properties: {
          cell_index: { type: 'integer', description: '0-based index of the cell to run' },
          cells: { type: 'array', items: CELL_SCHEMA, description: 'Run against these cells instead of the saved file (not saved)' },
        },
      },
      response: { 200: cellResultSchema },
    },
    handler: async (req, reply) => {
      const raw = req.params['*'] ?? '';
      if (!raw.endsWith('/execute')) throw notFound('notebook_route_not_found', 'POST /api/notebooks/{file}.dpnb/execute is the only POST route here', { path: raw });
      const file = locateNotebook(ctx, raw.slice(0, -'/execute'.length));
      const saved = readNotebookFile(file);
      const notebook = req.body.cells ? assertNotebook({ cells: req.body.cells }, file.rel) : saved;
      const index = req.body.cell_index;
      if (!Number.isInteger(index) || index < 0 || index >= notebook.cells.length) {
        throw badRequest('invalid_cell_index', `cell_index ${index} is not a cell of ${file.rel} (it has ${notebook.cells.length})`, {
          field: 'cell_index',
          cell_count: notebook.cells.length,
        });
      }
      const errorTexts = await errorTextsFor(valuesHidden, req.caller);
      const entry = outputsOf(file.rel);
      const executionCount = ++entry.count;
      try {
        const result = await sessions.execute({ path: file.rel, notebook, cellIndex: index, caller: req.caller, signal: clientLeaves(reply) });
        entry.cells.set(index, { cell_index: index, execution_count: executionCount, by: req.caller.display_name || req.caller.username || 'someone', role: req.caller.role, at: new Date().toISOString(), result });
        return errorTexts.fields({ ...result, execution_count: executionCount });
      } catch (e) {
        // A cell's error quotes the values it failed on (docs/security.md "Error texts").
        throw errorTexts.error(e);
      }
    },
  });
}
