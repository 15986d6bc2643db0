/**
 * `csv`: a CSV file or a folder of them inside the project (each file a table named by its stem),
 * read by DuckDB's own CSV reader (types sniffed by DuckDB). Files outside the project cannot be
 * read: the engine's sandbox allows only the project folder (link or copy them in).
 * `file_tracking` syncs a file again only when its mtime changed.
 */
import fs from 'node:fs';
import path from 'node:path';
import { connectorScript, DpError, isDpError, quoteIdent, type ConnectorBatch, type ConnectorReadRequest, type ConnectorRuntime, type ConnectorType, type DiscoveredTable } from '../../../sdk/index.js';

export interface CsvConfig {
  path: string;
  delimiter?: string;
  header?: boolean;
}

const CSV_FILE = /\.(csv|tsv|txt)(\.gz)?$/i;

function needRuntime(runtime: ConnectorRuntime | undefined): ConnectorRuntime {
  if (!runtime) throw new Error('the csv type reads through DuckDB: call it through the connectors plugin');
  return runtime;
}

/** Table name → absolute file, for the configured file or folder (inside the project only). */
export function csvFiles(config: CsvConfig, runtime: ConnectorRuntime): Map<string, string> {
  // The files API's rules: no hidden or service file (.env, .dp/, databases), by name or through a link.
  let abs: string;
  try {
    abs = runtime.project.resolveReadable(config.path);
  } catch (e) {
    // The engine's sandbox reads the project folder only, links out of it included: say where files go.
    if (!isDpError(e) || e.code !== 'path_outside_project') throw e;
    throw new DpError(e.status, e.code, 'The CSV path is outside the project: dp reads files inside the project only. Copy the files under the project (e.g. data/orders.csv) and give that path.', { field: 'path' });
  }
  if (!fs.existsSync(abs)) throw new Error(`'${config.path}' does not exist in the project`);
  const files = fs.statSync(abs).isDirectory()
    ? fs.readdirSync(abs).filter((f) => CSV_FILE.test(f)).sort().map((f) => runtime.project.resolveReadable(path.posix.join(config.path, f)))
    : [abs];
  const out = new Map<string, string>();
  for (const f of files) out.set(path.basename(f).replace(CSV_FILE, '').toLowerCase().replace(/[^a-z0-9_]+/g, '_'), f);
  return out;
}

function fileOf(config: CsvConfig, table: string, runtime: ConnectorRuntime): string {
  const files = csvFiles(config, runtime);
  const file = files.get(table);
  if (!file) throw new Error(`no CSV file for table '${table}' in '${config.path}' (tables: ${[...files.keys()].join(', ')})`);
  return file;
}

function readerSql(runtime: ConnectorRuntime, config: CsvConfig, file: string): string {
  const options = [`header = ${config.header === false ? 'false' : 'true'}`];
  if (config.delimiter) options.push(`delim = ${runtime.db.literal(config.delimiter)}`);
  return `SELECT * FROM read_csv(${runtime.db.literal(file)}, ${options.join(', ')})`;
}

/** The table's rows as one SELECT, past the cursor when there is one (ordered by it when `ordered`). */
function tableSql(config: CsvConfig, req: ConnectorReadRequest, ordered: boolean): string {
  const runtime = needRuntime(req.runtime);
  const sql = readerSql(runtime, config, fileOf(config, req.table, runtime));
  if (!req.cursor) return sql;
  const col = quoteIdent(req.cursor.column);
  const where = req.cursor.after === null || req.cursor.after === undefined ? '' : ` WHERE ${col} > ${runtime.db.literal(String(req.cursor.after))}`;
  return `SELECT * FROM (${sql})${where}${ordered ? ` ORDER BY ${col}` : ''}`;
}

async function* readCsv(config: CsvConfig, req: ConnectorReadRequest): AsyncGenerator<ConnectorBatch> {
  const runtime = needRuntime(req.runtime);
  const sql = tableSql(config, req, true);
  const batchRows = req.batchRows ?? 10_000;
  const conn = await runtime.db.connect();
  const onAbort = () => conn.interrupt();
  req.signal.addEventListener('abort', onAbort, { once: true });
  try {
    const s = await conn.stream(sql);
    const columns = s.columns.map((name, i) => ({ name, type: s.column_types[i]! }));
    let rows: unknown[][] = [];
    let sent = false;
    for await (const chunk of s.chunks) {
      for (const r of chunk) rows.push(r);
      if (rows.length >= batchRows) {
        yield { columns, rows };
        sent = true;
        rows = [];
      }
    }
    if (rows.length || !sent) yield { columns, rows };
  } finally {
    req.signal.removeEventListener('abort', onAbort);
    conn.close();
  }
}

export const csvType: ConnectorType = {
  type: 'csv',
  label: 'CSV files',
  description: 'A CSV file or a folder of CSV files inside the project, read by DuckDB',
  params: {
    type: 'object',
    required: ['path'],
    properties: {
      path: { type: 'string', minLength: 1, description: 'Project-relative file or folder' },
      delimiter: { type: 'string', minLength: 1, maxLength: 4 },
      header: { type: 'boolean', default: true },
    },
    additionalProperties: false,
  },
  cdcModes: ['full_refresh', 'file_tracking', 'high_watermark'],
  async testConnection(config, _signal, runtime) {
    try {
      const files = csvFiles(config as unknown as CsvConfig, needRuntime(runtime));
      if (!files.size) return { ok: false, message: `no CSV files in '${String(config.path)}'` };
      return { ok: true, message: `${files.size} CSV file${files.size === 1 ? '' : 's'}` };
    } catch (e) {
      return { ok: false, message: (e as Error).message };
    }
  },
  async discover(config, _signal, runtime): Promise<DiscoveredTable[]> {
    const rt = needRuntime(runtime);
    const out: DiscoveredTable[] = [];
    for (const [name, file] of csvFiles(config as unknown as CsvConfig, rt)) {
      const described = await rt.db.all<{ column_name: string; column_type: string }>(`DESCRIBE ${readerSql(rt, config as unknown as CsvConfig, file)}`);
      out.push({ name, columns: described.map((d) => ({ name: d.column_name, type: d.column_type })) });
    }
    return out;
  },
  async modifiedTime(config, table, _signal, runtime) {
    return fs.statSync(fileOf(config as unknown as CsvConfig, table, needRuntime(runtime))).mtimeMs / 1000;
  },
  generateScript: (connection, tables, targetSchema) => connectorScript(connection, tables, targetSchema),
  read: (config, request) => readCsv(config as unknown as CsvConfig, request),
  // A sync runs this itself (INSERT … SELECT): no row passes through JS.
  readSql: (config, request) => tableSql(config as unknown as CsvConfig, request, false),
};
