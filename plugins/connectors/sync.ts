/**
 * The sync engine: one connector's tables, each in its own DuckDB transaction with its CDC state
 * row (docs/decisions.md "CDC" transitions), so a sync that fails midway leaves the target table
 * and the state as they were and the next sync neither loses nor duplicates rows.
 *
 * Rows stream from the type's reader in batches into `bulkLoad` (DuckDB's appender): memory stays
 * bounded by one batch whatever the table size. Under the transaction DuckDB writes large appends
 * optimistically to the database file, not to memory.
 */
import {
  badRequest,
  errorMessage,
  quoteIdent,
  qualified,
  type BulkColumn,
  type CDCSyncResult,
  type CdcMode,
  type ConnectorBatch,
  type ConnectorRuntime,
  type DbConnection,
  type FireableHook,
  type Logger,
  type PluginContext,
  type SyncContext,
} from '../../sdk/index.js';
import type { ConnectorConfig, TableConfig } from './config.js';
import type { ProjectFile } from './project-file.js';
import type { TypeRegistry } from './registry.js';
import type { CdcStateStore } from './state.js';

/** Rows per batch asked of a reader. */
export const BATCH_ROWS = 10_000;

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

export class SyncEngine {
  constructor(
    private readonly ctx: Pick<PluginContext, 'db' | 'project' | 'signal'>,
    private readonly registry: TypeRegistry,
    private readonly projectFile: ProjectFile,
    private readonly state: CdcStateStore,
    private readonly onSync: FireableHook<'onSync'>,
    private readonly log: Logger,
  ) {}

  runtime(): ConnectorRuntime {
    return { project: this.ctx.project, db: this.ctx.db };
  }

  /** The type and validated, expanded parameters of a connector's connection. */
  resolve(connector: ConnectorConfig): { type: ReturnType<TypeRegistry['get']>; config: Record<string, unknown> } {
    const type = this.registry.get(connector.type);
    const connection = this.projectFile.connection(connector.connection);
    if (!connection) {
      throw badRequest('invalid_project_yml', `project.yml: connector '${connector.name}' names connection '${connector.connection}', which 'connections' does not hold`, {
        field: `connectors.${connector.name}.connection`,
      });
    }
    const written = connection.written;
    return { type, config: this.registry.validate(connector.type, this.projectFile.expand(written)) };
  }

  /** Syncs every table of a connector (or `options.tables`), one transaction each. */
  async syncConnector(name: string, options: SyncOptions): Promise<CDCSyncResult[]> {
    const connector = this.projectFile.connector(name);
    const started = new Date();
    const t0 = performance.now();
    const tables = options.tables ? connector.tables.filter((t) => options.tables!.includes(t.name)) : connector.tables;
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
        const r = await this.syncTable(connector, table, resolved.type.type, resolved.config, options.signal ?? this.ctx.signal);
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

  private async syncTable(connector: ConnectorConfig, table: TableConfig, type: import('../../sdk/index.js').ConnectorType, config: Record<string, unknown>, signal: AbortSignal): Promise<CDCSyncResult> {
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
      const reader = type.read(config, {
        table: table.name,
        ...(table.source_query ? { sourceQuery: table.source_query } : {}),
        ...(mode === 'high_watermark' ? { cursor: { column: table.cdc_column!, after: before } } : {}),
        batchRows: BATCH_ROWS,
        signal,
        runtime: this.runtime(),
      });
      const { rows, watermark } = await conn.transaction(async (tx) => {
        // High watermark without a stored watermark (first sync, or after a reset) is a full re-sync:
        // the target is replaced, so a reset never duplicates rows.
        const loaded = await this.load(tx, reader, { schema, table: target, replace: mode !== 'high_watermark' || before === null, cdcColumn: mode === 'high_watermark' ? table.cdc_column! : null });
        const after = mode === 'high_watermark' ? (loaded.lastCursor ?? before) : null;
        await this.state.put(tx, { connector: connector.name, table: table.name, mode, watermark: after, mtime, rows: loaded.rows });
        return { rows: loaded.rows, watermark: after };
      });
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

  private async tableExists(c: DbConnection, schema: string, table: string): Promise<boolean> {
    const n = await c.value<number>(
      "SELECT count(*)::INTEGER FROM duckdb_tables() WHERE database_name = current_database() AND schema_name = $1 AND table_name = $2",
      [schema, table],
    );
    return (n ?? 0) > 0;
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
    let mode: 'replace' | 'create' | 'append' = target.replace ? 'replace' : 'create';
    if (!target.replace && (await this.tableExists(tx, target.schema, target.table))) {
      mode = 'append';
      const existing = (await tx.all<{ column_name: string }>(
        'SELECT column_name FROM duckdb_columns() WHERE database_name = current_database() AND schema_name = $1 AND table_name = $2',
        [target.schema, target.table],
      )).map((r) => r.column_name);
      for (const c of columns) {
        if (!existing.includes(c.name)) await tx.run(`ALTER TABLE ${qualified(target.schema, target.table)} ADD COLUMN ${quoteIdent(c.name)} ${c.type}`);
      }
    }
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
