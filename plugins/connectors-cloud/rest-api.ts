/**
 * `rest_api`: JSON over HTTP. Each resource is a path whose answer holds records at a JSON path;
 * pages are followed by page number, offset, cursor (from the answer or the last record) or the
 * Link header; an incremental read passes the high watermark in a URL parameter and keeps only
 * records past it. One page in memory at a time.
 */
import { DpError, type ConnectorBatch, type ConnectorColumn, type ConnectorReadRequest, type ConnectorType, type DiscoveredTable } from '../../sdk/index.js';
import { expectOk, type HttpCall, hostOf, httpRequest, invalidResponse, paramInvalid, probe, readText, TIMEOUT_PARAM, timeoutOf } from './net.js';
import { orderedByCursor } from './order.js';
import { generateSyncScript } from './script.js';
import { batchRowsOf, chunked, coerce, inferColumns, isAfter, watermarkText } from './values.js';

export type Pagination =
  | { style: 'none' }
  | { style: 'page'; page_param?: string; size_param?: string; page_size?: number; start_page?: number }
  | { style: 'offset'; offset_param?: string; size_param?: string; page_size?: number }
  | { style: 'cursor'; cursor_param?: string; next_cursor_path?: string; cursor_from_record?: string; has_more_path?: string; size_param?: string; page_size?: number }
  | { style: 'link'; size_param?: string; page_size?: number };

export interface RestResource {
  name: string;
  path: string;
  /** Dotted path to the records array in each answer (`data`, `result.items`); empty: the answer is the array. */
  records_path?: string;
  params?: Record<string, string | number | boolean>;
  pagination?: Pagination;
  /** URL parameter that receives the high watermark on incremental reads (`updated_since`). */
  incremental_param?: string;
  /** The record field that serves as the CDC column (`updated_at`), shown by discover. */
  cursor_field?: string;
  /** DuckDB types for fields whose type the first page cannot tell (`{"price": "DOUBLE"}`). */
  column_types?: Record<string, string>;
}

export interface RestApiConfig {
  url: string;
  auth?: 'none' | 'bearer' | 'header';
  token?: string;
  auth_header?: string;
  headers?: Record<string, string>;
  resources: RestResource[];
  max_pages?: number;
  timeout_ms?: number;
}

const paginationSchema = {
  type: 'object',
  required: ['style'],
  properties: {
    style: { type: 'string', enum: ['none', 'page', 'offset', 'cursor', 'link'], description: 'How the next page is asked for' },
    page_param: { type: 'string', default: 'page', description: 'page: the page-number parameter' },
    start_page: { type: 'integer', default: 1, description: 'page: the first page number' },
    offset_param: { type: 'string', default: 'offset', description: 'offset: the offset parameter' },
    size_param: { type: 'string', description: 'The page-size parameter (`per_page`, `limit`)' },
    page_size: { type: 'integer', minimum: 1, maximum: 10000, default: 100, description: 'Records per page' },
    cursor_param: { type: 'string', default: 'cursor', description: 'cursor: the parameter that takes the cursor' },
    next_cursor_path: { type: 'string', description: 'cursor: dotted path of the next cursor in the answer (`meta.next_cursor`)' },
    cursor_from_record: { type: 'string', description: "cursor: take the cursor from this field of the page's last record (`id`)" },
    has_more_path: { type: 'string', description: 'cursor: dotted path of a boolean that says whether more pages follow' },
  },
  additionalProperties: false,
} as const;

export const resourceSchema = {
  type: 'object',
  required: ['name', 'path'],
  properties: {
    name: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]*$', description: 'Table name of the resource' },
    path: { type: 'string', description: 'Path under the base URL (`/v1/orders`)' },
    records_path: { type: 'string', default: '', description: 'Dotted JSON path to the records array; empty when the answer is the array' },
    params: { type: 'object', additionalProperties: { type: ['string', 'number', 'boolean'] }, description: 'Fixed query parameters' },
    pagination: paginationSchema,
    incremental_param: { type: 'string', description: 'Query parameter that receives the high watermark on incremental syncs' },
    cursor_field: { type: 'string', description: 'Record field used as the CDC column' },
    column_types: { type: 'object', additionalProperties: { type: 'string' }, description: 'DuckDB types of fields the first page cannot tell' },
  },
  additionalProperties: false,
} as const;

export const REST_API_PARAMS = {
  type: 'object',
  required: ['url', 'resources'],
  properties: {
    url: { type: 'string', description: 'Base URL of the API (`https://api.example.com`)' },
    auth: { type: 'string', enum: ['none', 'bearer', 'header'], default: 'bearer', description: 'bearer: `Authorization: Bearer <token>`; header: `<auth_header>: <token>`' },
    token: { type: 'string', 'x-secret': true, description: 'API token or key' },
    auth_header: { type: 'string', default: 'X-API-Key', description: 'Header that carries the token when auth is `header`' },
    headers: { type: 'object', additionalProperties: { type: 'string' }, description: 'Extra request headers (not secret)' },
    resources: {
      type: 'array',
      minItems: 1,
      items: resourceSchema,
      description: 'The endpoints to sync, one table each',
      examples: [[{ name: 'orders', path: '/v1/orders', records_path: 'data' }]],
    },
    max_pages: { type: 'integer', minimum: 1, description: 'Stop after this many pages per resource (a guard against endless pagination)' },
    timeout_ms: TIMEOUT_PARAM,
  },
  additionalProperties: false,
} as const;

/** The value at a dotted path (`a.b.0.c`; empty: the value itself). */
export function atPath(value: unknown, dotted: string | undefined): unknown {
  const p = (dotted ?? '').replace(/^\$\.?/, '');
  if (!p) return value;
  let v: unknown = value;
  for (const part of p.split('.')) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<string, unknown>)[part];
  }
  return v;
}

/** The `rel="next"` target of a Link header (RFC 8288). */
export function nextLink(header: string | string[] | undefined): string | undefined {
  const text = Array.isArray(header) ? header.join(',') : header;
  if (!text) return undefined;
  for (const part of text.split(/,(?=\s*<)/)) {
    const m = /^\s*<([^>]*)>(.*)$/.exec(part);
    if (m && /;\s*rel\s*=\s*"?([^";]*\s)?next(\s[^";]*)?"?/i.test(m[2]!)) return m[1];
  }
  return undefined;
}

function checkConfig(config: Record<string, unknown>): RestApiConfig {
  const c = config as unknown as RestApiConfig;
  if (typeof c.url !== 'string' || !/^https?:\/\//i.test(c.url)) throw paramInvalid('url', 'must be an http(s) URL');
  if (!Array.isArray(c.resources) || c.resources.length === 0) {
    // The shape is not guessable from the error alone: show it.
    throw paramInvalid('resources', 'must list at least one resource, one table each, e.g. "resources": [{"name": "orders", "path": "/v1/orders", "records_path": "data"}]');
  }
  const auth = c.auth ?? 'bearer';
  if (auth !== 'none' && (typeof c.token !== 'string' || c.token === '')) throw paramInvalid('token', `is required when auth is '${auth}'`);
  return c;
}

/**
 * The headers of every call: plain ones, and the credentials (the token and the configured
 * `headers`, which may hold keys too), which go only to the base URL's origin: a resource path
 * given as an absolute URL elsewhere, a next-page link or a redirect to another origin gets none.
 */
function headersOf(c: RestApiConfig): Pick<HttpCall, 'headers' | 'credentials'> {
  const credentials: Record<string, string> = { ...(c.headers ?? {}) };
  const auth = c.auth ?? 'bearer';
  if (auth === 'bearer') credentials.authorization = `Bearer ${c.token}`;
  else if (auth === 'header') credentials[(c.auth_header ?? 'X-API-Key').toLowerCase()] = c.token!;
  return { headers: { accept: 'application/json', 'user-agent': 'dp-connectors' }, credentials: { origin: new URL(c.url).origin, headers: credentials } };
}

function resourceOf(c: RestApiConfig, table: string): RestResource {
  const r = c.resources.find((x) => x.name === table);
  if (!r) throw new DpError(404, 'source_table_not_found', `The API connection has no resource '${table}' (it has ${c.resources.map((x) => x.name).join(', ')})`, { table });
  return r;
}

function resourceUrl(c: RestApiConfig, r: RestResource, extra: Record<string, string>): URL {
  const base = c.url.endsWith('/') ? c.url : `${c.url}/`;
  const url = new URL(r.path.replace(/^\//, ''), base);
  for (const [k, v] of Object.entries(r.params ?? {})) url.searchParams.set(k, String(v));
  const p = r.pagination ?? { style: 'none' };
  if (p.style !== 'none' && p.size_param) url.searchParams.set(p.size_param, String(p.page_size ?? 100));
  if (p.style === 'page') url.searchParams.set(p.page_param ?? 'page', String(p.start_page ?? 1));
  if (p.style === 'offset') url.searchParams.set(p.offset_param ?? 'offset', '0');
  for (const [k, v] of Object.entries(extra)) url.searchParams.set(k, v);
  return url;
}

interface Page {
  records: Record<string, unknown>[];
  next?: URL;
}

async function fetchPage(c: RestApiConfig, r: RestResource, url: URL, signal: AbortSignal): Promise<Page> {
  const where = hostOf(c.url);
  const timeoutMs = timeoutOf(c as unknown as Record<string, unknown>);
  const res = await httpRequest(url.toString(), { ...headersOf(c), signal, timeoutMs });
  await expectOk(res, where);
  const text = await readText(res);
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw invalidResponse(where, `resource '${r.name}' did not answer JSON`);
  }
  const found = atPath(body, r.records_path);
  if (!Array.isArray(found)) throw invalidResponse(where, `resource '${r.name}': no records array at '${r.records_path ?? ''}'`);
  const records = found.filter((x): x is Record<string, unknown> => x !== null && typeof x === 'object' && !Array.isArray(x));
  const p = r.pagination ?? { style: 'none' };
  let next: URL | undefined;
  if (records.length > 0) {
    switch (p.style) {
      case 'page': {
        if (records.length >= (p.page_size ?? 100) || !p.size_param) {
          next = new URL(url);
          const param = p.page_param ?? 'page';
          next.searchParams.set(param, String(Number(url.searchParams.get(param) ?? p.start_page ?? 1) + 1));
        }
        break;
      }
      case 'offset': {
        if (records.length >= (p.page_size ?? 100) || !p.size_param) {
          next = new URL(url);
          const param = p.offset_param ?? 'offset';
          next.searchParams.set(param, String(Number(url.searchParams.get(param) ?? 0) + records.length));
        }
        break;
      }
      case 'cursor': {
        const more = p.has_more_path ? atPath(body, p.has_more_path) : true;
        const cursor = p.next_cursor_path ? atPath(body, p.next_cursor_path) : p.cursor_from_record ? records[records.length - 1]![p.cursor_from_record] : undefined;
        if (more !== false && cursor !== undefined && cursor !== null && cursor !== '') {
          next = new URL(url);
          next.searchParams.set(p.cursor_param ?? 'cursor', String(cursor));
        }
        break;
      }
      case 'link': {
        const target = nextLink(res.headers.link);
        if (target) {
          next = new URL(target, url);
          // The token goes only to the configured origin, never to a host a Link header names.
          if (next.origin !== new URL(c.url).origin) throw invalidResponse(where, `resource '${r.name}': the next-page link points to another host`);
        }
        break;
      }
      default:
        break;
    }
  }
  return { records, next };
}

function columnsOf(r: RestResource, records: Record<string, unknown>[]): ConnectorColumn[] {
  const inferred = inferColumns(records);
  const overrides = r.column_types ?? {};
  const cols = inferred.map((col) => (overrides[col.name] ? { name: col.name, type: overrides[col.name]! } : col));
  for (const [name, type] of Object.entries(overrides)) if (!cols.some((x) => x.name === name)) cols.push({ name, type });
  return cols;
}

/** Records of one resource, page by page, as bounded batches (in API order). */
async function* readPages(c: RestApiConfig, r: RestResource, request: ConnectorReadRequest): AsyncGenerator<ConnectorBatch> {
  const after = request.cursor?.after;
  const extra: Record<string, string> = {};
  if (request.cursor && after !== null && after !== undefined && r.incremental_param) extra[r.incremental_param] = watermarkText(after);
  let url: URL | undefined = resourceUrl(c, r, extra);
  const batchRows = batchRowsOf(request.batchRows);
  let columns: ConnectorColumn[] | undefined;
  let pages = 0;
  let yielded = false;
  const seen = new Set<string>();
  while (url) {
    request.signal.throwIfAborted();
    if (seen.has(url.toString())) throw invalidResponse(hostOf(c.url), `resource '${r.name}': pagination returned to a page it already read`);
    seen.add(url.toString());
    const page = await fetchPage(c, r, url, request.signal);
    pages++;
    let records = page.records;
    if (request.cursor) records = records.filter((rec) => isAfter(rec[request.cursor!.column], after));
    if (records.length) {
      if (!columns) {
        const all = columnsOf(r, records);
        columns = request.columns?.length ? request.columns.map((n) => all.find((x) => x.name === n) ?? { name: n, type: 'VARCHAR' }) : all;
      }
      const cols = columns;
      for (const batch of chunked(cols, records.map((rec) => cols.map((col) => coerce(rec[col.name], col))), batchRows)) {
        request.signal.throwIfAborted();
        yield batch;
        yielded = true;
      }
    }
    url = page.next;
    if (c.max_pages && pages >= c.max_pages) break;
  }
  if (!yielded) {
    // No records: the columns the configuration names (so an incremental sync with nothing new
    // still finds its cursor column), the connectors plugin needs at least one batch.
    const known = columnsOf(r, []);
    for (const name of [request.cursor?.column, r.cursor_field]) if (name && !known.some((k) => k.name === name)) known.push({ name, type: 'VARCHAR' });
    yield { columns: request.columns?.length ? request.columns.map((n) => known.find((k) => k.name === n) ?? { name: n, type: 'VARCHAR' }) : known, rows: [] };
  }
}

/**
 * Records of one resource as bounded batches; an incremental read comes ordered by its cursor
 * column (APIs list in their own order; the watermark is the last row's value).
 */
export async function* readRest(config: Record<string, unknown>, request: ConnectorReadRequest): AsyncGenerator<ConnectorBatch> {
  const c = checkConfig(config);
  const r = resourceOf(c, request.table);
  if (!request.cursor) return yield* readPages(c, r, request);
  yield* orderedByCursor(readPages(c, r, request), request.cursor.column, batchRowsOf(request.batchRows), request.signal, request.runtime);
}

export async function discoverRest(config: Record<string, unknown>, signal: AbortSignal): Promise<DiscoveredTable[]> {
  const c = checkConfig(config);
  const out: DiscoveredTable[] = [];
  for (const r of c.resources) {
    const page = await fetchPage(c, r, resourceUrl(c, r, {}), signal);
    out.push({ name: r.name, columns: columnsOf(r, page.records) });
  }
  return out;
}

export async function testRest(config: Record<string, unknown>, signal: AbortSignal) {
  return probe(signal, timeoutOf(config), async (bounded) => {
    const c = checkConfig(config);
    const r = c.resources[0]!;
    const url = resourceUrl(c, r, {});
    const res = await httpRequest(url.toString(), { ...headersOf(c), signal: bounded, timeoutMs: timeoutOf(config) });
    await expectOk(res, hostOf(c.url));
    await readText(res, 0);
    return `connected to ${hostOf(c.url)}`;
  });
}

/** A REST-shaped connector type: rest_api itself and the SaaS presets, which build a RestApiConfig from their own params. */
export function restConnectorType(spec: {
  type: string;
  label: string;
  description: string;
  params: Record<string, unknown>;
  toRest: (config: Record<string, unknown>) => RestApiConfig;
}): ConnectorType {
  const rest = (config: Record<string, unknown>) => spec.toRest(config) as unknown as Record<string, unknown>;
  return {
    type: spec.type,
    label: spec.label,
    description: spec.description,
    params: spec.params,
    cdcModes: ['full_refresh', 'high_watermark'],
    testConnection: async (config, signal) => {
      let cfg: Record<string, unknown>;
      try {
        cfg = rest(config);
      } catch (e) {
        return { ok: false, message: (e as Error).message };
      }
      return testRest(cfg, signal);
    },
    discover: async (config, signal) => discoverRest(rest(config), signal),
    async *read(config, request) {
      yield* readRest(rest(config), request);
    },
    generateScript: (connection, tables, targetSchema) => generateSyncScript(connection, tables, targetSchema),
  };
}

export const restApiType: ConnectorType = restConnectorType({
  type: 'rest_api',
  label: 'REST API',
  description: 'Any JSON API: base URL, bearer or header token, page/offset/cursor/Link pagination, records at a JSON path, incremental cursor parameter',
  params: REST_API_PARAMS,
  toRest: (config) => checkConfig(config),
});
