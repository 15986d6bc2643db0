/**
 * `spreadsheet`: an `.xlsx` workbook (one table per sheet, read row by row with the sdk's
 * worksheet reader) or a CSV-export URL (a published sheet's `...export?format=csv`), which is
 * downloaded to a private temp file and read by DuckDB's CSV reader.
 */
import fs from 'node:fs';
import path from 'node:path';
import type ExcelJS from 'exceljs';
import { CellBudget, DpError, plainCellValue, readWorksheets, type ConnectorBatch, type ConnectorColumn, type ConnectorReadRequest, type ConnectorRuntime, type ConnectorType, type DiscoveredTable } from '../../sdk/index.js';
import { describeFiles, readFiles, saveStream, tempFolder } from './files.js';
import { expectOk, type HttpCall, hostOf, httpRequest, paramInvalid, probe, TIMEOUT_PARAM, timeoutOf } from './net.js';
import { generateSyncScript } from './script.js';
import { batchRowsOf, coerce, inferColumnsOfRows } from './values.js';

export const SPREADSHEET_PARAMS = {
  type: 'object',
  properties: {
    path: { type: 'string', description: 'An .xlsx file (project-relative or absolute); each sheet is a table' },
    url: { type: 'string', description: 'A CSV-export URL of a sheet (instead of path)' },
    token: { type: 'string', 'x-secret': true, description: 'Bearer token for a private export URL' },
    table_name: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]*$', default: 'sheet', description: 'Table name of a CSV-export URL' },
    header_row: { type: 'integer', minimum: 1, default: 1, description: '.xlsx: the row that holds the column names; data starts below it' },
    sample_rows: { type: 'integer', minimum: 1, maximum: 100000, default: 1000, description: '.xlsx: rows read to infer column types' },
    timeout_ms: TIMEOUT_PARAM,
  },
  oneOf: [{ required: ['path'] }, { required: ['url'] }],
  additionalProperties: false,
} as const;

interface SpreadsheetConfig {
  path?: string;
  url?: string;
  token?: string;
  table_name?: string;
  header_row?: number;
  sample_rows?: number;
  timeout_ms?: number;
}

function checkConfig(config: Record<string, unknown>): SpreadsheetConfig {
  const c = config as SpreadsheetConfig;
  if (!c.path && !c.url) throw paramInvalid('path', 'give an .xlsx path or a CSV-export url');
  if (c.path && c.url) throw paramInvalid('url', 'give either path or url, not both');
  if (c.url && !/^https?:\/\//i.test(c.url)) throw paramInvalid('url', 'must be an http(s) URL');
  if (c.path && !/\.xlsx$/i.test(c.path)) throw paramInvalid('path', 'must name an .xlsx file');
  return c;
}

/** The workbook's absolute path: inside the project when the connectors plugin calls (it refuses `..`, links out and hidden files). */
function workbookPath(c: SpreadsheetConfig, runtime: ConnectorRuntime | undefined): string {
  const file = runtime ? runtime.project.resolveReadable(c.path!) : path.resolve(c.path!);
  if (!fs.existsSync(file)) throw paramInvalid('path', `no such file: ${c.path}`);
  return file;
}

function headerNames(values: unknown[], width: number): string[] {
  const names: string[] = [];
  for (let i = 0; i < width; i++) {
    const raw = plainCellValue(values[i + 1]);
    let name = raw === null || String(raw).trim() === '' ? `column_${i + 1}` : String(raw).trim();
    const base = name;
    for (let n = 2; names.includes(name); n++) name = `${base}_${n}`;
    names.push(name);
  }
  return names;
}

/** Rows of each sheet, sheet by sheet: the header names and then data rows (as plain values). */
async function* sheetRows(file: string, headerRow: number, only?: string): AsyncGenerator<{ sheet: string; header: string[]; rows: AsyncGenerator<unknown[]> }> {
  // A workbook that would expand past what a read may take is refused before its parts are parsed.
  for await (const sheet of readWorksheets(file, `'${path.basename(file)}'`)) {
    const name = sheet.name;
    if (only !== undefined && name !== only) continue;
    const iterator = sheet[Symbol.asyncIterator]();
    let header: string[] | undefined;
    const buffered: ExcelJS.Row[] = [];
    for (;;) {
      const next = await iterator.next();
      if (next.done) break;
      if (next.value.number < headerRow) continue;
      if (next.value.number === headerRow) {
        const values = next.value.values as unknown[];
        header = headerNames(values, Math.max(0, values.length - 1));
        break;
      }
      buffered.push(next.value);
      break;
    }
    if (!header) header = [];
    const width = header.length;
    const budget = new CellBudget(`'${path.basename(file)}'`);
    const rows = (async function* () {
      for (const r of buffered) yield (r.values as unknown[]).slice(1, width + 1).map(plainCellValue);
      for (;;) {
        const next = await iterator.next();
        if (next.done) return;
        budget.spend(Math.max(0, (next.value.values as unknown[]).length - 1));
        const values = (next.value.values as unknown[]).slice(1, width + 1).map(plainCellValue);
        while (values.length < width) values.push(null);
        if (values.every((v) => v === null)) continue;
        yield values;
      }
    })();
    yield { sheet: name, header, rows };
    // Drain what the consumer left, so the workbook stream moves on to the next sheet.
    for await (const _ of rows) void _;
  }
}

/** The token goes only to the configured URL's origin (a redirect elsewhere drops it: net.ts). */
function tokenFor(c: SpreadsheetConfig): HttpCall['credentials'] {
  return c.token && c.url ? { origin: new URL(c.url).origin, headers: { authorization: `Bearer ${c.token}` } } : undefined;
}

async function downloadCsv(c: SpreadsheetConfig, dir: string, signal: AbortSignal): Promise<string> {
  const timeoutMs = timeoutOf(c as Record<string, unknown>);
  const headers: Record<string, string> = { 'user-agent': 'dp-connectors', accept: 'text/csv, */*' };
  const res = await httpRequest(c.url!, { headers, credentials: tokenFor(c), signal, timeoutMs });
  await expectOk(res, hostOf(c.url!));
  const file = path.join(dir, 'export.csv');
  await saveStream(res.body, file);
  return file;
}

async function* readSpreadsheet(config: Record<string, unknown>, request: ConnectorReadRequest): AsyncGenerator<ConnectorBatch> {
  const c = checkConfig(config);
  const batchRows = batchRowsOf(request.batchRows);
  if (c.url) {
    const table = c.table_name ?? 'sheet';
    if (request.table !== table) throw new DpError(404, 'source_table_not_found', `The spreadsheet export has one table, '${table}'`, { table: request.table });
    const tmp = tempFolder();
    try {
      const file = await downloadCsv(c, tmp.dir, request.signal);
      yield* readFiles([{ local: file }], { format: 'csv', batchRows, signal: request.signal, columns: request.columns, where: hostOf(c.url), runtime: request.runtime });
    } finally {
      tmp.dispose();
    }
    return;
  }
  const file = workbookPath(c, request.runtime);
  let found = false;
  for await (const sheet of sheetRows(file, c.header_row ?? 1, request.table)) {
    found = true;
    let columns: ConnectorColumn[] | undefined;
    let pending: unknown[][] = [];
    const pick = request.columns?.length ? request.columns.map((n) => sheet.header.indexOf(n)) : sheet.header.map((_, i) => i);
    const missing = request.columns?.find((_, i) => pick[i]! < 0);
    if (missing) throw new DpError(404, 'source_table_not_found', `Sheet '${sheet.sheet}' has no column '${missing}'`, { table: sheet.sheet, column: missing });
    const flush = function* (): Generator<ConnectorBatch> {
      if (!pending.length) return;
      if (!columns) columns = inferColumnsOfRows(pick.map((i) => sheet.header[i]!), pending.map((r) => pick.map((i) => r[i])));
      const cols = columns;
      yield { columns: cols, rows: pending.map((r) => pick.map((i, k) => coerce(r[i], cols[k]!))) };
      pending = [];
    };
    let any = false;
    for await (const row of sheet.rows) {
      request.signal.throwIfAborted();
      pending.push(row);
      any = true;
      if (pending.length >= batchRows) yield* flush();
    }
    yield* flush();
    // A sheet with a header and no data: its columns, as text.
    if (!any) yield { columns: pick.map((i) => ({ name: sheet.header[i]!, type: 'VARCHAR' })), rows: [] };
    break;
  }
  if (!found) throw new DpError(404, 'source_table_not_found', `The workbook has no sheet '${request.table}'`, { table: request.table });
}

async function discoverSpreadsheet(config: Record<string, unknown>, signal: AbortSignal, runtime?: ConnectorRuntime): Promise<DiscoveredTable[]> {
  const c = checkConfig(config);
  if (c.url) {
    const tmp = tempFolder();
    try {
      const file = await downloadCsv(c, tmp.dir, signal);
      return [{ name: c.table_name ?? 'sheet', columns: await describeFiles([{ local: file }], { format: 'csv', where: hostOf(c.url), runtime }) }];
    } finally {
      tmp.dispose();
    }
  }
  const out: DiscoveredTable[] = [];
  const sample = c.sample_rows ?? 1000;
  for await (const sheet of sheetRows(workbookPath(c, runtime), c.header_row ?? 1)) {
    const rows: unknown[][] = [];
    for await (const row of sheet.rows) {
      rows.push(row);
      if (rows.length >= sample) break;
    }
    out.push({ name: sheet.sheet, columns: inferColumnsOfRows(sheet.header, rows) });
  }
  return out;
}

export const spreadsheetType: ConnectorType = {
  type: 'spreadsheet',
  label: 'Spreadsheet',
  description: 'An .xlsx workbook (a table per sheet) or a CSV-export URL of a sheet',
  params: SPREADSHEET_PARAMS,
  cdcModes: ['full_refresh', 'file_tracking'],
  testConnection: (config, signal, runtime) =>
    probe(signal, timeoutOf(config), async (bounded) => {
      const c = checkConfig(config);
      if (c.url) {
        const res = await httpRequest(c.url, { method: 'GET', credentials: tokenFor(c), signal: bounded, timeoutMs: timeoutOf(config) });
        await expectOk(res, hostOf(c.url));
        await res.body.dump();
        return `CSV export at ${hostOf(c.url)} answers`;
      }
      const names: string[] = [];
      for await (const sheet of sheetRows(workbookPath(c, runtime), c.header_row ?? 1)) names.push(sheet.sheet);
      return `workbook with ${names.length} sheet${names.length === 1 ? '' : 's'}: ${names.join(', ')}`;
    }),
  discover: discoverSpreadsheet,
  read: readSpreadsheet,
  /** File tracking: the workbook's mtime, or the export URL's Last-Modified (null when it sends none). */
  async modifiedTime(config, _table, signal, runtime) {
    const c = checkConfig(config);
    if (c.path) return fs.statSync(workbookPath(c, runtime)).mtimeMs / 1000;
    const res = await httpRequest(c.url!, { method: 'HEAD', credentials: tokenFor(c), signal, timeoutMs: timeoutOf(config) });
    await res.body.dump();
    const header = res.headers['last-modified'];
    const t = typeof header === 'string' ? Date.parse(header) : NaN;
    return res.statusCode < 300 && !Number.isNaN(t) ? t / 1000 : null;
  },
  generateScript: (connection, tables, targetSchema) => generateSyncScript(connection, tables, targetSchema),
};

