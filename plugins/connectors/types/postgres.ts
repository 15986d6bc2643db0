/**
 * `postgres`: PostgreSQL through `pg` with a server-side cursor (DECLARE … NO SCROLL CURSOR /
 * FETCH n inside a read-only transaction), so the server holds the result and the client one
 * batch. Values arrive as PostgreSQL's text and are converted per column type: exact for BIGINT,
 * NUMERIC and timestamps (microseconds kept; the session time zone is UTC), which also makes a
 * high watermark the source's own text, compared back by PostgreSQL itself.
 *
 * Syncs take the bulk path (`readCsv`): `COPY (SELECT …) TO STDOUT (FORMAT csv)` streamed
 * through a pipe into DuckDB's CSV reader, so no row is parsed or converted in JS.
 */
import type pg from 'pg';
import {
  connectorScript,
  requireOnFirstUse,
  type ConnectorBatch,
  type ConnectorColumn,
  type ConnectorCsvColumn,
  type ConnectorCsvSource,
  type ConnectorReadRequest,
  type ConnectorType,
  type DiscoveredTable,
} from '../../../sdk/index.js';
import { connectionCause, withTimeout } from './connection-errors.js';

/** pg loads with the first connection, not when the plugin sets up (docs/plugins.md "Activation on demand"). */
const pgDriver = requireOnFirstUse<typeof pg>(import.meta.url, 'pg');

export interface PostgresConfig {
  host: string;
  port: number;
  database: string;
  user: string;
  password?: string;
  schema?: string;
  connect_timeout_seconds?: number;
}

export const POSTGRES_PARAMS = {
  type: 'object',
  required: ['host', 'database', 'user'],
  properties: {
    host: { type: 'string', minLength: 1, description: 'Server host name or address' },
    port: { type: 'integer', minimum: 1, maximum: 65535, default: 5432 },
    database: { type: 'string', minLength: 1 },
    user: { type: 'string', minLength: 1 },
    password: { type: 'string', 'x-secret': true },
    schema: { type: 'string', default: 'public', description: 'Schema of unqualified table names; discover lists every schema' },
    connect_timeout_seconds: { type: 'number', exclusiveMinimum: 0, default: 10 },
  },
  additionalProperties: false,
} as const;

const RAW_TEXT = { getTypeParser: () => (value: string) => value } as unknown as pg.CustomTypesConfig;

function client(config: PostgresConfig): pg.Client {
  return new (pgDriver().Client)({
    host: config.host,
    port: config.port ?? 5432,
    database: config.database,
    user: config.user,
    password: config.password ?? '',
    connectionTimeoutMillis: (config.connect_timeout_seconds ?? 10) * 1000,
    types: RAW_TEXT,
    application_name: 'dp-connector',
  });
}

async function connect(config: PostgresConfig, signal: AbortSignal | undefined): Promise<pg.Client> {
  const c = client(config);
  c.on('error', () => undefined); // a dropped connection surfaces through the pending query instead
  const ms = (config.connect_timeout_seconds ?? 10) * 1000 + 1000;
  try {
    await withTimeout(c.connect(), ms, signal, () => void c.end().catch(() => undefined));
  } catch (e) {
    throw Object.assign(new Error(connectionCause(e)), { cause: e });
  }
  await c.query("SET TIME ZONE 'UTC'; SET DateStyle = 'ISO, YMD'; SET IntervalStyle = 'iso_8601'; SET extra_float_digits = 3; SET bytea_output = 'hex'");
  return c;
}

const quote = (name: string) => '"' + name.replace(/"/g, '""') + '"';

/** `schema.table` or `table` → both parts (unqualified names take the config's schema). */
export function splitTable(name: string, defaultSchema: string): { schema: string; table: string } {
  const dot = name.indexOf('.');
  return dot > 0 ? { schema: name.slice(0, dot), table: name.slice(dot + 1) } : { schema: defaultSchema, table: name };
}

/** DuckDB type of a PostgreSQL type (information_schema names). */
export function duckTypeOfPgName(dataType: string, precision: number | null, scale: number | null): string {
  switch (dataType) {
    case 'smallint':
      return 'SMALLINT';
    case 'integer':
      return 'INTEGER';
    case 'bigint':
      return 'BIGINT';
    case 'real':
      return 'REAL';
    case 'double precision':
      return 'DOUBLE';
    case 'numeric':
      return precision && precision <= 38 ? `DECIMAL(${precision},${scale ?? 0})` : 'DOUBLE';
    case 'boolean':
      return 'BOOLEAN';
    case 'date':
      return 'DATE';
    case 'timestamp without time zone':
      return 'TIMESTAMP';
    case 'timestamp with time zone':
      return 'TIMESTAMPTZ';
    case 'time without time zone':
      return 'TIME';
    case 'json':
    case 'jsonb':
      return 'JSON';
    case 'uuid':
      return 'UUID';
    case 'bytea':
      return 'BLOB';
    default:
      return 'VARCHAR';
  }
}

type Parse = (text: string) => unknown;
const asNumber: Parse = (t) => Number(t);
const asText: Parse = (t) => t;

/** DuckDB type and text parser of a result column, by type OID and modifier. */
function columnOf(field: { name: string; dataTypeID: number; dataTypeModifier: number }): { column: ConnectorColumn; parse: Parse } {
  const c = (type: string, parse: Parse) => ({ column: { name: field.name, type }, parse });
  switch (field.dataTypeID) {
    case 21:
      return c('SMALLINT', asNumber);
    case 23:
    case 26:
      return c('INTEGER', asNumber);
    case 20:
      return c('BIGINT', asText);
    case 700:
      return c('REAL', asNumber);
    case 701:
      return c('DOUBLE', asNumber);
    case 1700: {
      const mod = field.dataTypeModifier;
      if (mod >= 4) {
        const precision = ((mod - 4) >> 16) & 0xffff;
        const scale = (mod - 4) & 0xffff;
        if (precision <= 38) return c(`DECIMAL(${precision},${scale})`, asText);
      }
      return c('DOUBLE', asNumber);
    }
    case 16:
      return c('BOOLEAN', (t) => t === 't');
    case 1082:
      return c('DATE', asText);
    case 1114:
      return c('TIMESTAMP', asText);
    case 1184:
      return c('TIMESTAMPTZ', asText);
    case 1083:
      return c('TIME', asText);
    case 114:
    case 3802:
      return c('JSON', asText);
    case 2950:
      return c('UUID', asText);
    case 17:
      return c('BLOB', (t) => (t.startsWith('\\x') ? new Uint8Array(Buffer.from(t.slice(2), 'hex')) : new TextEncoder().encode(t)));
    default:
      return c('VARCHAR', asText);
  }
}

/** The SELECT a read runs: the table or the custom query, filtered and ordered by the cursor. */
export function readSql(c: pg.Client, config: PostgresConfig, req: Pick<ConnectorReadRequest, 'table' | 'sourceQuery' | 'cursor' | 'columns'>, ordered = true): string {
  const { schema, table } = splitTable(req.table, config.schema ?? 'public');
  const from = req.sourceQuery ? `(${req.sourceQuery.replace(/;\s*$/, '')}) AS src` : `${quote(schema)}.${quote(table)} AS src`;
  const cols = req.columns?.length ? req.columns.map(quote).join(', ') : '*';
  if (!req.cursor) return `SELECT ${cols} FROM ${from}`;
  const col = quote(req.cursor.column);
  const where = req.cursor.after === null || req.cursor.after === undefined ? '' : ` WHERE ${col} > ${c.escapeLiteral(String(req.cursor.after))}`;
  return `SELECT ${cols} FROM ${from}${where}${ordered ? ` ORDER BY ${col}` : ''}`;
}

async function* readPostgres(config: PostgresConfig, req: ConnectorReadRequest): AsyncGenerator<ConnectorBatch> {
  const c = await connect(config, req.signal);
  const onAbort = () => void c.end().catch(() => undefined);
  req.signal.addEventListener('abort', onAbort, { once: true });
  const batch = Math.max(1, req.batchRows ?? 10_000);
  try {
    await c.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    await c.query(`DECLARE dp_sync NO SCROLL CURSOR FOR ${readSql(c, config, req)}`);
    let columns: ConnectorColumn[] | undefined;
    let parsers: Parse[] = [];
    let sent = false;
    const fetchNext = () => {
      const q = c.query({ text: `FETCH ${batch} FROM dp_sync`, rowMode: 'array' });
      q.catch(() => undefined); // awaited below; an early return must not leave it unhandled
      return q;
    };
    // The next FETCH is sent before a batch is converted and handed on, so PostgreSQL produces
    // rows while DuckDB appends the previous ones.
    let pending = fetchNext();
    for (;;) {
      const r = await pending;
      const full = r.rows.length === batch;
      if (full) pending = fetchNext();
      if (!columns) {
        const described = r.fields.map(columnOf);
        columns = described.map((d) => d.column);
        parsers = described.map((d) => d.parse);
      }
      const rows = r.rows as Array<Array<string | null>>;
      for (const row of rows) for (let i = 0; i < row.length; i++) if (row[i] !== null) row[i] = parsers[i]!(row[i] as string) as string;
      // The first batch goes out even when empty: it carries the columns.
      if (rows.length > 0 || !sent) yield { columns, rows };
      sent = true;
      if (!full) break;
    }
    await c.query('COMMIT');
  } finally {
    req.signal.removeEventListener('abort', onAbort);
    await c.end().catch(() => undefined);
  }
}

/** How DuckDB's CSV reader takes a column of COPY's CSV: bytea (`\\x…` hex) and JSON as text, converted in SQL. */
function csvColumnOf(column: ConnectorColumn): ConnectorCsvColumn {
  if (column.type === 'BLOB') return { ...column, csvType: 'VARCHAR', fromCsv: (q) => `unhex(substr(${q}, 3))` };
  if (column.type === 'JSON') return { ...column, csvType: 'VARCHAR', fromCsv: (q) => `${q}::JSON` };
  return column;
}

/**
 * `COPY … TO STDOUT` as a pg submittable: CopyData messages go straight into `sink` as bytes. When
 * the sink is full the socket is paused (PostgreSQL then waits on TCP), so memory stays bounded.
 */
const WRITE_BYTES = 256 * 1024;

class CopyToSink {
  private readonly done: Promise<void>;
  private settle!: { resolve: () => void; reject: (e: unknown) => void };
  private failed: unknown = null;
  private socket: { pause(): void; resume(): void } | null = null;
  private paused = false;

  constructor(
    private readonly text: string,
    private readonly sink: NodeJS.WritableStream,
  ) {
    this.done = new Promise((resolve, reject) => (this.settle = { resolve, reject }));
    this.done.catch(() => undefined);
    sink.on('drain', () => this.resume());
    sink.on('error', (e) => this.fail(e));
  }

  get promise(): Promise<void> {
    return this.done;
  }

  private resume(): void {
    if (this.paused) {
      this.paused = false;
      this.socket?.resume();
    }
  }

  private fail(e: unknown): void {
    if (this.failed) return;
    this.failed = e;
    this.resume();
    this.settle.reject(e);
  }

  submit(connection: { query(text: string): void; stream: { pause(): void; resume(): void } }): void {
    this.socket = connection.stream;
    connection.query(this.text);
  }

  /**
   * PostgreSQL sends one CopyData message per row. Their bytes are copied into a 256 KB block
   * written when full: fewer writes, and pg's parser reuses its buffer, so a message's bytes
   * must not be held by reference once the handler returns.
   */
  private block = Buffer.allocUnsafe(WRITE_BYTES);
  private used = 0;

  private flush(): void {
    if (this.used === 0) return;
    const data = this.block.subarray(0, this.used);
    this.block = Buffer.allocUnsafe(WRITE_BYTES);
    this.used = 0;
    if (!this.sink.write(data) && !this.paused) {
      this.paused = true;
      this.socket?.pause();
    }
  }

  handleCopyData(msg: { chunk: Buffer }): void {
    if (this.failed) return;
    const chunk = msg.chunk;
    if (this.used + chunk.length > WRITE_BYTES) this.flush();
    if (chunk.length > WRITE_BYTES) {
      if (!this.sink.write(Buffer.from(chunk)) && !this.paused) {
        this.paused = true;
        this.socket?.pause();
      }
      return;
    }
    this.used += chunk.copy(this.block, this.used);
  }

  handleCommandComplete(): void {
    if (this.failed) return;
    this.flush();
    this.sink.end();
    // The socket stays this client's: never leave it paused past the COPY (the last write may
    // have filled the sink, and no 'drain' follows end()).
    this.resume();
  }

  handleReadyForQuery(): void {
    if (this.failed) return;
    const finished = () => this.settle.resolve();
    // The sink has taken every byte once it finished (a file stream: closed).
    if ((this.sink as { writableFinished?: boolean }).writableFinished) finished();
    else this.sink.once('finish', finished);
  }

  handleError(e: unknown): void {
    this.fail(e);
  }

  // pg calls these for messages a COPY never sends; they only guard against a protocol surprise.
  handleRowDescription(): void {}
  handleDataRow(): void {}
  handleEmptyQuery(): void {}
  handlePortalSuspended(): void {}
  handleCopyInResponse(): void {
    this.fail(new Error('unexpected COPY IN from the server'));
  }
}

async function readPostgresCsv(config: PostgresConfig, req: ConnectorReadRequest): Promise<ConnectorCsvSource> {
  const c = await connect(config, req.signal);
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    req.signal.removeEventListener('abort', onAbort);
    await c.end().catch(() => undefined);
  };
  const onAbort = () => void close();
  req.signal.addEventListener('abort', onAbort, { once: true });
  try {
    // One snapshot for the column query and the COPY.
    await c.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    const select = readSql(c, config, req, false);
    const described = await c.query({ text: `SELECT * FROM (${select}) AS q LIMIT 0`, rowMode: 'array' });
    const columns = described.fields.map((f) => csvColumnOf(columnOf(f).column));
    return {
      columns,
      writeTo: async (sink) => {
        const copy = new CopyToSink(`COPY (${select}) TO STDOUT WITH (FORMAT csv)`, sink);
        void c.query(copy as unknown as pg.QueryConfig);
        try {
          await copy.promise;
        } catch (e) {
          // The reader went away or the server failed: this connection is done either way.
          await close();
          throw e;
        }
        await c.query('COMMIT');
      },
      close,
    };
  } catch (e) {
    await close();
    throw e;
  }
}

async function discoverPostgres(config: PostgresConfig, signal: AbortSignal): Promise<DiscoveredTable[]> {
  const c = await connect(config, signal);
  try {
    const r = await c.query(
      `SELECT c.table_schema, c.table_name, c.column_name, c.data_type, c.numeric_precision, c.numeric_scale
       FROM information_schema.columns c JOIN information_schema.tables t USING (table_schema, table_name)
       WHERE c.table_schema NOT IN ('pg_catalog', 'information_schema') AND c.table_schema NOT LIKE 'pg_toast%'
       ORDER BY c.table_schema, c.table_name, c.ordinal_position`,
    );
    const tables = new Map<string, DiscoveredTable>();
    for (const row of r.rows as Array<Record<string, string | null>>) {
      const key = `${row.table_schema}.${row.table_name}`;
      let t = tables.get(key);
      if (!t) tables.set(key, (t = { schema: row.table_schema!, name: key, columns: [] }));
      t.columns.push({ name: row.column_name!, type: duckTypeOfPgName(row.data_type!, row.numeric_precision ? Number(row.numeric_precision) : null, row.numeric_scale ? Number(row.numeric_scale) : null) });
    }
    return [...tables.values()];
  } finally {
    await c.end().catch(() => undefined);
  }
}

export const postgresType: ConnectorType = {
  type: 'postgres',
  label: 'PostgreSQL',
  description: 'Tables and views of a PostgreSQL database, streamed through a server-side cursor',
  params: POSTGRES_PARAMS as unknown as Record<string, unknown>,
  cdcModes: ['full_refresh', 'high_watermark'],
  async testConnection(config, signal) {
    try {
      const c = await connect(config as unknown as PostgresConfig, signal);
      try {
        const v = await c.query('SELECT version() AS v');
        return { ok: true, message: `connected: ${String((v.rows[0] as { v: string }).v).split(',')[0]}` };
      } finally {
        await c.end().catch(() => undefined);
      }
    } catch (e) {
      return { ok: false, message: connectionCause((e as { cause?: unknown }).cause ?? e) };
    }
  },
  discover: (config, signal) => discoverPostgres(config as unknown as PostgresConfig, signal),
  generateScript: (connection, tables, targetSchema) => connectorScript(connection, tables, targetSchema),
  read: (config, request) => readPostgres(config as unknown as PostgresConfig, request),
  readCsv: (config, request) => readPostgresCsv(config as unknown as PostgresConfig, request),
};
