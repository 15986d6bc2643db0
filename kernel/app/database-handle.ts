/** The database handle plugins get (ctx.db). */
import type { BulkLoadResult, BulkTarget, BulkWriter, DatabasePort, DbConnection, FileReadOptions, Row, ScratchOptions, SerializedSql, SqlParams } from '../../sdk/db.js';
import type { DbCatalog } from '../../sdk/db-catalog.js';
import { forwardingCatalog } from '../db-catalog.js';
import type { DuckDatabase } from '../database.js';

/** Forwards to whichever DuckDB file is open now, so plugins keep one handle across environment switches. */
export class DatabaseHandle implements DatabasePort {
  constructor(private readonly current: () => DuckDatabase) {}
  get path() {
    return this.current().path;
  }
  /** The open file's catalog version (unique in the process): read-only validations are kept under it. */
  get catalogVersion() {
    return this.current().catalogVersion;
  }
  /** The open file's catalog port: an environment switch brings the new file's catalog. */
  readonly catalog: DbCatalog = forwardingCatalog(() => this.current().catalog);
  withConnection<T>(fn: (c: DbConnection) => Promise<T>) {
    return this.current().withConnection(fn);
  }
  connect() {
    return this.current().connect();
  }
  scratch(options?: ScratchOptions) {
    return this.current().scratch(options);
  }
  all<T = Row>(sql: string, params?: SqlParams) {
    return this.current().all<T>(sql, params);
  }
  query(sql: string, params?: SqlParams) {
    return this.current().query(sql, params);
  }
  run(sql: string, params?: SqlParams) {
    return this.current().run(sql, params);
  }
  value<T = unknown>(sql: string, params?: SqlParams) {
    return this.current().value<T>(sql, params);
  }
  parse(sql: string) {
    return this.current().parse(sql);
  }
  parseMany(sqls: string[], options?: { compact?: boolean; split?: boolean }) {
    return this.current().parseMany(sqls, options);
  }
  deparse(tree: SerializedSql) {
    return this.current().deparse(tree);
  }
  assertProjectFileReads(sql: string, options?: FileReadOptions) {
    return this.current().assertProjectFileReads(sql, options);
  }
  checkpoint() {
    return this.current().checkpoint();
  }
  inspectFile(file: string) {
    return this.current().inspectFile(file);
  }
  exclusive<T>(fn: () => Promise<T>) {
    return this.current().exclusive(fn);
  }
  bulkLoad(target: BulkTarget & { transaction?: boolean }, fn: (writer: BulkWriter) => Promise<void>): Promise<BulkLoadResult> {
    return this.current().bulkLoad(target, fn);
  }
  ident(name: string) {
    return this.current().ident(name);
  }
  literal(value: string) {
    return this.current().literal(value);
  }
}
