/**
 * CSV, Parquet and JSON files read through a private in-memory DuckDB (its readers are the
 * project's CSV/Parquet/JSON readers everywhere else too), streamed chunk by chunk so memory
 * stays bounded by a batch. Downloads land in a private temp folder first.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { quoteIdent, quoteLiteral, type ConnectorBatch, type ConnectorColumn } from '../../sdk/index.js';
import { invalidResponse } from './net.js';

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
}

async function openMemoryDb(): Promise<{ conn: DuckDBConnection; close(): void }> {
  // A sort for an incremental read may spill: DuckDB's default temp folder for :memory: is
  // `.tmp` under the working directory, so name one in the system temp folder.
  const instance = await DuckDBInstance.create(':memory:', { threads: '1', memory_limit: '512MB', temp_directory: path.join(os.tmpdir(), 'dp-cloud-spill') });
  const conn = await instance.connect();
  return {
    conn,
    close() {
      conn.closeSync();
      instance.closeSync();
    },
  };
}

function selectSql(files: LocalFile[], options: Pick<FileReadOptions, 'format' | 'provenance' | 'columns' | 'cursor'>, limit?: number): string {
  const source = readerSql(files.map((f) => f.local), options.format);
  const provenance = options.provenance === true;
  const from = provenance
    ? `${source} AS _r JOIN (VALUES ${files
        .map((f) => `(${quoteLiteral(f.local)}, ${quoteLiteral(f.source ?? path.basename(f.local))}, ${f.modified ? `TIMESTAMPTZ ${quoteLiteral(f.modified.toISOString())}` : 'NULL::TIMESTAMPTZ'})`)
        .join(', ')}) AS _f(local, source, modified) ON _r.filename = _f.local`
    : `${source} AS _r`;
  const extra: Record<string, string> = provenance ? { _source_file: '_f.source AS _source_file', _source_modified: '_f.modified AS _source_modified' } : {};
  const projection = options.columns?.length
    ? options.columns.map((c) => extra[c] ?? `_r.${quoteIdent(c)}`).join(', ')
    : ['_r.* EXCLUDE (filename)', ...Object.values(extra)].join(', ');
  let tail = '';
  if (options.cursor) {
    const provenanceColumn: Record<string, string> = provenance ? { _source_file: '_f.source', _source_modified: '_f.modified' } : {};
    const col = provenanceColumn[options.cursor.column] ?? `_r.${quoteIdent(options.cursor.column)}`;
    const after = options.cursor.after;
    if (after !== null && after !== undefined) tail += ` WHERE ${col} > ${quoteLiteral(after instanceof Date ? after.toISOString() : String(after))}`;
    tail += ` ORDER BY ${col}`;
  }
  return `SELECT ${projection} FROM ${from}${tail}${limit !== undefined ? ` LIMIT ${limit}` : ''}`;
}

/** Columns of the files (DuckDB's inference, mapped to loadable types). */
export async function describeFiles(files: LocalFile[], options: Omit<FileReadOptions, 'batchRows' | 'signal' | 'columns'>): Promise<ConnectorColumn[]> {
  const db = await openMemoryDb();
  try {
    const result = await db.conn.run(selectSql(files, options, 0));
    const names = result.columnNames();
    const types = result.columnTypes();
    return names.map((name, i) => ({ name, type: loadableType(types[i]!.toString()) }));
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
export async function* readFiles(files: LocalFile[], options: FileReadOptions): AsyncGenerator<ConnectorBatch> {
  if (!files.length) return;
  const db = await openMemoryDb();
  const onAbort = () => db.conn.interrupt();
  options.signal.addEventListener('abort', onAbort, { once: true });
  try {
    let result;
    try {
      result = await db.conn.stream(selectSql(files, options));
    } catch (e) {
      throw invalidResponse(options.where, `cannot read the ${options.format} data: ${firstLine(e)}`);
    }
    const columns = result.columnNames().map((name, i) => ({ name, type: loadableType(result.columnTypes()[i]!.toString()) }));
    let pending: unknown[][] = [];
    for await (const rows of result.yieldRowsJson()) {
      options.signal.throwIfAborted();
      for (const row of rows) pending.push(row as unknown[]);
      while (pending.length >= options.batchRows) {
        yield { columns, rows: pending.slice(0, options.batchRows) };
        pending = pending.slice(options.batchRows);
      }
    }
    if (pending.length) yield { columns, rows: pending };
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
