/**
 * Import (`POST /api/import`, multipart): a CSV, Parquet, JSON or .xlsx upload into a table of a
 * chosen schema (default `landing`). `preview=true` answers the inferred columns and the first
 * rows and writes nothing; the import itself runs in one transaction with its record in
 * `_service.imports` (the full DAG shows each imported table as an `import` node).
 *
 * The upload is streamed to a temporary file under the project's hidden `.dp/imports/` (inside
 * the folder DuckDB's sandbox allows), read there by DuckDB's own readers (for .xlsx the sdk's
 * worksheet reader, sdk/workbook-reader.ts), and removed afterwards, whatever happened (one a
 * killed process left is removed at the next start: scratch.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type ExcelJS from 'exceljs';
import { IMPORTS_SCRATCH, scratchName } from './scratch.js';
import { assertJsonFileNesting, badRequest, CellBudget, conflict, errorMessage, isDpError, qualified, quoteIdent, plainCellValue, readWorksheets, SAFE_NAME, type BulkColumn, type DatabasePort, type DbConnection, type PluginContext } from '../../sdk/index.js';

export const IMPORT_FORMATS = { '.csv': 'csv', '.tsv': 'csv', '.txt': 'csv', '.parquet': 'parquet', '.json': 'json', '.jsonl': 'json', '.ndjson': 'json', '.xlsx': 'xlsx' } as const;
export type ImportFormat = (typeof IMPORT_FORMATS)[keyof typeof IMPORT_FORMATS];
export const IMPORT_MAX_BYTES = 1024 * 1024 * 1024;
const PREVIEW_ROWS = 20;
/** Rows of an .xlsx sheet looked at to infer its column types. */
const XLSX_SAMPLE_ROWS = 1000;

export interface ImportRequest {
  file: string;
  fileName: string;
  format: ImportFormat;
  schema: string;
  table: string;
  mode: 'create' | 'replace' | 'append';
  preview: boolean;
  sheet?: string;
}

function readerSql(db: DatabasePort, format: ImportFormat, file: string): string {
  const f = db.literal(file);
  switch (format) {
    case 'csv':
      return `SELECT * FROM read_csv(${f}, auto_detect = true)`;
    case 'parquet':
      return `SELECT * FROM read_parquet(${f})`;
    case 'json':
      return `SELECT * FROM read_json_auto(${f})`;
    default:
      throw new Error(`no SQL reader for ${format}`);
  }
}

/** A table name from a file name: `Orders 2024.csv` → `orders_2024`. */
export function tableNameOf(fileName: string): string {
  const stem = path.basename(fileName).replace(/\.[^.]+$/, '');
  const name = stem.toLowerCase().replace(/[^a-z0-9_]+/g, '_').replace(/^_+|_+$/g, '');
  return /^[a-z_]/.test(name) ? name : `t_${name || 'import'}`;
}

interface SheetShape {
  columns: BulkColumn[];
  sample: unknown[][];
}

function kindOf(v: unknown): string | null {
  if (v === null || v === undefined || v === '') return null;
  if (typeof v === 'number') return 'DOUBLE';
  if (typeof v === 'boolean') return 'BOOLEAN';
  if (v instanceof Date) return 'TIMESTAMP';
  return 'VARCHAR';
}

/** Streams the rows of one worksheet (the first, or `sheet`), header row first. */
async function* sheetRows(file: string, sheet: string | undefined, what: string): AsyncGenerator<unknown[]> {
  const budget = new CellBudget(what);
  let seen = false;
  for await (const w of readWorksheets(file, what)) {
    if (seen || (sheet && w.name !== sheet)) continue;
    seen = true;
    for await (const row of w) {
      const values = (row.values as ExcelJS.CellValue[]).slice(1);
      budget.spend(values.length);
      yield values.map(plainCellValue);
    }
  }
  if (!seen) throw badRequest('invalid_import', sheet ? `The workbook has no sheet '${sheet}'` : 'The workbook has no sheet', { field: 'sheet' });
}

async function xlsxShape(file: string, sheet: string | undefined, sampleRows: number, what: string): Promise<SheetShape> {
  let header: string[] | undefined;
  const sample: unknown[][] = [];
  for await (const row of sheetRows(file, sheet, what)) {
    if (!header) {
      header = row.map((v, i) => (v === null || v === undefined || String(v).trim() === '' ? `column${i + 1}` : String(v).trim()));
      continue;
    }
    sample.push(row);
    if (sample.length >= sampleRows) break;
  }
  if (!header) throw badRequest('import_parse_failed', 'The sheet is empty (no header row)', { field: 'file' });
  const kinds = header.map((_, i) => {
    const seen = new Set(sample.map((r) => kindOf(r[i])).filter((k): k is string => k !== null));
    return seen.size === 1 ? [...seen][0]! : 'VARCHAR';
  });
  const unique = new Map<string, number>();
  const columns = header.map((name, i) => {
    const n = unique.get(name) ?? 0;
    unique.set(name, n + 1);
    return { name: n ? `${name}_${n + 1}` : name, type: kinds[i]! };
  });
  return { columns, sample };
}

/**
 * Refuses an upload before anything parses it when it would take the server down: JSON nested
 * deeper than the engine is trusted with (DuckDB infers its structure by recursion). An .xlsx
 * that expands past what a spreadsheet read may take is refused by the read itself, before it
 * parses a part (readWorksheets, sdk/workbook-limits.ts).
 */
async function assertReadable(req: ImportRequest): Promise<void> {
  if (req.format === 'json') await assertJsonFileNesting(req.file, `'${req.fileName}'`);
}

function conform(row: unknown[], columns: BulkColumn[]): unknown[] {
  return columns.map((c, i) => {
    const v = row[i];
    if (v === null || v === undefined || v === '') return null;
    if (c.type === 'VARCHAR') return v instanceof Date ? v.toISOString() : String(v);
    return v;
  });
}

export class ImportService {
  constructor(private readonly ctx: Pick<PluginContext, 'db' | 'project' | 'log'>) {}

  private scratchFile(ext: string): string {
    const dir = this.ctx.project.resolve(IMPORTS_SCRATCH);
    fs.mkdirSync(dir, { recursive: true });
    return path.join(dir, scratchName(ext));
  }

  async preview(req: ImportRequest) {
    try {
      if (req.format === 'xlsx') {
        const shape = await xlsxShape(req.file, req.sheet, PREVIEW_ROWS, `'${req.fileName}'`);
        return { preview: true, file_name: req.fileName, format: req.format, schema: req.schema, table: req.table, columns: shape.columns, rows: shape.sample.map((r) => conform(r, shape.columns)) };
      }
      await assertReadable(req);
      const sql = readerSql(this.ctx.db, req.format, req.file);
      const described = await this.ctx.db.all<{ column_name: string; column_type: string }>(`DESCRIBE ${sql}`);
      const sample = await this.ctx.db.query(`${sql} LIMIT ${PREVIEW_ROWS}`);
      return {
        preview: true,
        file_name: req.fileName,
        format: req.format,
        schema: req.schema,
        table: req.table,
        columns: described.map((d) => ({ name: d.column_name, type: d.column_type })),
        rows: sample.rows,
      };
    } catch (e) {
      if (isDpError(e)) throw e;
      throw badRequest('import_parse_failed', `'${req.fileName}' could not be read as ${req.format}: ${errorMessage(e).split('\n')[0]}`, { field: 'file', format: req.format });
    }
  }

  async import(req: ImportRequest, importedBy: string | null) {
    const target = qualified(req.schema, req.table);
    return this.ctx.db.exclusive(() =>
      this.ctx.db.withConnection((c) =>
        c.transaction(async (tx) => {
          const exists = (await tx.catalog.kind(req.schema, req.table)) === 'table';
          if (exists && req.mode === 'create') {
            throw conflict('import_table_exists', `${req.schema}.${req.table} exists: choose mode 'replace' or 'append'`, { schema: req.schema, table: req.table });
          }
          let rows: number;
          try {
            rows = req.format === 'xlsx' ? await this.loadXlsx(tx, req, exists) : await this.loadWithDuckDb(tx, req, target, exists);
          } catch (e) {
            if (isDpError(e)) throw e;
            throw badRequest('import_parse_failed', `'${req.fileName}' could not be imported as ${req.format}: ${errorMessage(e).split('\n')[0]}`, { field: 'file', format: req.format });
          }
          await tx.run('INSERT INTO _service.imports VALUES ($1, $2, $3, $4, $5, now()::TIMESTAMP, $6)', [req.schema, req.table, path.basename(req.fileName), req.format, rows, importedBy]);
          return { schema: req.schema, table: req.table, format: req.format, rows_imported: rows, mode: req.mode };
        }),
      ),
    );
  }

  private async loadWithDuckDb(tx: DbConnection, req: ImportRequest, target: string, exists: boolean): Promise<number> {
    await assertReadable(req);
    const sql = readerSql(this.ctx.db, req.format, req.file);
    await tx.run(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(req.schema)}`);
    if (req.mode === 'append' && exists) {
      await tx.run(`INSERT INTO ${target} BY NAME ${sql}`);
    } else {
      await tx.run(`CREATE OR REPLACE TABLE ${target} AS ${sql}`);
    }
    return Number((await tx.value<bigint | number>(req.mode === 'append' && exists ? `SELECT count(*) FROM (${sql})` : `SELECT count(*) FROM ${target}`)) ?? 0);
  }

  private async loadXlsx(tx: DbConnection, req: ImportRequest, exists: boolean): Promise<number> {
    const shape = await xlsxShape(req.file, req.sheet, XLSX_SAMPLE_ROWS, `'${req.fileName}'`);
    const mode = req.mode === 'append' && exists ? 'append' : 'replace';
    const result = await tx.bulkLoad({ schema: req.schema, table: req.table, mode, columns: shape.columns }, async (writer) => {
      let header = true;
      let batch: unknown[][] = [];
      for await (const row of sheetRows(req.file, req.sheet, `'${req.fileName}'`)) {
        if (header) {
          header = false;
          continue;
        }
        batch.push(conform(row, shape.columns));
        if (batch.length >= 5000) {
          await writer.appendRows(batch);
          batch = [];
        }
      }
      if (batch.length) await writer.appendRows(batch);
    });
    return result.rows;
  }

  registerRoutes(ctx: PluginContext): void {
    ctx.route<unknown, { preview?: string; schema?: string; table?: string; mode?: string; sheet?: string }>({
      method: 'POST',
      url: '/api/import',
      permission: 'write',
      uploads: true,
      summary: 'Imports an uploaded CSV, Parquet, JSON or .xlsx file (multipart field `file`) into <schema>.<table>; preview=true answers the inferred columns and first rows and writes nothing',
      description:
        'Multipart form: `file` (the upload) and optional fields (or query parameters) `schema` (default landing), `table` (default from the file name), `mode` (`create` refuses an existing table, `replace`, `append`), `preview` (`true`), `sheet` (.xlsx).',
      handler: async (req) => {
        const raw = req.raw as unknown as { isMultipart?: () => boolean; parts: (o?: unknown) => AsyncIterable<{ type: 'file' | 'field'; fieldname: string; filename?: string; file?: NodeJS.ReadableStream & { truncated?: boolean }; value?: unknown }> };
        if (typeof raw.isMultipart !== 'function' || !raw.isMultipart()) throw badRequest('invalid_import', 'Send the file as multipart/form-data in the field `file`', { field: 'file' });
        const fields: Record<string, string> = { ...(req.query as Record<string, string>) };
        let upload: { file: string; fileName: string; format: ImportFormat } | undefined;
        try {
          for await (const part of raw.parts({ limits: { fileSize: IMPORT_MAX_BYTES, files: 1 } })) {
            if (part.type === 'field') {
              fields[part.fieldname] = String(part.value ?? '');
              continue;
            }
            const fileName = path.basename(part.filename ?? '');
            const ext = path.extname(fileName).toLowerCase() as keyof typeof IMPORT_FORMATS;
            const format = IMPORT_FORMATS[ext];
            if (part.fieldname !== 'file' || !format || upload) {
              for await (const _ of part.file!) void _;
              if (part.fieldname === 'file' && !format) throw badRequest('invalid_import', `Unsupported file type '${ext || fileName}': CSV, Parquet, JSON or .xlsx`, { field: 'file' });
              continue;
            }
            const file = this.scratchFile(ext);
            upload = { file, fileName, format };
            await pipeline(part.file!, fs.createWriteStream(file));
            if (part.file!.truncated) throw badRequest('invalid_import', `The file is larger than ${IMPORT_MAX_BYTES / 1024 / 1024} MB`, { field: 'file' });
          }
          if (!upload) throw badRequest('invalid_import', 'No file in the multipart field `file`', { field: 'file' });
          const schema = fields.schema || 'landing';
          const table = fields.table || tableNameOf(upload.fileName);
          const mode = (fields.mode || 'create') as ImportRequest['mode'];
          if (!SAFE_NAME.test(schema) || schema.startsWith('_')) throw badRequest('invalid_import', "'schema' must be a schema name (letters, digits, underscores; not starting with _)", { field: 'schema' });
          if (!SAFE_NAME.test(table)) throw badRequest('invalid_import', "'table' must be letters, digits and underscores, not starting with a digit", { field: 'table' });
          if (!['create', 'replace', 'append'].includes(mode)) throw badRequest('invalid_import', "'mode' must be create, replace or append", { field: 'mode' });
          const request: ImportRequest = { ...upload, schema, table, mode, preview: fields.preview === 'true', ...(fields.sheet ? { sheet: fields.sheet } : {}) };
          if (request.preview) return await this.preview(request);
          const done = await this.import(request, req.caller.username);
          ctx.log.info(`imported ${done.rows_imported} rows into ${schema}.${table} (${upload.format})`);
          return done;
        } finally {
          if (upload) fs.rmSync(upload.file, { force: true });
        }
      },
    });
  }
}
