/**
 * `cloud_warehouse_a` and `cloud_warehouse_b`: warehouses reached through an HTTP SQL API that
 * answers Arrow IPC streams (apache-arrow reads them record batch by record batch, so a result
 * of any size costs one batch of memory). `a` speaks a Snowflake-style statements API with a
 * bearer token and supports high-watermark reads; `b` a Databricks-style query API with an API
 * key header, full reads only.
 */
import type { DataType, RecordBatch } from 'apache-arrow';
import { DpError, requireOnFirstUse, type ConnectorBatch, type ConnectorColumn, type ConnectorReadRequest, type ConnectorType, type DiscoveredTable } from '../../sdk/index.js';
import { expectOk, hostOf, httpRequest, invalidResponse, paramInvalid, probe, TIMEOUT_PARAM, timeoutOf } from './net.js';
import { generateSyncScript } from './script.js';
import { ansiIdent, sqlLiteral, sqlTypeToDuckDB } from './sql-types.js';
import { batchRowsOf } from './values.js';

interface WarehouseFlavor {
  type: string;
  label: string;
  description: string;
  params: Record<string, unknown>;
  /** The request that runs one SQL statement and answers an Arrow stream. */
  statement(config: Record<string, unknown>, sql: string): { url: string; headers: Record<string, string>; body: string };
  /** The schema discover lists and reads default to. */
  schemaOf(config: Record<string, unknown>): string;
  cdc: boolean;
}

const ARROW_STREAM = 'application/vnd.apache.arrow.stream';

/** apache-arrow loads with the first warehouse answer it reads, not when the plugin sets up (docs/plugins.md "Activation on demand"). */
const arrow = requireOnFirstUse<typeof import('apache-arrow')>(import.meta.url, 'apache-arrow');

/** The DuckDB type for an Arrow field type. */
export function arrowTypeToDuckDB(type: DataType): string {
  const { Type } = arrow();
  switch (type.typeId) {
    case Type.Int: {
      const t = type as unknown as { bitWidth: number; isSigned: boolean };
      if (t.bitWidth === 64) return t.isSigned ? 'BIGINT' : 'UBIGINT';
      if (t.bitWidth === 32) return t.isSigned ? 'INTEGER' : 'BIGINT';
      return t.isSigned ? 'SMALLINT' : 'INTEGER';
    }
    case Type.Float:
      return (type as unknown as { precision: number }).precision === 0 ? 'FLOAT' : (type as unknown as { precision: number }).precision === 1 ? 'FLOAT' : 'DOUBLE';
    case Type.Decimal: {
      const d = type as unknown as { precision: number; scale: number };
      return d.precision <= 38 ? `DECIMAL(${d.precision},${d.scale})` : 'DOUBLE';
    }
    case Type.Bool:
      return 'BOOLEAN';
    case Type.Utf8:
    case Type.LargeUtf8:
      return 'VARCHAR';
    case Type.Date:
      return 'DATE';
    case Type.Timestamp:
      return (type as unknown as { timezone?: string | null }).timezone ? 'TIMESTAMPTZ' : 'TIMESTAMP';
    case Type.List:
    case Type.FixedSizeList:
    case Type.Struct:
    case Type.Map:
    case Type.Union:
      return 'JSON';
    default:
      return 'VARCHAR';
  }
}

function decimalText(value: unknown, scale: number): string {
  const { util } = arrow();
  const n = util.bigNumToBigInt(value as never);
  if (scale === 0) return n.toString();
  const neg = n < 0n;
  const digits = (neg ? -n : n).toString().padStart(scale + 1, '0');
  return `${neg ? '-' : ''}${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
}

function jsonSafe(v: unknown): unknown {
  return JSON.parse(JSON.stringify(v, (_k, x) => (typeof x === 'bigint' ? x.toString() : x)));
}

/** An Arrow value in the form the bulk loader takes for its DuckDB type. */
function converter(type: DataType): (v: unknown) => unknown {
  const { Type } = arrow();
  switch (type.typeId) {
    case Type.Timestamp:
    case Type.Date:
      return (v) => (v === null || v === undefined ? null : new Date(Number(v)));
    case Type.Decimal: {
      const scale = (type as unknown as { scale: number }).scale;
      return (v) => (v === null || v === undefined ? null : decimalText(v, scale));
    }
    case Type.List:
    case Type.FixedSizeList:
    case Type.Struct:
    case Type.Map:
    case Type.Union:
      return (v) => (v === null || v === undefined ? null : jsonSafe((v as { toJSON?: () => unknown }).toJSON ? (v as { toJSON: () => unknown }).toJSON() : v));
    case Type.Utf8:
    case Type.LargeUtf8:
    case Type.Int:
    case Type.Float:
    case Type.Bool:
      return (v) => (v === undefined ? null : v);
    default:
      return (v) => (v === null || v === undefined ? null : String(v));
  }
}

/** Runs one statement; yields the answer's record batches as bounded row batches. */
async function* runStatement(flavor: WarehouseFlavor, config: Record<string, unknown>, sql: string, batchRows: number, signal: AbortSignal): AsyncGenerator<ConnectorBatch> {
  const { url, headers, body } = flavor.statement(config, sql);
  const where = hostOf(url);
  const res = await httpRequest(url, { method: 'POST', headers: { ...headers, 'content-type': 'application/json', accept: ARROW_STREAM }, body, signal, timeoutMs: timeoutOf(config) });
  await expectOk(res, where);
  const contentType = String(res.headers['content-type'] ?? '');
  if (!contentType.startsWith(ARROW_STREAM)) {
    await res.body.dump();
    throw invalidResponse(where, `expected an Arrow stream, got '${contentType.split(';')[0]}'`);
  }
  let reader;
  try {
    // An async generator, not the Node stream itself: arrow destroys a Node stream it finishes,
    // which undici reports as an abort.
    reader = await arrow().RecordBatchReader.from((async function* () {
      for await (const chunk of res.body) yield chunk as Uint8Array;
    })());
    await reader.open();
  } catch {
    throw invalidResponse(where, 'the answer is not a readable Arrow stream');
  }
  let columns: ConnectorColumn[] | undefined;
  let convert: Array<(v: unknown) => unknown> = [];
  let yieldedRows = false;
  for await (const batch of reader as AsyncIterable<RecordBatch>) {
    signal.throwIfAborted();
    if (!columns) {
      columns = batch.schema.fields.map((f) => ({ name: f.name, type: arrowTypeToDuckDB(f.type) }));
      convert = batch.schema.fields.map((f) => converter(f.type));
    }
    const vectors = batch.schema.fields.map((_, i) => batch.getChildAt(i)!);
    for (let start = 0; start < batch.numRows; start += batchRows) {
      const end = Math.min(batch.numRows, start + batchRows);
      const rows: unknown[][] = [];
      for (let r = start; r < end; r++) rows.push(vectors.map((v, i) => convert[i]!(v.get(r))));
      yield { columns, rows };
      yieldedRows = true;
    }
  }
  // A result without rows may come as a schema alone: its columns, in one empty batch.
  const schema = (reader as unknown as { schema?: { fields: Array<{ name: string; type: DataType }> } }).schema;
  if (!columns && schema) yield { columns: schema.fields.map((f) => ({ name: f.name, type: arrowTypeToDuckDB(f.type) })), rows: [] };
  else if (columns && !yieldedRows) yield { columns, rows: [] };
}

async function discoverWarehouse(flavor: WarehouseFlavor, config: Record<string, unknown>, signal: AbortSignal): Promise<DiscoveredTable[]> {
  const schema = flavor.schemaOf(config);
  const sql =
    'SELECT table_schema, table_name, column_name, data_type, numeric_precision, numeric_scale FROM information_schema.columns ' +
    `WHERE table_schema = ${sqlLiteral(schema)} ORDER BY table_name, ordinal_position`;
  const tables = new Map<string, DiscoveredTable>();
  for await (const batch of runStatement(flavor, config, sql, 10_000, signal)) {
    for (const [s, t, c, type, p, sc] of batch.rows as Array<[string, string, string, string, unknown, unknown]>) {
      const table = tables.get(t) ?? { schema: s, name: t, columns: [] };
      table.columns.push({ name: c, type: sqlTypeToDuckDB(type, p === null || p === undefined ? null : Number(p), sc === null || sc === undefined ? null : Number(sc)) });
      tables.set(t, table);
    }
  }
  return [...tables.values()];
}

function selectSql(flavor: WarehouseFlavor, config: Record<string, unknown>, request: ConnectorReadRequest): string {
  const schema = request.schema ?? flavor.schemaOf(config);
  const projection = request.columns?.length ? request.columns.map(ansiIdent).join(', ') : '*';
  // A custom source query (project.yml `source_query`, in the warehouse's dialect) is read as a subquery.
  const source = request.sourceQuery ? `(${request.sourceQuery.replace(/;\s*$/, '')}) AS dp_source` : `${ansiIdent(schema)}.${ansiIdent(request.table)}`;
  let sql = `SELECT ${projection} FROM ${source}`;
  if (request.cursor) {
    if (!flavor.cdc) throw paramInvalid('cdc_mode', `${flavor.type} supports full_refresh only`);
    const col = ansiIdent(request.cursor.column);
    if (request.cursor.after !== null && request.cursor.after !== undefined) sql += ` WHERE ${col} > ${sqlLiteral(request.cursor.after)}`;
    sql += ` ORDER BY ${col}`;
  }
  return sql;
}

function warehouseType(flavor: WarehouseFlavor): ConnectorType {
  return {
    type: flavor.type,
    label: flavor.label,
    description: flavor.description,
    params: flavor.params,
    cdcModes: flavor.cdc ? ['full_refresh', 'high_watermark'] : ['full_refresh'],
    testConnection: (config, signal) =>
      probe(signal, timeoutOf(config), async (bounded) => {
        for await (const _ of runStatement(flavor, config, 'SELECT 1 AS ok', 1, bounded)) void _;
        return `connected to ${hostOf(String(config.url))}`;
      }),
    discover: (config, signal) => discoverWarehouse(flavor, config, signal),
    async *read(config, request) {
      const known = request.sourceQuery ? [{ name: request.table }] : await discoverWarehouse(flavor, config, request.signal);
      if (!known.some((t) => t.name === request.table)) throw new DpError(404, 'source_table_not_found', `The warehouse schema '${request.schema ?? flavor.schemaOf(config)}' has no table '${request.table}'`, { table: request.table });
      yield* runStatement(flavor, config, selectSql(flavor, config, request), batchRowsOf(request.batchRows), request.signal);
    },
    generateScript: (connection, tables, targetSchema) => generateSyncScript(connection, tables, targetSchema),
  };
}

function urlOf(config: Record<string, unknown>): string {
  if (typeof config.url !== 'string' || !/^https?:\/\//i.test(config.url)) throw paramInvalid('url', 'must be an http(s) URL');
  return config.url.replace(/\/+$/, '');
}

export const WAREHOUSE_A_PARAMS = {
  type: 'object',
  required: ['url', 'token', 'database'],
  properties: {
    url: { type: 'string', description: 'Account URL (`https://<account>.snowflakecomputing.com`)' },
    token: { type: 'string', 'x-secret': true, description: 'Access token (OAuth or programmatic access token), sent as a bearer token' },
    database: { type: 'string', description: 'Database' },
    schema: { type: 'string', default: 'PUBLIC', description: 'Schema whose tables discover lists' },
    warehouse: { type: 'string', description: 'Compute warehouse that runs the reads' },
    role: { type: 'string', description: 'Role to use' },
    timeout_ms: TIMEOUT_PARAM,
  },
  additionalProperties: false,
} as const;

export const WAREHOUSE_B_PARAMS = {
  type: 'object',
  required: ['url', 'api_key', 'catalog'],
  properties: {
    url: { type: 'string', description: 'Workspace URL (`https://<workspace>.cloud.databricks.com`)' },
    api_key: { type: 'string', 'x-secret': true, description: 'API key (sent in X-Api-Key)' },
    catalog: { type: 'string', description: 'Catalog' },
    schema: { type: 'string', default: 'default', description: 'Schema whose tables discover lists' },
    timeout_ms: TIMEOUT_PARAM,
  },
  additionalProperties: false,
} as const;

export const warehouseAType = warehouseType({
  type: 'cloud_warehouse_a',
  label: 'Cloud warehouse A (SQL API, Arrow)',
  description: 'A Snowflake-style warehouse through its SQL statements API answering Arrow streams; full and high-watermark (CDC) sync',
  params: WAREHOUSE_A_PARAMS,
  cdc: true,
  schemaOf: (config) => String(config.schema ?? 'PUBLIC'),
  statement: (config, sql) => ({
    url: `${urlOf(config)}/api/v2/statements`,
    headers: { authorization: `Bearer ${String(config.token ?? '')}`, 'user-agent': 'dp-connectors' },
    body: JSON.stringify({ statement: sql, database: config.database, schema: config.schema ?? 'PUBLIC', warehouse: config.warehouse, role: config.role, timeout: Math.ceil(timeoutOf(config) / 1000) }),
  }),
});

export const warehouseBType = warehouseType({
  type: 'cloud_warehouse_b',
  label: 'Cloud warehouse B (query API, Arrow)',
  description: 'A Databricks-style warehouse through its SQL query API answering Arrow streams; full sync',
  params: WAREHOUSE_B_PARAMS,
  cdc: false,
  schemaOf: (config) => String(config.schema ?? 'default'),
  statement: (config, sql) => ({
    url: `${urlOf(config)}/api/2.0/sql/query`,
    headers: { 'x-api-key': String(config.api_key ?? ''), 'user-agent': 'dp-connectors' },
    body: JSON.stringify({ query: sql, catalog: config.catalog, schema: config.schema ?? 'default', format: 'ARROW_STREAM' }),
  }),
});
