/**
 * CSV, Parquet and JSON files read through a private in-memory DuckDB (its readers are the
 * project's CSV/Parquet/JSON readers everywhere else too), streamed chunk by chunk so memory
 * stays bounded by a batch. Downloads land in a private temp folder first.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { quoteIdent, quoteLiteral, type ConnectorBatch, type ConnectorColumn, type ConnectorRuntime, type DbConnection } from '../../sdk/index.js';
import { invalidResponse } from './net.js';
import { isAfter } from './values.js';

export type FileFormat = 'csv' | 'parquet' | 'json';

/** The format a file name implies, or undefined for a file this plugin does not read. */
export function formatOfName(name: string): FileFormat | undefined {
  const n = name.toLowerCase().replace(/\.(gz|zst)$/, '');
  if (n.endsWith('.csv') || n.endsWith('.tsv')) return 'csv';
  if (n.endsWith('.parquet') || n.endsWith('.pq')) return 'parquet';
  if (n.endsWith('.json') || n.endsWith('.jsonl') || n.endsWith('.ndjson')) return 'json';
  return undefined;
}

/** A DuckDB type the bulk loader takes, for a type DuckDB's readers produced. */
export function loadableType(duckType: string): string {
  const t = duckType.toUpperCase();
  if (/^(STRUCT|MAP|UNION)\b/.test(t) || t.endsWith(']')) return 'JSON';
  if (t === 'TIMESTAMP WITH TIME ZONE') return 'TIMESTAMPTZ';
  if (/^TIMESTAMP(_S|_MS|_NS)?$/.test(t)) return 'TIMESTAMP';
  if (/^(BIGINT|INTEGER|SMALLINT|TINYINT|HUGEINT|UBIGINT|UINTEGER|USMALLINT|UTINYINT|DOUBLE|FLOAT|BOOLEAN|DATE|VARCHAR|JSON)$/.test(t)) return t;
  if (/^DECIMAL\(\d+,\d+\)$/.test(t)) return t;
  return 'VARCHAR';
}

function readerSql(files: string[], format: FileFormat): string {
  const list = `[${files.map(quoteLiteral).join(', ')}]`;
  switch (format) {
    case 'csv':
      return `read_csv(${list}, union_by_name = true, filename = true)`;
    case 'parquet':
      return `read_parquet(${list}, union_by_name = true, filename = true)`;
    case 'json':
      return `read_json_auto(${list}, union_by_name = true, filename = true)`;
  }
}

export interface LocalFile {
  /** Path on this machine. */
  local: string;
  /** What the `_source_file` column holds for its rows (an object key, a URL). */
  source?: string;
  /** What `_source_modified` holds. */
  modified?: Date;
}

export interface FileReadOptions {
  format: FileFormat;
  batchRows: number;
  signal: AbortSignal;
  /** Add `_source_file` and `_source_modified` columns (file tracking). */
  provenance?: boolean;
  /** Only these columns, in this order. */
  columns?: string[];
  /** High watermark: only rows with `column > after`, ordered by `column`. */
  cursor?: { column: string; after: unknown };
  /** Names the source in errors. */
  where: string;
  /** The connectors runtime: its database port lends the private DuckDB. */
  runtime?: ConnectorRuntime;
}

/** Where a private DuckDB spills a sort past its memory limit: never the working directory (DuckDB's default `.tmp`). */
export const SPILL_DIRECTORY = path.join(os.tmpdir(), 'dp-cloud-spill');

/**
 * A private in-memory DuckDB from the kernel (ctx.db.scratch): it shares nothing with the
 * project's database and reads no file outside `readable`.
 */
export async function privateDuckDb(runtime: ConnectorRuntime | undefined, options: { readable?: string[]; memoryLimit: string }): Promise<DbConnection & { close(): void }> {
  // The connectors plugin always passes its runtime: only a caller that forgot it gets here.
  if (!runtime) throw new Error('this connector reads files through DuckDB: pass the connectors runtime');
  return runtime.db.scratch({ readableDirectories: options.readable ?? [], threads: 1, memoryLimit: options.memoryLimit, spillDirectory: SPILL_DIRECTORY });
}

function openMemoryDb(files: LocalFile[], runtime: ConnectorRuntime | undefined): Promise<DbConnection & { close(): void }> {
  return privateDuckDb(runtime, { readable: [...new Set(files.map((f) => path.dirname(f.local)))], memoryLimit: '512MB' });
}

const FILE_COLUMN = '__dp_file';
/** Types whose values a JS number cannot always hold. */
const EXACT_AS_TEXT = /^(DECIMAL|BIGINT$|UBIGINT$|HUGEINT$|UHUGEINT$)/;
const PROVENANCE: ConnectorColumn[] = [
  { name: '_source_file', type: 'VARCHAR' },
  { name: '_source_modified', type: 'TIMESTAMPTZ' },
];

function isProvenance(name: string): boolean {
  return PROVENANCE.some((p) => p.name === name);
}

/**
 * The reader's SQL: the data columns plus the file each row came from. Provenance values are
 * filled in from that file name afterwards (a join would lose the files' row order).
 */
function selectSql(files: LocalFile[], options: Pick<FileReadOptions, 'format' | 'provenance' | 'columns' | 'cursor'>, limit?: number, asText: ReadonlySet<string> = new Set()): string {
  const source = readerSql(files.map((f) => f.local), options.format);
  const wanted = options.columns?.filter((c) => !(options.provenance && isProvenance(c)));
  const column = (c: string) => (asText.has(c) ? `CAST(_r.${quoteIdent(c)} AS VARCHAR) AS ${quoteIdent(c)}` : `_r.${quoteIdent(c)}`);
  const replace = [...asText].map((c) => `CAST(_r.${quoteIdent(c)} AS VARCHAR) AS ${quoteIdent(c)}`);
  const projection = options.columns?.length ? wanted!.map(column) : [`_r.* EXCLUDE (filename)${replace.length ? ` REPLACE (${replace.join(', ')})` : ''}`];
  let tail = '';
  const cursor = options.cursor && !(options.provenance && isProvenance(options.cursor.column)) ? options.cursor : undefined;
  if (cursor) {
    const col = `_r.${quoteIdent(cursor.column)}`;
    if (cursor.after !== null && cursor.after !== undefined) tail += ` WHERE ${col} > ${quoteLiteral(cursor.after instanceof Date ? cursor.after.toISOString() : String(cursor.after))}`;
    tail += ` ORDER BY ${col}`;
  }
  return `SELECT ${[...projection, `_r.filename AS ${FILE_COLUMN}`].join(', ')} FROM ${source} AS _r${tail}${limit !== undefined ? ` LIMIT ${limit}` : ''}`;
}

interface Output {
  columns: ConnectorColumn[];
  /** Per output column: the result column index, or a provenance field. */
  from: Array<number | '_source_file' | '_source_modified'>;
  fileIndex: number;
}

function outputOf(names: string[], types: string[], options: Pick<FileReadOptions, 'provenance' | 'columns'>): Output {
  const fileIndex = names.indexOf(FILE_COLUMN);
  const data = names.map((name, i) => ({ name, type: loadableType(types[i]!), i })).filter((c) => c.i !== fileIndex);
  const pick = (name: string): { column: ConnectorColumn; from: Output['from'][number] } => {
    if (options.provenance && isProvenance(name)) return { column: PROVENANCE.find((p) => p.name === name)!, from: name as '_source_file' };
    const d = data.find((c) => c.name === name)!;
    return { column: { name: d.name, type: d.type }, from: d.i };
  };
  const order = options.columns?.length ? options.columns : [...data.map((c) => c.name), ...(options.provenance ? PROVENANCE.map((p) => p.name) : [])];
  const picked = order.map(pick);
  return { columns: picked.map((p) => p.column), from: picked.map((p) => p.from), fileIndex };
}

/** Only the files past a watermark on `_source_modified` / `_source_file` (file tracking). */
function trackedFiles(files: LocalFile[], options: Pick<FileReadOptions, 'provenance' | 'cursor'>): LocalFile[] {
  const c = options.cursor;
  if (!c || !options.provenance || !isProvenance(c.column) || c.after === null || c.after === undefined) return files;
  return files.filter((f) => isAfter(c.column === '_source_file' ? (f.source ?? f.local) : f.modified?.toISOString(), c.after));
}

/** Columns of the files (DuckDB's inference, mapped to loadable types). */
export async function describeFiles(files: LocalFile[], options: Omit<FileReadOptions, 'batchRows' | 'signal' | 'columns'>): Promise<ConnectorColumn[]> {
  const db = await openMemoryDb(files, options.runtime);
  try {
    const result = await db.query(selectSql(files, options, 0));
    return outputOf(result.columns, result.column_types, options).columns;
  } catch (e) {
    throw invalidResponse(options.where, `cannot read the ${options.format} data: ${firstLine(e)}`);
  } finally {
    db.close();
  }
}

function firstLine(e: unknown): string {
  const m = e instanceof Error ? e.message : String(e);
  // DuckDB names the temp path; keep only the reason.
  return m.split('\n')[0]!.replace(/\/[^\s'"]*dp-cloud-[^\s'"]*/g, '<file>').slice(0, 200);
}

/** Rows of the files in batches of at most `batchRows`. */
export async function* readFiles(all: LocalFile[], options: FileReadOptions): AsyncGenerator<ConnectorBatch> {
  const files = trackedFiles(all, options);
  if (!files.length) {
    // Nothing past the watermark: still one (empty) batch, so the caller learns the columns.
    if (all.length) yield { columns: await describeFiles(all, options), rows: [] };
    return;
  }
  const byLocal = new Map(files.map((f) => [f.local, f]));
  const db = await openMemoryDb(files, options.runtime);
  const onAbort = () => db.interrupt();
  options.signal.addEventListener('abort', onAbort, { once: true });
  try {
    const read = async (asText?: ReadonlySet<string>) => {
      try {
        return await db.stream(selectSql(files, options, undefined, asText));
      } catch (e) {
        throw invalidResponse(options.where, `cannot read the ${options.format} data: ${firstLine(e)}`);
      }
    };
    let result = await read();
    // A connection's stream turns DECIMALs and 64-bit and wider integers into JS numbers: read
    // them as their exact text instead (the bulk loader takes text for those types).
    const exact = new Set(result.columns.filter((name, i) => name !== FILE_COLUMN && EXACT_AS_TEXT.test(result.column_types[i]!)));
    const column_types = result.column_types;
    if (exact.size) result = await read(exact);
    const out = outputOf(result.columns, column_types, options);
    const shape = (row: unknown[]): unknown[] => {
      const file = byLocal.get(String(row[out.fileIndex]));
      return out.from.map((f) => (f === '_source_file' ? (file?.source ?? null) : f === '_source_modified' ? (file?.modified?.toISOString() ?? null) : row[f]));
    };
    let pending: unknown[][] = [];
    let yielded = false;
    for await (const rows of result.chunks) {
      options.signal.throwIfAborted();
      for (const row of rows) pending.push(shape(row));
      while (pending.length >= options.batchRows) {
        yield { columns: out.columns, rows: pending.slice(0, options.batchRows) };
        yielded = true;
        pending = pending.slice(options.batchRows);
      }
    }
    if (pending.length || !yielded) yield { columns: out.columns, rows: pending };
  } finally {
    options.signal.removeEventListener('abort', onAbort);
    db.close();
  }
}

/** A private temp folder, removed by `dispose`. */
export function tempFolder(): { dir: string; dispose(): void } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'dp-cloud-'));
  return { dir, dispose: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

/** Writes a stream of chunks to a file (constant memory). */
export async function saveStream(body: AsyncIterable<Uint8Array> | NodeJS.ReadableStream, file: string): Promise<void> {
  await pipeline(body as NodeJS.ReadableStream, fs.createWriteStream(file));
}
