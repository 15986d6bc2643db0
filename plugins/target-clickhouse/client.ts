/**
 * The ClickHouse implementation of the warehouse-target port, over the HTTP interface with
 * `@clickhouse/client` (loaded on first use, never at start-up). Checked against Debian's
 * clickhouse-server 18.16: the client's query, command and insert work with it as long as only
 * formats that version knows are asked for (JSONCompact, JSONEachRow; not
 * JSONCompactEachRowWithNamesAndTypes, which is 21.x).
 *
 * Every statement carries `join_use_nulls=1` (an outer join's missing side is NULL, as in DuckDB,
 * not the type's default) and `insert_distributed_sync=1` (an INSERT into a Distributed table
 * returns when every shard holds its rows, so the next model reads them).
 */
import crypto from 'node:crypto';
import { Readable } from 'node:stream';
import type { ClickHouseClient } from '@clickhouse/client';
import {
  badRequest,
  batchesOf,
  errorMessage,
  metricsOfRow,
  type CatalogColumn,
  type CatalogRelation,
  type RelationMetrics,
  type TabularResult,
  type TargetCapabilities,
  type TargetConfig,
  type TargetQueryOptions,
  type WarehouseTarget,
} from '../../sdk/index.js';
import { LOCAL } from './names.js';

/** Settings every dp statement runs with (see the file comment). */
export const BASE_SETTINGS = { join_use_nulls: 1, insert_distributed_sync: 1 } as const;

/** A ClickHouse identifier: backquoted, backslash and backquote escaped. */
export function chIdent(name: string): string {
  return '`' + name.replace(/\\/g, '\\\\').replace(/`/g, '\\`') + '`';
}

/** A ClickHouse string literal: single-quoted, backslash and quote escaped (ClickHouse reads backslash escapes in literals). */
export function chLiteral(value: string): string {
  return "'" + value.replace(/\\/g, '\\\\').replace(/'/g, "\\'") + "'";
}

/** What a server of this version runs (release notes of 20.1, 21.8, 21.12, 23.1). */
export function capabilitiesOf(version: string): TargetCapabilities {
  const [major = 0, minor = 0] = version.split('.').map((n) => Number(n) || 0);
  const atLeast = (a: number, b: number) => major > a || (major === a && minor >= b);
  return {
    version,
    windowFunctions: atLeast(21, 12),
    ctes: atLeast(20, 1),
    groupByAll: atLeast(23, 1),
    exchangeTables: atLeast(21, 8),
    transactions: false,
  };
}

/** A server error's first line, without the server's stack trace. */
export function serverMessage(e: unknown): string {
  return errorMessage(e).split('\n')[0].replace(/, e\.what\(\) = DB::Exception$/, '').replace(/^Code: \d+, e\.displayText\(\) = DB::Exception: /, '');
}

export class ClickHouseTarget implements WarehouseTarget {
  readonly dialect = 'clickhouse' as const;
  readonly database: string;
  readonly cluster: string | null;
  /** The server's origin (scheme, host, port), never credentials a url might carry. */
  readonly url: string;
  private caps: Promise<TargetCapabilities> | null = null;

  private constructor(
    private readonly client: ClickHouseClient,
    config: TargetConfig,
  ) {
    this.database = config.database ?? 'default';
    this.cluster = config.cluster ?? null;
    this.url = new URL(config.url ?? 'http://localhost:8123').origin;
  }

  /** Opens the client (the package is imported here, on first use); `defaultDatabase` is where unqualified names resolve (the server's `default` when not given). */
  static async open(config: TargetConfig, defaultDatabase?: string): Promise<ClickHouseTarget> {
    if (!config.url) throw badRequest('invalid_target', "A clickhouse target needs 'url' (the HTTP interface of any node, e.g. http://127.0.0.1:8123)");
    const { createClient, ClickHouseLogLevel } = await import('@clickhouse/client');
    const client = createClient({
      url: config.url,
      username: config.user ?? 'default',
      password: config.password ?? '',
      // The server may be 18.16: no session, no compression negotiation surprises, plain settings only.
      compression: { request: false, response: false },
      log: { level: ClickHouseLogLevel.OFF },
      // A socket idle past the server's keep-alive (3 s before 23.11) is closed there: on a busy
      // event loop the client's idle timer fires late, so stale sockets are dropped when taken
      // instead ("socket hang up" on the next statement).
      keep_alive: { eagerly_destroy_stale_sockets: true },
      request_timeout: 3_600_000,
      ...(defaultDatabase ? { database: defaultDatabase } : {}),
    });
    return new ClickHouseTarget(client, config);
  }

  capabilities(): Promise<TargetCapabilities> {
    this.caps ??= this.query('SELECT version() AS v').then((r) => capabilitiesOf(String(r.rows[0]?.[0] ?? '0')));
    return this.caps;
  }

  private settings(options?: TargetQueryOptions) {
    return { ...BASE_SETTINGS, ...(options?.settings ?? {}) } as Record<string, string | number>;
  }

  /** Runs fn with a query id; an abort of the caller's signal kills the query on the server. */
  private async withId<T>(options: TargetQueryOptions | undefined, fn: (queryId: string) => Promise<T>): Promise<T> {
    const queryId = options?.queryId ?? `dp_${crypto.randomUUID()}`;
    const signal = options?.signal;
    if (signal?.aborted) throw badRequest('query_cancelled', 'The query was cancelled before it started');
    const kill = () => void this.interrupt(queryId).catch(() => {});
    signal?.addEventListener('abort', kill);
    try {
      return await fn(queryId);
    } catch (e) {
      throw badRequest('target_error', `ClickHouse: ${serverMessage(e)}`);
    } finally {
      signal?.removeEventListener('abort', kill);
    }
  }

  query(sql: string, options?: TargetQueryOptions): Promise<TabularResult> {
    return this.withId(options, async (query_id) => {
      const rs = await this.client.query({ query: sql, format: 'JSONCompact', query_id, clickhouse_settings: this.settings(options) as never, ...(options?.params ? { query_params: options.params } : {}) });
      const body = (await rs.json()) as unknown as { meta: Array<{ name: string; type: string }>; data: unknown[][] };
      return { columns: body.meta.map((m) => m.name), column_types: body.meta.map((m) => m.type), rows: body.data };
    });
  }

  async stream(sql: string, options?: TargetQueryOptions) {
    const described = await this.describe(sql, options);
    const columns = described.map((d) => d.name);
    const rs = await this.withId(options, (query_id) =>
      this.client.query({ query: sql, format: 'JSONEachRow', query_id, clickhouse_settings: this.settings(options) as never, ...(options?.params ? { query_params: options.params } : {}) }),
    );
    const chunks = (async function* () {
      for await (const rows of rs.stream()) {
        yield (rows as Array<{ json(): Record<string, unknown> }>).map((r) => {
          const o = r.json();
          return columns.map((c) => o[c]);
        });
      }
    })();
    return { columns, column_types: described.map((d) => d.type), chunks };
  }

  command(sql: string, options?: TargetQueryOptions): Promise<void> {
    return this.withId(options, async (query_id) => {
      await this.client.command({ query: sql, query_id, clickhouse_settings: this.settings(options) as never, ...(options?.params ? { query_params: options.params } : {}) });
    });
  }

  /** The columns a SELECT returns, as the server plans it (`DESCRIBE (SELECT ...)`): the verification of a transpiled body. */
  async describe(select: string, options?: TargetQueryOptions): Promise<Array<{ name: string; type: string }>> {
    const r = await this.query(`DESCRIBE (${select})`, options);
    return r.rows.map((row) => ({ name: String(row[0]), type: String(row[1]) }));
  }

  /** All rows in one INSERT ... FORMAT JSONEachRow request, streamed: one HTTP request per load, not one per row or batch. */
  async bulkInsert(table: { schema: string; name: string }, columns: string[], rows: AsyncIterable<unknown[][]> | unknown[][]): Promise<{ rows: number }> {
    let count = 0;
    const objects = Readable.from(
      (async function* () {
        for await (const batch of batchesOf(rows)) {
          for (const row of batch) {
            const o: Record<string, unknown> = {};
            columns.forEach((c, i) => (o[c] = jsonValue(row[i])));
            count++;
            yield o;
          }
        }
      })(),
    );
    await this.withId(undefined, async (query_id) => {
      await this.client.insert({
        table: `${chIdent(table.schema)}.${chIdent(table.name)}`,
        values: objects,
        format: 'JSONEachRow',
        columns: columns as [string, ...string[]],
        query_id,
        clickhouse_settings: this.settings() as never,
      });
    });
    return { rows: count };
  }

  async interrupt(queryId: string): Promise<void> {
    await this.client.command({ query: `KILL QUERY WHERE query_id = ${chLiteral(queryId)} ASYNC` });
  }

  /** One aggregate pass on the server, read-only: `count(col)` skips NULLs and `uniqExact` counts distinct non-NULL values, as DuckDB's `count(DISTINCT col)`. */
  async profile(relation: { schema: string; name: string }, columns: string[]): Promise<RelationMetrics> {
    const aggregates = ['count()', ...columns.flatMap((c) => [`count(${chIdent(c)})`, `uniqExact(${chIdent(c)})`])];
    const r = await this.query(`SELECT ${aggregates.join(', ')} FROM ${chIdent(relation.schema)}.${chIdent(relation.name)}`, { settings: { readonly: 2 } });
    return metricsOfRow(r.rows[0] ?? [], columns);
  }

  async relations(opts?: { schema?: string }): Promise<CatalogRelation[]> {
    const where = opts?.schema ? `database = ${chLiteral(opts.schema)}` : `database NOT IN ('system')`;
    const r = await this.query(
      `SELECT database, name, engine FROM system.tables WHERE ${where} AND NOT startsWith(name, '.inner.') AND position(name, '__dp_') = 0 ORDER BY database, name`,
    );
    const rows = await tableRowCounts(this).catch(() => null);
    return r.rows.map(([schema, name, engine]) => {
      const kind = engine === 'View' || engine === 'MaterializedView' ? ('view' as const) : ('table' as const);
      // A MergeTree table without active parts holds no rows; another engine keeps no part counts (unknown).
      const estimatedRows = kind === 'table' && rows ? (rows.get(`${schema}.${name}`.toLowerCase()) ?? (/MergeTree$/.test(String(engine)) ? 0 : undefined)) : undefined;
      return { schema: String(schema), name: String(name), kind, ...(estimatedRows === undefined ? {} : { estimatedRows }) };
    });
  }

  async columns(opts?: { schema?: string; table?: string }): Promise<CatalogColumn[]> {
    const where = [opts?.schema ? `database = ${chLiteral(opts.schema)}` : `database NOT IN ('system')`, opts?.table ? `table = ${chLiteral(opts.table)}` : '', `position(table, '__dp_') = 0`]
      .filter(Boolean)
      .join(' AND ');
    // system.columns has no position column in 18.16: the order of rows is the table's column order.
    const r = await this.query(`SELECT database, table, name, type FROM system.columns WHERE ${where}`);
    const ordinal = new Map<string, number>();
    return r.rows.map(([schema, table, name, type]) => {
      const key = `${schema}.${table}`;
      const n = (ordinal.get(key) ?? 0) + 1;
      ordinal.set(key, n);
      return { schema: String(schema), table: String(table), name: String(name), type: String(type), nullable: String(type).startsWith('Nullable('), ordinal: n };
    });
  }

  ident = chIdent;
  literal = chLiteral;

  close(): Promise<void> {
    return this.client.close();
  }
}

/** A value as JSONEachRow takes it: bigint as a string (JSON has none), dates as ISO text without the zone. */
function jsonValue(v: unknown): unknown {
  if (typeof v === 'bigint') return v.toString();
  if (v instanceof Date) return v.toISOString().replace('T', ' ').replace('Z', '');
  if (v !== null && typeof v === 'object' && 'toString' in v && !Array.isArray(v)) return String(v);
  return v;
}

/** A Distributed table over `system.<table>` of every node of the cluster (in the target's database). */
export async function systemTableEverywhere(target: ClickHouseTarget, table: string): Promise<string> {
  const name = `${chIdent(target.database)}.${chIdent(`__dp_${table}`)}`;
  await target.command(`CREATE DATABASE IF NOT EXISTS ${chIdent(target.database)}`);
  await target.command(`CREATE TABLE IF NOT EXISTS ${name} AS system.${table} ENGINE = Distributed(${chIdent(target.cluster!)}, system, ${table})`);
  return name;
}

/**
 * Rows of every MergeTree table by lower-case `database.table`, summed over the active parts of
 * every shard (what the server keeps; nothing is counted). A model's Distributed table gets the
 * rows of its local tables (`<name>__dp_local`).
 */
export async function tableRowCounts(target: ClickHouseTarget): Promise<Map<string, number>> {
  const parts = target.cluster ? await systemTableEverywhere(target, 'parts') : 'system.parts';
  const r = await target.query(`SELECT database, table, sum(rows) FROM ${parts} WHERE active AND database != ${chLiteral('system')} GROUP BY database, table`);
  const out = new Map<string, number>();
  for (const [database, table, rows] of r.rows) {
    const key = `${String(database)}.${String(table).replace(new RegExp(`${LOCAL}$`), '')}`.toLowerCase();
    out.set(key, (out.get(key) ?? 0) + Number(rows));
  }
  return out;
}
