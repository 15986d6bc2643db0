/**
 * The sync engine: one connector's tables, each in its own DuckDB transaction with its CDC state
 * row (docs/decisions.md "CDC" transitions), so a sync that fails midway leaves the target table
 * and the state as they were and the next sync neither loses nor duplicates rows.
 *
 * Types with a bulk path (`readCsv`, postgres) stream CSV through a named pipe into DuckDB's own
 * CSV reader (`INSERT … SELECT … FROM read_csv(pipe)`): no row passes through JS, and the greatest
 * cursor value is DuckDB's `max()` over the loaded rows. The others stream batches from `read`
 * into `bulkLoad` (DuckDB's appender). Either way memory stays bounded (the pipe's buffer, one
 * batch) whatever the table size; under the transaction DuckDB writes large appends
 * optimistically to the database file, not to memory.
 *
 * On a ClickHouse environment the rows land on the target instead (sync-target.ts); the history
 * and CDC state stay here.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import {
  badRequest,
  errorMessage,
  qualified,
  quoteIdent,
  WAREHOUSE_TARGET_SERVICE,
  type BulkColumn,
  type CdcMode,
  type CDCSyncResult,
  type ConnectorBatch,
  type ConnectorCsvSource,
  type ConnectorRuntime,
  type DbConnection,
  type FireableHook,
  type Logger,
  type PluginContext,
  type SyncContext,
  type TABLE_SYNCED,
  type WarehouseTargetService,
} from '../../sdk/index.js';
import type { ConnectorConfig, TableConfig } from './config.js';
import type { ConnectorSettings } from './settings.js';
import type { TypeRegistry } from './registry.js';
import { scratchName, SYNC_SCRATCH } from './scratch.js';
import type { CdcStateStore } from './state.js';
import { syncTableToTarget, TARGET_CDC_MODES, targetWatermark } from './sync-target.js';

/** Rows per batch asked of a reader. */
export const BATCH_ROWS = 10_000;

/** Where the named pipes of bulk syncs live: inside the project, the folder DuckDB's sandbox reads. */
const PIPE_DIR = SYNC_SCRATCH;
const TYPE_NAME = /^[A-Za-z][A-Za-z0-9_ ,()[\]]*$/;

/** A DuckDB type name from a type, checked before it goes into DDL. */
function typeSql(column: { name: string; type: string }): string {
  if (!TYPE_NAME.test(column.type)) throw new Error(`column '${column.name}': '${column.type}' is not a DuckDB type name`);
  return column.type;
}

export interface SyncOptions {
  /** Only these tables (source names as configured). */
  tables?: string[];
  /** `cli`, `api`, `schedule`, `script:<path>`. */
  trigger: string;
  signal?: AbortSignal;
  /** Called after each table. */
  onTable?: (result: CDCSyncResult) => void;
}

/** The target table of a source table: its bare name (`public.orders` → `orders`). */
export function targetTableName(source: string): string {
  return source.includes('.') ? source.slice(source.lastIndexOf('.') + 1) : source;
}

/** A watermark as stored (VARCHAR): the source's own text where the reader gives text. */
function watermarkText(v: unknown): string | null {
  if (v === null || v === undefined) return null;
  if (v instanceof Date) return v.toISOString();
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

/**
 * A writer still blocked opening the pipe (DuckDB failed before it opened its end) gets a reader
 * that closes at once, so its open completes and its next write fails instead of waiting forever.
 */
function releaseWaitingWriter(pipe: string): void {
  try {
    fs.closeSync(fs.openSync(pipe, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK));
  } catch {
    // the pipe is gone: nothing waits on it
  }
}

export class SyncEngine {
  constructor(
    private readonly ctx: Pick<PluginContext, 'db' | 'project' | 'signal' | 'services'>,
    private readonly registry: TypeRegistry,
    private readonly settings: ConnectorSettings,
    private readonly state: CdcStateStore,
    private readonly onSync: FireableHook<typeof TABLE_SYNCED>,
    private readonly log: Logger,
  ) {}

  runtime(): ConnectorRuntime {
    return { project: this.ctx.project, db: this.ctx.db };
  }

  /** The type and validated, expanded parameters of a connector's connection. */
  resolve(connector: ConnectorConfig): { type: ReturnType<TypeRegistry['get']>; config: Record<string, unknown> } {
    const type = this.registry.get(connector.type);
    const connection = this.settings.connection(connector.connection);
    if (!connection) {
      throw badRequest('invalid_project_yml', `project.yml: connector '${connector.name}' names connection '${connector.connection}', which 'connections' does not hold`, {
        field: `connectors.${connector.name}.connection`,
      });
    }
    const written = connection.written;
    return { type, config: this.registry.validate(connector.type, this.settings.expand(written)) };
  }

  /** Syncs every table of a connector (or `options.tables`), one transaction each. */
  async syncConnector(name: string, options: SyncOptions): Promise<CDCSyncResult[]> {
    const connector = this.settings.connector(name);
    const started = new Date();
    const t0 = performance.now();
    const tables = options.tables ? connector.tables.filter((t) => options.tables!.includes(t.name)) : connector.tables;
    // On a ClickHouse environment the rows land on the target, where its models read them.
    const warehouse = this.ctx.services.find(WAREHOUSE_TARGET_SERVICE);
    const onTarget = warehouse?.config() ? warehouse : null;
    for (const t of tables) if (onTarget && !TARGET_CDC_MODES.includes(t.cdc_mode as CdcMode)) onTarget.assertLocalOnly(`A connector sync with cdc_mode '${t.cdc_mode}' (table '${t.name}')`);
    const results: CDCSyncResult[] = [];
    let setupError: string | null = null;
    await this.ctx.db.exclusive(async () => {
      let resolved: ReturnType<SyncEngine['resolve']>;
      try {
        resolved = this.resolve(connector);
      } catch (e) {
        setupError = errorMessage(e);
        for (const t of tables) {
          const r = this.result(t, 'error', 0, 0, null, null, setupError);
          results.push(r);
          options.onTable?.(r);
        }
        return;
      }
      for (const table of tables) {
        const r = await this.syncTable(connector, table, resolved.type.type, resolved.config, options.signal ?? this.ctx.signal, onTarget);
        results.push(r);
        options.onTable?.(r);
      }
    });
    const failed = results.filter((r) => r.status === 'error');
    await this.state.recordSync({
      connector: name,
      startedAt: started,
      durationMs: Math.round(performance.now() - t0),
      status: failed.length ? 'error' : 'success',
      tables: results.length,
      rows: results.reduce((n, r) => n + r.rows_synced, 0),
      error: failed.length ? failed.map((r) => `${r.table}: ${r.error}`).join('; ') : null,
      trigger: options.trigger,
    });
    return results;
  }

  private result(t: TableConfig, status: CDCSyncResult['status'], rows: number, ms: number, before: string | null, after: string | null, error: string | null): CDCSyncResult {
    return { table: t.name, status, rows_synced: rows, duration_ms: Math.round(ms), cdc_mode: t.cdc_mode as CdcMode, watermark_before: before, watermark_after: after, error };
  }

  private async syncTable(
    connector: ConnectorConfig,
    table: TableConfig,
    type: import('../../sdk/index.js').ConnectorType,
    config: Record<string, unknown>,
    signal: AbortSignal,
    onTarget: WarehouseTargetService | null,
  ): Promise<CDCSyncResult> {
    const t0 = performance.now();
    const mode = table.cdc_mode as CdcMode;
    const supported = type.cdcModes ?? ['full_refresh'];
    const fire = async (r: CDCSyncResult) => {
      const sync: SyncContext = { connector: connector.name, table: table.name, cdcMode: mode, signal, status: r.status, rowsSynced: r.rows_synced, ...(r.error ? { error: r.error } : {}) };
      try {
        await this.onSync.promise(sync);
      } catch (e) {
        this.log.warn(`onSync tap failed for ${connector.name}.${table.name}: ${errorMessage(e)}`);
      }
      return r;
    };
    if (!supported.includes(mode)) {
      return fire(this.result(table, 'error', 0, performance.now() - t0, null, null, `cdc_mode '${mode}' is not supported by type '${type.type}' (supported: ${supported.join(', ')})`));
    }
    if (mode === 'high_watermark' && !table.cdc_column) {
      return fire(this.result(table, 'error', 0, performance.now() - t0, null, null, 'high_watermark needs cdc_column'));
    }
    const schema = connector.target_schema;
    const target = targetTableName(table.name);
    const conn = await this.ctx.db.connect();
    const abort = () => conn.interrupt();
    signal.addEventListener('abort', abort, { once: true });
    let before: string | null = null;
    try {
      if (onTarget) {
        const into = { schema, table: target, mode, cdcColumn: mode === 'high_watermark' ? table.cdc_column! : null };
        // A reset (no state row in this mode) is a full re-sync, as on the file.
        const prior = await this.state.get(conn, connector.name, table.name);
        before = prior?.cdc_mode === mode ? await targetWatermark(onTarget, into) : null;
        const request = { table: table.name, ...(table.source_query ? { sourceQuery: table.source_query } : {}), ...(into.cdcColumn ? { cursor: { column: into.cdcColumn, after: before } } : {}), batchRows: BATCH_ROWS, signal, runtime: this.runtime() };
        const { rows, watermark } = await syncTableToTarget(onTarget, conn, type, config, request, into, before);
        await conn.transaction((tx) => this.state.put(tx, { connector: connector.name, table: table.name, mode, watermark, mtime: null, rows }));
        return fire(this.result(table, 'success', rows, performance.now() - t0, before, watermark, null));
      }
      const prior = await this.state.get(conn, connector.name, table.name);
      // A state row from another mode (the table's mode changed) counts as no state.
      const state = prior && prior.cdc_mode === mode ? prior : undefined;
      before = mode === 'high_watermark' ? (state?.watermark_value ?? null) : null;
      let mtime: number | null = null;
      if (mode === 'file_tracking') {
        mtime = (await type.modifiedTime?.(config, table.name, signal, this.runtime())) ?? null;
        const exists = await this.tableExists(conn, schema, target);
        if (mtime !== null && state?.file_mtime === mtime && exists) {
          await conn.transaction((tx) => this.state.put(tx, { connector: connector.name, table: table.name, mode, watermark: null, mtime, rows: 0 }));
          return fire(this.result(table, 'skipped', 0, performance.now() - t0, null, null, null));
        }
      }
      const request = {
        table: table.name,
        ...(table.source_query ? { sourceQuery: table.source_query } : {}),
        ...(mode === 'high_watermark' ? { cursor: { column: table.cdc_column!, after: before } } : {}),
        batchRows: BATCH_ROWS,
        signal,
        runtime: this.runtime(),
      };
      // High watermark without a stored watermark (first sync, or after a reset) is a full re-sync:
      // the target is replaced, so a reset never duplicates rows.
      const into = { schema, table: target, replace: mode !== 'high_watermark' || before === null, cdcColumn: mode === 'high_watermark' ? table.cdc_column! : null };
      const select = type.readSql?.(config, request) ?? null;
      const csv = !select && type.readCsv ? await type.readCsv(config, request) : null;
      const { rows, watermark } = await (async () => {
        try {
          return await conn.transaction(async (tx) => {
            const loaded = select ? await this.loadSelect(tx, select, into) : csv ? await this.loadCsv(tx, csv, into) : await this.load(tx, type.read(config, request), into);
            const after = mode === 'high_watermark' ? (loaded.lastCursor ?? before) : null;
            await this.state.put(tx, { connector: connector.name, table: table.name, mode, watermark: after, mtime, rows: loaded.rows });
            return { rows: loaded.rows, watermark: after };
          });
        } finally {
          await csv?.close();
        }
      })();
      return fire(this.result(table, 'success', rows, performance.now() - t0, before, watermark, null));
    } catch (e) {
      const message = signal.aborted ? 'sync cancelled' : errorMessage(e);
      this.log.warn(`sync ${connector.name}.${table.name} failed: ${message}`);
      return fire(this.result(table, 'error', 0, performance.now() - t0, before, before, message));
    } finally {
      signal.removeEventListener('abort', abort);
      conn.close();
    }
  }

  /** Read on `c`: inside a transaction, as that transaction sees the catalog. */
  private async tableExists(c: DbConnection, schema: string, table: string): Promise<boolean> {
    return (await c.catalog.kind(schema, table)) === 'table';
  }

  /**
   * How rows go into the target: `replace` (full refresh, file tracking, a first high-watermark
   * sync), `create` (absent), or `append` to the existing table, with the source's new columns added.
   */
  private async targetMode(tx: DbConnection, columns: ReadonlyArray<{ name: string; type: string }>, target: { schema: string; table: string; replace: boolean }): Promise<'replace' | 'create' | 'append'> {
    if (target.replace) return 'replace';
    if (!(await this.tableExists(tx, target.schema, target.table))) return 'create';
    const existing = (await tx.catalog.columns(target.schema, target.table)).map((c) => c.name);
    for (const c of columns) {
      if (!existing.includes(c.name)) await tx.run(`ALTER TABLE ${qualified(target.schema, target.table)} ADD COLUMN ${quoteIdent(c.name)} ${typeSql(c)}`);
    }
    return 'append';
  }

  /**
   * The bulk path: the source writes CSV into a named pipe while DuckDB's CSV reader parses it
   * into `schema.table` on `tx` (one INSERT … SELECT). A failure on either side ends the other
   * (the writer's end closed, or the pipe opened and closed for a writer still waiting), and the
   * error rolls the transaction back.
   */
  private async loadCsv(
    tx: DbConnection,
    source: ConnectorCsvSource,
    target: { schema: string; table: string; replace: boolean; cdcColumn: string | null },
  ): Promise<{ rows: number; lastCursor: string | null }> {
    const columns = source.columns;
    const name = await this.prepareTarget(tx, columns, target);
    const db = this.ctx.db;
    const dir = this.ctx.project.resolve(PIPE_DIR);
    fs.mkdirSync(dir, { recursive: true });
    // Owned by this process: a pipe left by a kill is removed at the next start (scratch.ts).
    const pipe = path.join(dir, scratchName('.csv'));
    await promisify(execFile)('mkfifo', ['-m', '600', pipe]);
    try {
      const csvColumns = `{${columns.map((c) => `${db.literal(c.name)}: ${db.literal(typeSql({ name: c.name, type: c.csvType ?? c.type }))}`).join(', ')}}`;
      const select = columns.map((c) => (c.fromCsv ? `${c.fromCsv(quoteIdent(c.name))} AS ${quoteIdent(c.name)}` : quoteIdent(c.name))).join(', ');
      const insert = tx.value<bigint | number>(
        `INSERT INTO ${name} (${columns.map((c) => quoteIdent(c.name)).join(', ')}) SELECT ${select} FROM read_csv(${db.literal(pipe)}, header = false, auto_detect = false, delim = ',', quote = '"', escape = '"', allow_quoted_nulls = false, columns = ${csvColumns})`,
      );
      const sink = fs.createWriteStream(pipe, { highWaterMark: 1024 * 1024 });
      sink.on('error', () => undefined); // reported through writeTo
      let feedError: unknown = null;
      const feeding = source.writeTo(sink).catch((e) => {
        feedError = e;
        // DuckDB reads to the end of what arrived, then the rollback drops it.
        sink.destroy();
      });
      let inserted: bigint | number | null = null;
      let insertError: unknown = null;
      try {
        inserted = await insert;
      } catch (e) {
        insertError = e;
        releaseWaitingWriter(pipe);
      }
      await feeding;
      // The source's own failure is the cause; a broken pipe only follows DuckDB's.
      if (feedError && (feedError as { code?: string }).code !== 'EPIPE') throw feedError;
      if (insertError) throw insertError;
      if (feedError) throw feedError;
      const rows = Number(inserted ?? 0);
      return { rows, lastCursor: await this.greatestCursor(tx, name, rows, target.cdcColumn) };
    } finally {
      fs.rmSync(pipe, { force: true });
    }
  }

  /** Creates (or replaces) the target for `columns` unless rows are appended to it; returns its qualified name. */
  private async prepareTarget(tx: DbConnection, columns: ReadonlyArray<{ name: string; type: string }>, target: { schema: string; table: string; replace: boolean; cdcColumn: string | null }): Promise<string> {
    if (target.cdcColumn && !columns.some((c) => c.name === target.cdcColumn)) {
      throw new Error(`cdc_column '${target.cdcColumn}' is not a column of the source (columns: ${columns.map((c) => c.name).join(', ')})`);
    }
    const name = qualified(target.schema, target.table);
    const mode = await this.targetMode(tx, columns, target);
    if (mode !== 'append') {
      await tx.run(`CREATE SCHEMA IF NOT EXISTS ${quoteIdent(target.schema)}`);
      const body = columns.map((c) => `${quoteIdent(c.name)} ${typeSql(c)}`).join(', ');
      await tx.run(`CREATE ${mode === 'replace' ? 'OR REPLACE TABLE' : 'TABLE IF NOT EXISTS'} ${name} (${body})`);
    }
    return name;
  }

  /** The loaded rows are all above the previous watermark, so the table's greatest cursor value is theirs. */
  private async greatestCursor(tx: DbConnection, name: string, rows: number, cdcColumn: string | null): Promise<string | null> {
    if (!cdcColumn || rows === 0) return null;
    return (await tx.value<string>(`SELECT max(${quoteIdent(cdcColumn)})::VARCHAR FROM ${name}`)) ?? null;
  }

  /**
   * The engine's own path (`readSql`): the type's SELECT runs as one `INSERT … SELECT` on `tx`,
   * on a worker thread like any query. Nothing is converted in JS, so the server's event loop
   * stays free for interactive requests however many rows arrive (issue 34 item 5), and every
   * type DuckDB reads (TIME, INTERVAL, nested) arrives as read.
   */
  private async loadSelect(
    tx: DbConnection,
    select: string,
    target: { schema: string; table: string; replace: boolean; cdcColumn: string | null },
  ): Promise<{ rows: number; lastCursor: string | null }> {
    const described = await tx.all<{ column_name: string; column_type: string }>(`DESCRIBE ${select}`);
    const columns = described.map((d) => ({ name: String(d.column_name), type: String(d.column_type) }));
    const name = await this.prepareTarget(tx, columns, target);
    const list = columns.map((c) => quoteIdent(c.name)).join(', ');
    const rows = Number((await tx.value<bigint | number>(`INSERT INTO ${name} (${list}) SELECT ${list} FROM (${select})`)) ?? 0);
    return { rows, lastCursor: await this.greatestCursor(tx, name, rows, target.cdcColumn) };
  }

  /**
   * Streams the reader's batches into `schema.table` on `tx`: replaced (full refresh, file
   * tracking) or appended (high watermark; created on the first sync, new source columns added).
   * Returns the rows loaded and the last non-null cursor value (readers order by the cursor
   * column, so that is the greatest).
   */
  private async load(
    tx: DbConnection,
    reader: AsyncIterable<ConnectorBatch>,
    target: { schema: string; table: string; replace: boolean; cdcColumn: string | null },
  ): Promise<{ rows: number; lastCursor: string | null }> {
    const it = reader[Symbol.asyncIterator]();
    const first = await it.next();
    if (first.done) throw new Error('the source returned no result (not even its columns)');
    const columns: BulkColumn[] = first.value.columns.map((c) => ({ name: c.name, type: c.type }));
    let cursorIndex = -1;
    if (target.cdcColumn) {
      cursorIndex = columns.findIndex((c) => c.name === target.cdcColumn);
      if (cursorIndex < 0) throw new Error(`cdc_column '${target.cdcColumn}' is not a column of the source (columns: ${columns.map((c) => c.name).join(', ')})`);
    }
    const mode = await this.targetMode(tx, columns, target);
    let lastCursor: string | null = null;
    const result = await tx.bulkLoad({ schema: target.schema, table: target.table, mode, columns }, async (writer) => {
      // The target's column order may differ from the source's (append to an older table).
      const order = writer.columns.map((name) => columns.findIndex((c) => c.name === name));
      const identity = order.every((v, i) => v === i) && order.length === columns.length;
      const push = async (batch: ConnectorBatch) => {
        if (batch.rows.length === 0) return;
        if (cursorIndex >= 0) {
          for (let i = batch.rows.length - 1; i >= 0; i--) {
            const v = batch.rows[i]![cursorIndex];
            if (v !== null && v !== undefined) {
              lastCursor = watermarkText(v);
              break;
            }
          }
        }
        await writer.appendRows(identity ? batch.rows : batch.rows.map((row) => order.map((i) => (i < 0 ? null : row[i]))));
      };
      await push(first.value);
      for (;;) {
        const next = await it.next();
        if (next.done) break;
        await push(next.value);
      }
    });
    return { rows: result.rows, lastCursor };
  }
}
