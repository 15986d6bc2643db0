/**
 * A local fake of the two Arrow-answering warehouse SQL APIs (cloud_warehouse_a: Snowflake-style
 * `POST /api/v2/statements` with a bearer token; cloud_warehouse_b: Databricks-style
 * `POST /api/2.0/sql/query` with X-Api-Key). A private in-memory DuckDB plays the warehouse: it
 * runs the SQL, and each result chunk goes out as one Arrow record batch of an IPC stream.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { Bool, DateDay, Decimal, Field, Float64, Int32, Int64, makeData, makeVector, RecordBatch, RecordBatchStreamWriter, Schema, Struct, TimestampMillisecond, Utf8, vectorFromArray, type DataType, type Vector } from 'apache-arrow';

export interface FakeWarehouse {
  url: string;
  token: string;
  /** The warehouse's own connection: tests create and fill tables with it. */
  db: DuckDBConnection;
  statements: string[];
  close(): Promise<void>;
}

function arrowType(duck: string): DataType {
  const t = duck.toUpperCase();
  const dec = /^DECIMAL\((\d+),(\d+)\)$/.exec(t);
  if (dec) return new Decimal(Number(dec[2]), Number(dec[1]), 128);
  switch (t) {
    case 'BIGINT':
      return new Int64();
    case 'INTEGER':
      return new Int32();
    case 'DOUBLE':
      return new Float64();
    case 'BOOLEAN':
      return new Bool();
    case 'DATE':
      return new DateDay();
    case 'TIMESTAMP':
      return new TimestampMillisecond();
    case 'TIMESTAMP WITH TIME ZONE':
      return new TimestampMillisecond('UTC');
    default:
      return new Utf8();
  }
}

function toInstant(v: string, date: boolean): number {
  return Date.parse(date ? `${v}T00:00:00Z` : /[+-]\d\d(:?\d\d)?$|Z$/i.test(v) ? v.replace(' ', 'T').replace(/([+-]\d\d)$/, '$1:00') : `${v.replace(' ', 'T')}Z`);
}

function decimalVector(values: unknown[], type: Decimal): Vector {
  const words = new Uint32Array(values.length * 4);
  const nullBitmap = new Uint8Array(Math.ceil(values.length / 8));
  let nullCount = 0;
  values.forEach((v, i) => {
    if (v === null) return void nullCount++;
    nullBitmap[i >> 3]! |= 1 << (i & 7);
    const [whole, frac = ''] = String(v).replace('-', '').split('.');
    let n = BigInt(whole! + frac.padEnd(type.scale, '0').slice(0, type.scale));
    if (String(v).startsWith('-')) n = (1n << 128n) - n;
    for (let w = 0; w < 4; w++) words[i * 4 + w] = Number((n >> BigInt(32 * w)) & 0xffffffffn);
  });
  return makeVector(makeData({ type, length: values.length, nullCount, nullBitmap, data: words }));
}

function vectorOf(values: unknown[], type: DataType): Vector {
  if (type instanceof Decimal) return decimalVector(values, type);
  if (type instanceof Int64) return vectorFromArray(values.map((v) => (v === null ? null : BigInt(String(v)))), type);
  if (type instanceof DateDay) return vectorFromArray(values.map((v) => (v === null ? null : new Date(toInstant(String(v), true)))), type);
  if (type instanceof TimestampMillisecond) return vectorFromArray(values.map((v) => (v === null ? null : toInstant(String(v), false))), type);
  if (type instanceof Utf8) return vectorFromArray(values.map((v) => (v === null ? null : typeof v === 'string' ? v : JSON.stringify(v))), type);
  return vectorFromArray(values as never[], type);
}

export async function startFakeWarehouse(token = 'wh-token-cc-77'): Promise<FakeWarehouse> {
  const instance = await DuckDBInstance.create(':memory:');
  const db = await instance.connect();
  const statements: string[] = [];
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    let sql: string;
    if (req.url === '/api/v2/statements') {
      if (req.headers.authorization !== `Bearer ${token}`) return void (res.writeHead(401, { 'content-type': 'application/json' }), res.end(JSON.stringify({ message: 'Invalid OAuth access token.', code: '390303' })));
      sql = JSON.parse(Buffer.concat(chunks).toString()).statement;
    } else if (req.url === '/api/2.0/sql/query') {
      if (req.headers['x-api-key'] !== token) return void (res.writeHead(403, { 'content-type': 'application/json' }), res.end(JSON.stringify({ error_code: 'PERMISSION_DENIED', message: 'Invalid access token.' })));
      sql = JSON.parse(Buffer.concat(chunks).toString()).query;
    } else {
      return void (res.writeHead(404), res.end());
    }
    statements.push(sql);
    let result;
    try {
      result = await db.stream(sql);
    } catch (e) {
      res.writeHead(422, { 'content-type': 'application/json' });
      return void res.end(JSON.stringify({ message: (e as Error).message.split('\n')[0] }));
    }
    const names = result.columnNames();
    const types = result.columnTypes().map((t) => arrowType(t.toString()));
    const schema = new Schema(names.map((n, i) => new Field(n, types[i]!, true)));
    res.writeHead(200, { 'content-type': 'application/vnd.apache.arrow.stream' });
    const writer = new RecordBatchStreamWriter();
    const stream = writer.toNodeStream();
    stream.pipe(res);
    const batchOf = (rows: unknown[][]) => {
      const children = names.map((_, i) => vectorOf(rows.map((r) => r[i] ?? null), types[i]!).data[0]!);
      return new RecordBatch(schema, makeData({ type: new Struct(schema.fields), length: rows.length, nullCount: 0, children }));
    };
    let wrote = false;
    for await (const rows of result.yieldRowsJson()) {
      writer.write(batchOf(rows as unknown[][]));
      wrote = true;
    }
    if (!wrote) writer.write(batchOf([]));
    writer.finish();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    token,
    db,
    statements,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => {
          db.closeSync();
          instance.closeSync();
          resolve();
        });
      }),
  };
}
