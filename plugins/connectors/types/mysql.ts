/**
 * `mysql`: MySQL and MariaDB through `mysql2`, streaming a query's rows (the connection is
 * paused while a full batch is handed on, so memory holds one batch). BIGINT and DECIMAL arrive
 * as exact strings, dates and times as the server's text in UTC (session time_zone '+00:00'),
 * so a high watermark is the source's own text, compared back by the server. Zero dates
 * (`0000-00-00`) become NULL.
 */
import type mysql from 'mysql2';
import { connectorScript, requireOnFirstUse, type ConnectorBatch, type ConnectorColumn, type ConnectorReadRequest, type ConnectorType, type DiscoveredTable } from '../../../sdk/index.js';
import { connectionCause, withTimeout } from './connection-errors.js';

/** mysql2 loads with the first connection, not when the plugin sets up (docs/plugins.md "Activation on demand"). */
const mysqlDriver = requireOnFirstUse<typeof mysql>(import.meta.url, 'mysql2');

export interface MysqlConfig {
  host: string;
  port: number;
  database: string;
  user: string;
  password?: string;
  connect_timeout_seconds?: number;
}

type Conn = mysql.Connection;

function open(config: MysqlConfig, signal: AbortSignal | undefined): Promise<Conn> {
  const c = mysqlDriver().createConnection({
    host: config.host,
    port: config.port ?? 3306,
    user: config.user,
    password: config.password ?? '',
    database: config.database,
    connectTimeout: (config.connect_timeout_seconds ?? 10) * 1000,
    dateStrings: true,
    supportBigNumbers: true,
    bigNumberStrings: true,
    decimalNumbers: false,
    timezone: 'Z',
    // JSON columns stay text: the target column is JSON anyway.
    jsonStrings: true,
  } as mysql.ConnectionOptions);
  c.on('error', () => undefined);
  const ready = new Promise<Conn>((resolve, reject) => {
    c.connect((err) => (err ? reject(err) : resolve(c)));
  });
  return withTimeout(ready, (config.connect_timeout_seconds ?? 10) * 1000 + 1000, signal, () => c.destroy())
    .then(async (conn) => {
      await query(conn, "SET time_zone = '+00:00'");
      return conn;
    })
    .catch((e) => {
      c.destroy();
      throw Object.assign(new Error(connectionCause(e)), { cause: e });
    });
}

function query<T = unknown>(c: Conn, sql: string, values?: unknown[]): Promise<T> {
  return new Promise((resolve, reject) => c.query(sql, values ?? [], (err, rows) => (err ? reject(err) : resolve(rows as T))));
}

const quote = (name: string) => '`' + name.replace(/`/g, '``') + '`';

/** DuckDB type of a MySQL information_schema DATA_TYPE. */
export function duckTypeOfMysqlName(dataType: string, columnType: string, precision: number | null, scale: number | null): string {
  const unsigned = /unsigned/i.test(columnType);
  switch (dataType.toLowerCase()) {
    case 'tinyint':
    case 'smallint':
    case 'mediumint':
      return 'INTEGER';
    case 'int':
    case 'integer':
      return unsigned ? 'BIGINT' : 'INTEGER';
    case 'bigint':
      return unsigned ? 'UBIGINT' : 'BIGINT';
    case 'decimal':
    case 'numeric':
      return precision && precision <= 38 ? `DECIMAL(${precision},${scale ?? 0})` : 'DOUBLE';
    case 'float':
      return 'REAL';
    case 'double':
    case 'real':
      return 'DOUBLE';
    case 'date':
      return 'DATE';
    case 'datetime':
    case 'timestamp':
      return 'TIMESTAMP';
    case 'year':
      return 'INTEGER';
    case 'json':
      return 'JSON';
    case 'binary':
    case 'varbinary':
    case 'tinyblob':
    case 'blob':
    case 'mediumblob':
    case 'longblob':
      return 'BLOB';
    default:
      return 'VARCHAR';
  }
}

type Parse = (v: unknown) => unknown;
const same: Parse = (v) => v;
const zeroDateToNull: Parse = (v) => (typeof v === 'string' && v.startsWith('0000-00-00') ? null : v);

/** A result column's DuckDB type and value conversion, from mysql2's field packet. */
function columnOf(f: mysql.FieldPacket): { column: ConnectorColumn; parse: Parse } {
  const t = mysqlDriver().Types;
  const unsigned = ((f.flags as number) & 32) !== 0;
  const binary = f.characterSet === 63;
  const c = (type: string, parse: Parse = same) => ({ column: { name: f.name, type }, parse });
  switch (f.columnType) {
    case t.TINY:
    case t.SHORT:
    case t.INT24:
    case t.YEAR:
      return c('INTEGER');
    case t.LONG:
      return c(unsigned ? 'BIGINT' : 'INTEGER');
    case t.LONGLONG:
      return c(unsigned ? 'UBIGINT' : 'BIGINT');
    case t.NEWDECIMAL:
    case t.DECIMAL: {
      const scale = f.decimals ?? 0;
      const precision = (f.columnLength ?? 0) - (scale > 0 ? 1 : 0) - (unsigned ? 0 : 1);
      return precision > 0 && precision <= 38 ? c(`DECIMAL(${precision},${scale})`) : c('DOUBLE', (v) => (v === null ? null : Number(v)));
    }
    case t.FLOAT:
      return c('REAL');
    case t.DOUBLE:
      return c('DOUBLE');
    case t.DATE:
    case t.NEWDATE:
      return c('DATE', zeroDateToNull);
    case t.DATETIME:
    case t.TIMESTAMP:
      return c('TIMESTAMP', zeroDateToNull);
    case t.JSON:
      return c('JSON', (v) => (v === null || typeof v === 'string' ? v : JSON.stringify(v)));
    case t.TINY_BLOB:
    case t.MEDIUM_BLOB:
    case t.LONG_BLOB:
    case t.BLOB:
    case t.VAR_STRING:
    case t.STRING:
      return binary ? c('BLOB', (v) => (v === null ? null : new Uint8Array(v as Buffer))) : c('VARCHAR', (v) => (Buffer.isBuffer(v) ? v.toString('utf8') : v));
    default:
      return c('VARCHAR', (v) => (v === null ? null : Buffer.isBuffer(v) ? v.toString('utf8') : String(v)));
  }
}

function readSql(c: Conn, req: Pick<ConnectorReadRequest, 'table' | 'sourceQuery' | 'cursor' | 'columns'>): string {
  const dot = req.table.indexOf('.');
  const table = dot > 0 ? `${quote(req.table.slice(0, dot))}.${quote(req.table.slice(dot + 1))}` : quote(req.table);
  const from = req.sourceQuery ? `(${req.sourceQuery.replace(/;\s*$/, '')}) AS src` : `${table} AS src`;
  const cols = req.columns?.length ? req.columns.map(quote).join(', ') : '*';
  if (!req.cursor) return `SELECT ${cols} FROM ${from}`;
  const col = quote(req.cursor.column);
  const where = req.cursor.after === null || req.cursor.after === undefined ? '' : ` WHERE ${col} > ${c.escape(String(req.cursor.after))}`;
  return `SELECT ${cols} FROM ${from}${where} ORDER BY ${col}`;
}

async function* readMysql(config: MysqlConfig, req: ConnectorReadRequest): AsyncGenerator<ConnectorBatch> {
  const c = await open(config, req.signal);
  const batchRows = Math.max(1, req.batchRows ?? 10_000);
  const onAbort = () => c.destroy();
  req.signal.addEventListener('abort', onAbort, { once: true });
  let columns: ConnectorColumn[] | undefined;
  let parsers: Parse[] = [];
  let rows: unknown[][] = [];
  let done = false;
  let failure: unknown;
  let wake: (() => void) | undefined;
  const notify = () => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  try {
    const q = c.query({ sql: readSql(c, req), rowsAsArray: true });
    q.on('fields', (fields: mysql.FieldPacket[]) => {
      const described = fields.map(columnOf);
      columns = described.map((d) => d.column);
      parsers = described.map((d) => d.parse);
      notify();
    });
    q.on('result', (row: unknown) => {
      const r = row as unknown[];
      for (let i = 0; i < r.length; i++) if (r[i] !== null) r[i] = parsers[i]!(r[i]);
      rows.push(r);
      if (rows.length >= batchRows) {
        c.pause();
        notify();
      }
    });
    q.on('error', (e: unknown) => {
      failure = e;
      notify();
    });
    q.on('end', () => {
      done = true;
      notify();
    });
    let sent = false;
    for (;;) {
      if (failure) throw failure;
      if (rows.length >= batchRows || (done && columns)) {
        const batch = rows;
        rows = [];
        if (batch.length || !sent) yield { columns: columns!, rows: batch };
        sent = true;
        if (done && rows.length === 0) break;
        c.resume();
        continue;
      }
      if (done) {
        if (failure) throw failure;
        throw new Error('the query returned no result set');
      }
      await new Promise<void>((resolve) => (wake = resolve));
    }
  } finally {
    req.signal.removeEventListener('abort', onAbort);
    c.destroy();
  }
}

async function discoverMysql(config: MysqlConfig, signal: AbortSignal): Promise<DiscoveredTable[]> {
  const c = await open(config, signal);
  try {
    const rows = await query<Array<Record<string, unknown>>>(
      c,
      `SELECT TABLE_NAME AS t, COLUMN_NAME AS c, DATA_TYPE AS d, COLUMN_TYPE AS ct, NUMERIC_PRECISION AS p, NUMERIC_SCALE AS s
       FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? ORDER BY TABLE_NAME, ORDINAL_POSITION`,
      [config.database],
    );
    const tables = new Map<string, DiscoveredTable>();
    for (const r of rows) {
      const name = String(r.t);
      let t = tables.get(name);
      if (!t) tables.set(name, (t = { schema: config.database, name, columns: [] }));
      t.columns.push({ name: String(r.c), type: duckTypeOfMysqlName(String(r.d), String(r.ct), r.p === null ? null : Number(r.p), r.s === null ? null : Number(r.s)) });
    }
    return [...tables.values()];
  } finally {
    c.destroy();
  }
}

export const mysqlType: ConnectorType = {
  type: 'mysql',
  label: 'MySQL / MariaDB',
  description: 'Tables of a MySQL or MariaDB database, streamed row by row in batches',
  params: {
    type: 'object',
    required: ['host', 'database', 'user'],
    properties: {
      host: { type: 'string', minLength: 1 },
      port: { type: 'integer', minimum: 1, maximum: 65535, default: 3306 },
      database: { type: 'string', minLength: 1 },
      user: { type: 'string', minLength: 1 },
      password: { type: 'string', 'x-secret': true },
      connect_timeout_seconds: { type: 'number', exclusiveMinimum: 0, default: 10 },
    },
    additionalProperties: false,
  },
  cdcModes: ['full_refresh', 'high_watermark'],
  async testConnection(config, signal) {
    try {
      const c = await open(config as unknown as MysqlConfig, signal);
      try {
        const r = await query<Array<{ v: string }>>(c, 'SELECT VERSION() AS v');
        return { ok: true, message: `connected: ${r[0]?.v ?? 'server'}` };
      } finally {
        c.destroy();
      }
    } catch (e) {
      return { ok: false, message: connectionCause((e as { cause?: unknown }).cause ?? e) };
    }
  },
  discover: (config, signal) => discoverMysql(config as unknown as MysqlConfig, signal),
  generateScript: (connection, tables, targetSchema) => connectorScript(connection, tables, targetSchema),
  read: (config, request) => readMysql(config as unknown as MysqlConfig, request),
};
