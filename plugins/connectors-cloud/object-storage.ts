/**
 * `object_storage`: an S3-compatible bucket (AWS S3, MinIO, R2, ...). Objects are listed with
 * ListObjectsV2 and fetched with GET, each request signed with SigV4 by `aws4`. Under the prefix,
 * a folder is a table (all its CSV/Parquet/JSON files) and a file at the top is a table of its
 * own. Rows carry `_source_file` and `_source_modified`, the columns file tracking reads by.
 */
import path from 'node:path';
import type Aws4 from 'aws4';
import { DpError, requireOnFirstUse, type ConnectorBatch, type ConnectorReadRequest, type ConnectorRuntime, type ConnectorType, type DiscoveredTable } from '../../sdk/index.js';
import { describeFiles, formatOfName, readFiles, saveStream, tempFolder, type FileFormat, type LocalFile } from './files.js';
import { expectOk, hostOf, httpRequest, invalidResponse, paramInvalid, probe, readText, requestFailed, shortMessage, TIMEOUT_PARAM, timeoutOf } from './net.js';
import { generateSyncScript } from './script.js';
import { batchRowsOf, isAfter } from './values.js';
import { parseXml } from './xml.js';

/** aws4, required on the first signed request: a server whose buckets are never read does not load it. */
const aws4 = requireOnFirstUse<typeof Aws4>(import.meta.url, 'aws4');

export const OBJECT_STORAGE_PARAMS = {
  type: 'object',
  required: ['bucket'],
  properties: {
    endpoint: { type: 'string', default: 'https://s3.amazonaws.com', description: 'S3-compatible endpoint (`https://s3.eu-west-1.amazonaws.com`, `http://minio:9000`)' },
    region: { type: 'string', default: 'us-east-1', description: 'Signing region' },
    bucket: { type: 'string', minLength: 1, description: 'Bucket name' },
    prefix: { type: 'string', default: '', description: 'Only objects under this prefix (`exports/`)' },
    access_key_id: { type: 'string', description: 'Access key id (omit for a public bucket)' },
    secret_access_key: { type: 'string', 'x-secret': true, description: 'Secret access key' },
    session_token: { type: 'string', 'x-secret': true, description: 'Session token of temporary credentials' },
    format: { type: 'string', enum: ['auto', 'csv', 'parquet', 'json'], default: 'auto', description: 'File format; auto: by extension' },
    path_style: { type: 'boolean', default: true, description: 'Address the bucket in the path (`endpoint/bucket/key`) rather than as a subdomain' },
    timeout_ms: TIMEOUT_PARAM,
  },
  additionalProperties: false,
} as const;

interface StorageConfig {
  endpoint?: string;
  region?: string;
  bucket: string;
  prefix?: string;
  access_key_id?: string;
  secret_access_key?: string;
  session_token?: string;
  format?: 'auto' | FileFormat;
  path_style?: boolean;
  timeout_ms?: number;
}

export interface StoredObject {
  key: string;
  size: number;
  modified: Date;
}

function checkConfig(config: Record<string, unknown>): StorageConfig {
  const c = config as unknown as StorageConfig;
  if (typeof c.bucket !== 'string' || c.bucket === '') throw paramInvalid('bucket', 'is required');
  if (c.endpoint !== undefined && !/^https?:\/\//i.test(c.endpoint)) throw paramInvalid('endpoint', 'must be an http(s) URL');
  if (c.access_key_id && !c.secret_access_key) throw paramInvalid('secret_access_key', 'is required with access_key_id');
  return c;
}

/** RFC 3986 encoding of an object key, `/` kept: what SigV4 signs and the server decodes. */
function encodeKey(key: string): string {
  return key
    .split('/')
    .map((s) => encodeURIComponent(s).replace(/[!'()*]/g, (ch) => `%${ch.charCodeAt(0).toString(16).toUpperCase()}`))
    .join('/');
}

function signedRequest(c: StorageConfig, key: string | null, query: Record<string, string>): { url: string; headers: Record<string, string> } {
  const endpoint = new URL(c.endpoint ?? 'https://s3.amazonaws.com');
  const pathStyle = c.path_style ?? true;
  const host = pathStyle ? endpoint.host : `${c.bucket}.${endpoint.host}`;
  const base = endpoint.pathname.replace(/\/$/, '');
  const objectPath = `${base}${pathStyle ? `/${encodeURIComponent(c.bucket)}` : ''}/${key === null ? '' : encodeKey(key)}`;
  const qs = Object.keys(query)
    .sort()
    .map((k) => `${encodeURIComponent(k)}=${encodeURIComponent(query[k]!)}`)
    .join('&');
  const pathWithQuery = qs ? `${objectPath}?${qs}` : objectPath;
  const headers: Record<string, string> = { 'user-agent': 'dp-connectors' };
  if (c.access_key_id) {
    const signed = aws4().sign(
      { host, path: pathWithQuery, method: 'GET', service: 's3', region: c.region ?? 'us-east-1', headers: {} },
      { accessKeyId: c.access_key_id, secretAccessKey: c.secret_access_key!, sessionToken: c.session_token },
    );
    for (const [k, v] of Object.entries(signed.headers ?? {})) if (k.toLowerCase() !== 'host') headers[k] = String(v);
  }
  return { url: `${endpoint.protocol}//${host}${pathWithQuery}`, headers };
}

async function s3Get(c: StorageConfig, key: string | null, query: Record<string, string>, signal: AbortSignal) {
  const { url, headers } = signedRequest(c, key, query);
  // The signature is for this host: a redirect elsewhere gets no part of it.
  const res = await httpRequest(url, { headers: { 'user-agent': 'dp-connectors' }, credentials: { origin: new URL(url).origin, headers }, signal, timeoutMs: timeoutOf(c as unknown as Record<string, unknown>) });
  if (res.statusCode === 404) {
    const text = await readText(res, 4000).catch(() => '');
    const code = /<Code>([^<]*)<\/Code>/.exec(text)?.[1];
    if (code === 'NoSuchBucket') throw requestFailed(hostOf(url), 404, `bucket '${c.bucket}' does not exist`);
    throw requestFailed(hostOf(url), 404, shortMessage(text) || 'not found');
  }
  await expectOk(res, hostOf(url));
  return res;
}

function asArray<T>(v: T | T[] | undefined): T[] {
  return v === undefined ? [] : Array.isArray(v) ? v : [v];
}

/** Every object under the prefix, page by page (1000 keys each). */
export async function* listObjects(c: StorageConfig, signal: AbortSignal, maxKeys = 1000): AsyncGenerator<StoredObject> {
  let token: string | undefined;
  const where = hostOf(c.endpoint ?? 'https://s3.amazonaws.com');
  do {
    const query: Record<string, string> = { 'list-type': '2', 'max-keys': String(maxKeys) };
    if (c.prefix) query.prefix = c.prefix;
    if (token) query['continuation-token'] = token;
    const res = await s3Get(c, null, query, signal);
    const xml = await readText(res);
    let doc: Record<string, unknown>;
    try {
      doc = parseXml(xml);
    } catch {
      throw invalidResponse(where, 'the bucket listing is not XML');
    }
    const result = doc.ListBucketResult as Record<string, unknown> | undefined;
    if (!result) throw invalidResponse(where, 'the bucket listing has no ListBucketResult');
    for (const o of asArray(result.Contents as Record<string, string> | Array<Record<string, string>>)) {
      yield { key: String(o.Key), size: Number(o.Size ?? 0), modified: new Date(String(o.LastModified)) };
    }
    token = String(result.IsTruncated) === 'true' ? String(result.NextContinuationToken ?? '') || undefined : undefined;
  } while (token);
}

/** The table an object belongs to: its first folder under the prefix, or its own name without extensions. */
export function tableOfKey(key: string, prefix: string): string {
  const rest = key.slice(prefix.length).replace(/^\/+/, '');
  const first = rest.includes('/') ? rest.slice(0, rest.indexOf('/')) : rest.replace(/\.[^/]*$/, '');
  return first.replace(/[^A-Za-z0-9_]/g, '_').replace(/^(\d)/, '_$1') || '_root';
}

interface TableFiles {
  name: string;
  format: FileFormat;
  objects: StoredObject[];
}

async function tablesOf(c: StorageConfig, signal: AbortSignal): Promise<Map<string, TableFiles>> {
  const tables = new Map<string, TableFiles>();
  const prefix = c.prefix ?? '';
  for await (const o of listObjects(c, signal)) {
    if (o.key.endsWith('/')) continue;
    const format = c.format && c.format !== 'auto' ? (formatOfName(o.key) === c.format || !formatOfName(o.key) ? c.format : undefined) : formatOfName(o.key);
    if (!format) continue;
    const name = tableOfKey(o.key, prefix);
    const t = tables.get(name) ?? { name, format, objects: [] };
    // A folder holds one format: the first file's; files of another format there are skipped.
    if (t.format !== format) continue;
    t.objects.push(o);
    tables.set(name, t);
  }
  return tables;
}

async function download(c: StorageConfig, objects: StoredObject[], dir: string, signal: AbortSignal): Promise<LocalFile[]> {
  const files: LocalFile[] = [];
  for (const [i, o] of objects.entries()) {
    const res = await s3Get(c, o.key, {}, signal);
    const local = path.join(dir, `${i}-${path.basename(o.key).replace(/[^A-Za-z0-9._-]/g, '_')}`);
    await saveStream(res.body, local);
    files.push({ local, source: o.key, modified: o.modified });
  }
  return files;
}

async function* readObjects(config: Record<string, unknown>, request: ConnectorReadRequest): AsyncGenerator<ConnectorBatch> {
  const c = checkConfig(config);
  const table = (await tablesOf(c, request.signal)).get(request.table);
  if (!table) throw new DpError(404, 'source_table_not_found', `The bucket has no table '${request.table}' under the prefix`, { table: request.table });
  let objects = [...table.objects].sort((a, b) => a.modified.getTime() - b.modified.getTime() || a.key.localeCompare(b.key));
  // File tracking: files modified after the watermark only (their rows are all new); readFiles
  // applies the same rule, this spares the downloads.
  if (request.cursor?.column === '_source_modified') objects = objects.filter((o) => isAfter(o.modified, request.cursor!.after));
  // None new: the newest file alone, for the columns of the one empty batch a read yields.
  if (!objects.length) objects = [[...table.objects].sort((a, b) => b.modified.getTime() - a.modified.getTime())[0]!];
  const tmp = tempFolder();
  try {
    const files = await download(c, objects, tmp.dir, request.signal);
    yield* readFiles(files, {
      format: table.format,
      batchRows: batchRowsOf(request.batchRows),
      signal: request.signal,
      provenance: true,
      columns: request.columns,
      cursor: request.cursor,
      where: hostOf(c.endpoint ?? 'https://s3.amazonaws.com'),
      runtime: request.runtime,
    });
  } finally {
    tmp.dispose();
  }
}

async function discoverObjects(config: Record<string, unknown>, signal: AbortSignal, runtime?: ConnectorRuntime): Promise<DiscoveredTable[]> {
  const c = checkConfig(config);
  const out: DiscoveredTable[] = [];
  for (const t of (await tablesOf(c, signal)).values()) {
    // The smallest file tells the columns without downloading the whole table.
    const smallest = t.objects.reduce((a, b) => (b.size < a.size ? b : a));
    const tmp = tempFolder();
    try {
      const files = await download(c, [smallest], tmp.dir, signal);
      const columns = await describeFiles(files, { format: t.format, provenance: true, where: hostOf(c.endpoint ?? 'https://s3.amazonaws.com'), runtime });
      out.push({ schema: c.prefix || undefined, name: t.name, columns });
    } finally {
      tmp.dispose();
    }
  }
  return out;
}

export const objectStorageType: ConnectorType = {
  type: 'object_storage',
  label: 'Object storage (S3-compatible)',
  description: 'CSV, Parquet and JSON files in an S3-compatible bucket: a folder (or a top-level file) is a table',
  params: OBJECT_STORAGE_PARAMS,
  cdcModes: ['full_refresh', 'file_tracking', 'high_watermark'],
  testConnection: (config, signal) =>
    probe(signal, timeoutOf(config), async (bounded) => {
      const c = checkConfig(config);
      let n = 0;
      for await (const _ of listObjects(c, bounded, 1)) {
        n++;
        break;
      }
      return `bucket '${c.bucket}' is readable${n ? '' : ' (no objects under the prefix yet)'}`;
    }),
  discover: discoverObjects,
  read: readObjects,
  /** File tracking: the newest Last-Modified among the table's objects. */
  async modifiedTime(config, table, signal) {
    const t = (await tablesOf(checkConfig(config), signal)).get(table);
    if (!t) throw new DpError(404, 'source_table_not_found', `The bucket has no table '${table}' under the prefix`, { table });
    return Math.max(...t.objects.map((o) => o.modified.getTime())) / 1000;
  },
  generateScript: (connection, tables, targetSchema) => generateSyncScript(connection, tables, targetSchema),
};
