/**
 * `cloud_warehouse_c`: a warehouse that speaks the PostgreSQL wire protocol (Redshift,
 * and the like), read with `pg` through a server-side cursor (DECLARE ... FETCH n), so a table of
 * any size costs one batch of memory. The design's route, DuckDB's postgres extension, is not
 * available here: extensions cannot be downloaded on this machine.
 */
import type pg from 'pg';
import { DpError, errorMessage, requireOnFirstUse, type ConnectorBatch, type ConnectorColumn, type ConnectorReadRequest, type ConnectorType, type DiscoveredTable } from '../../sdk/index.js';
import { authFailed, networkCause, paramInvalid, probe, TIMEOUT_PARAM, timeoutOf, unreachable } from './net.js';
import { generateSyncScript } from './script.js';
import { ansiIdent, sqlTypeToDuckDB } from './sql-types.js';
import { batchRowsOf } from './values.js';

/** pg loads with the first connection, not when the plugin sets up (docs/plugins.md "Activation on demand"). */
const pgDriver = requireOnFirstUse<typeof pg>(import.meta.url, 'pg');

export const WAREHOUSE_C_PARAMS = {
  type: 'object',
  required: ['host', 'database', 'user'],
  properties: {
    host: { type: 'string', description: 'Host name (`<cluster>.<region>.redshift.amazonaws.com`)' },
    port: { type: 'integer', minimum: 1, maximum: 65535, default: 5439, description: 'Port' },
    database: { type: 'string', description: 'Database' },
    user: { type: 'string', description: 'User' },
    password: { type: 'string', 'x-secret': true, description: 'Password' },
    schema: { type: 'string', default: 'public', description: 'Schema whose tables discover lists' },
    ssl: { type: 'boolean', default: true, description: 'Connect over TLS' },
    timeout_ms: TIMEOUT_PARAM,
  },
  additionalProperties: false,
} as const;

interface PgConfig {
  host: string;
  port?: number;
  database: string;
  user: string;
  password?: string;
  schema?: string;
  ssl?: boolean;
  timeout_ms?: number;
}

function checkConfig(config: Record<string, unknown>): PgConfig {
  const c = config as unknown as PgConfig;
  for (const f of ['host', 'database', 'user'] as const) if (typeof c[f] !== 'string' || c[f] === '') throw paramInvalid(f, 'is required');
  return c;
}

// Dates and timestamps stay text ('2024-01-02 03:04:05'), so no local time zone shifts them;
// the bulk loader parses ISO text.
const TEXT_TYPES = new Set([1082, 1114, 1184]);
const types = {
  getTypeParser: (oid: number, format?: string) => (TEXT_TYPES.has(oid) ? (v: string) => v : pgDriver().types.getTypeParser(oid, format as 'text')),
};

function where(c: PgConfig): string {
  return `${c.host}:${c.port ?? 5439}`;
}

/** A pg connection error as the connector's error, its cause in words. */
function asSourceError(c: PgConfig, e: unknown): Error {
  const code = (e as { code?: string }).code;
  if (code === '28P01' || code === '28000') return authFailed(where(c));
  if (code === '3D000') return new DpError(502, 'remote_request_failed', `${where(c)}: database '${c.database}' does not exist`, { host: where(c) });
  const cause = networkCause(e, timeoutOf(c as unknown as Record<string, unknown>));
  if (cause) return unreachable(where(c), cause);
  if (/timeout/i.test(errorMessage(e))) return unreachable(where(c), `timed out after ${timeoutOf(c as unknown as Record<string, unknown>)} ms`);
  if (code) return new DpError(502, 'remote_request_failed', `${where(c)}: ${errorMessage(e).split('\n')[0]}`, { host: where(c), sqlstate: code });
  return e instanceof Error ? e : new Error(String(e));
}

async function connect(c: PgConfig, signal: AbortSignal): Promise<pg.Client> {
  const timeoutMs = timeoutOf(c as unknown as Record<string, unknown>);
  const client = new (pgDriver().Client)({
    host: c.host,
    port: c.port ?? 5439,
    database: c.database,
    user: c.user,
    password: c.password,
    ssl: c.ssl === false ? false : { rejectUnauthorized: true },
    connectionTimeoutMillis: timeoutMs,
    query_timeout: timeoutMs,
    application_name: 'dp-connectors',
    types,
  });
  client.on('error', () => undefined);
  const onAbort = () => void client.end().catch(() => undefined);
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    await client.connect();
  } catch (e) {
    signal.removeEventListener('abort', onAbort);
    await client.end().catch(() => undefined);
    throw asSourceError(c, e);
  }
  signal.removeEventListener('abort', onAbort);
  return client;
}

async function listTables(client: pg.Client, c: PgConfig): Promise<DiscoveredTable[]> {
  const res = await client.query(
    `SELECT table_schema, table_name, column_name, data_type, udt_name, numeric_precision, numeric_scale
       FROM information_schema.columns WHERE table_schema = $1 ORDER BY table_name, ordinal_position`,
    [c.schema ?? 'public'],
  );
  const tables = new Map<string, DiscoveredTable>();
  for (const r of res.rows as Array<Record<string, unknown>>) {
    const name = String(r.table_name);
    const t = tables.get(name) ?? { schema: String(r.table_schema), name, columns: [] };
    const dataType = String(r.data_type) === 'ARRAY' ? 'ARRAY' : String(r.data_type) === 'USER-DEFINED' ? String(r.udt_name) : String(r.data_type);
    t.columns.push({ name: String(r.column_name), type: sqlTypeToDuckDB(dataType, r.numeric_precision === null ? null : Number(r.numeric_precision), r.numeric_scale === null ? null : Number(r.numeric_scale)) });
    tables.set(name, t);
  }
  return [...tables.values()];
}

/** Columns of a custom source query: its result's fields, typed by the server's own type names. */
async function queryColumns(client: pg.Client, source: string): Promise<ConnectorColumn[]> {
  const probe = await client.query(`SELECT * FROM ${source} LIMIT 0`);
  const named = await client.query('SELECT format_type(t.oid, t.mod) AS type FROM unnest($1::oid[], $2::int[]) WITH ORDINALITY AS t(oid, mod, n) ORDER BY n', [
    probe.fields.map((f) => f.dataTypeID),
    probe.fields.map((f) => f.dataTypeModifier),
  ]);
  return probe.fields.map((f, i) => ({ name: f.name, type: sqlTypeToDuckDB(String((named.rows[i] as { type: string }).type).replace(/\[\]$/, '[]')) }));
}

/** A pg value in the form the bulk loader takes for the column's DuckDB type. */
function convert(value: unknown, column: ConnectorColumn): unknown {
  if (value === null || value === undefined) return null;
  if (column.type === 'JSON') return JSON.stringify(value);
  if (column.type === 'VARCHAR' && typeof value !== 'string') return Buffer.isBuffer(value) ? value.toString('hex') : typeof value === 'object' ? JSON.stringify(value) : String(value);
  if (column.type === 'DOUBLE' && typeof value === 'string') return Number(value);
  return value;
}

async function* readPg(config: Record<string, unknown>, request: ConnectorReadRequest): AsyncGenerator<ConnectorBatch> {
  const c = checkConfig(config);
  const client = await connect(c, request.signal);
  const onAbort = () => void client.end().catch(() => undefined);
  request.signal.addEventListener('abort', onAbort, { once: true });
  try {
    const schema = request.schema ?? c.schema ?? 'public';
    const source = request.sourceQuery ? `(${request.sourceQuery.replace(/;\s*$/, '')}) AS dp_source` : `${ansiIdent(schema)}.${ansiIdent(request.table)}`;
    const table = request.sourceQuery ? { name: request.table, columns: await queryColumns(client, source) } : (await listTables(client, { ...c, schema })).find((t) => t.name === request.table);
    if (!table) throw new DpError(404, 'source_table_not_found', `The warehouse schema '${schema}' has no table '${request.table}'`, { table: request.table });
    const columns = request.columns?.length
      ? request.columns.map((n) => {
          const col = table.columns.find((x) => x.name === n);
          if (!col) throw new DpError(404, 'source_table_not_found', `Table '${request.table}' has no column '${n}'`, { table: request.table, column: n });
          return col;
        })
      : table.columns;
    let sql = `SELECT ${columns.map((x) => ansiIdent(x.name)).join(', ')} FROM ${source}`;
    const params: unknown[] = [];
    if (request.cursor) {
      const col = ansiIdent(request.cursor.column);
      if (request.cursor.after !== null && request.cursor.after !== undefined) {
        params.push(request.cursor.after instanceof Date ? request.cursor.after.toISOString() : String(request.cursor.after));
        sql += ` WHERE ${col} > $1`;
      }
      sql += ` ORDER BY ${col}`;
    }
    const batchRows = batchRowsOf(request.batchRows);
    await client.query('BEGIN READ ONLY');
    await client.query(`DECLARE dp_read NO SCROLL CURSOR FOR ${sql}`, params);
    for (let first = true; ; first = false) {
      request.signal.throwIfAborted();
      const res = await client.query({ text: `FETCH ${batchRows} FROM dp_read`, rowMode: 'array' });
      if (res.rows.length === 0) {
        // No rows at all: one empty batch still tells the columns.
        if (first) yield { columns, rows: [] };
        break;
      }
      yield { columns, rows: (res.rows as unknown[][]).map((r) => r.map((v, i) => convert(v, columns[i]!))) };
      if (res.rows.length < batchRows) break;
    }
    await client.query('COMMIT');
  } catch (e) {
    if (request.signal.aborted) throw e;
    throw e instanceof DpError ? e : asSourceError(c, e);
  } finally {
    request.signal.removeEventListener('abort', onAbort);
    await client.end().catch(() => undefined);
  }
}

export const warehouseCType: ConnectorType = {
  type: 'cloud_warehouse_c',
  label: 'Cloud warehouse C (PostgreSQL wire)',
  description: 'A Redshift-style warehouse over the PostgreSQL wire protocol, read through a server-side cursor; full and high-watermark sync',
  params: WAREHOUSE_C_PARAMS,
  cdcModes: ['full_refresh', 'high_watermark'],
  testConnection: (config, signal) =>
    probe(signal, timeoutOf(config), async (bounded) => {
      const c = checkConfig(config);
      const client = await connect(c, bounded);
      try {
        const r = await client.query('SELECT version() AS v');
        return `connected: ${String((r.rows[0] as { v: string }).v).split(' ').slice(0, 2).join(' ')}`;
      } catch (e) {
        throw asSourceError(c, e);
      } finally {
        await client.end().catch(() => undefined);
      }
    }),
  async discover(config, signal) {
    const c = checkConfig(config);
    const client = await connect(c, signal);
    try {
      return await listTables(client, c);
    } catch (e) {
      throw asSourceError(c, e);
    } finally {
      await client.end().catch(() => undefined);
    }
  },
  read: readPg,
  generateScript: (connection, tables, targetSchema) => generateSyncScript(connection, tables, targetSchema),
};
