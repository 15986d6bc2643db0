import type { ProjectConfig } from '../sdk/config.js';
import type { DatabasePort } from '../sdk/db.js';
import { badRequest, DpError, errorMessage } from '../sdk/errors.js';
import type { KernelHooks, QueryContext, QueryResult } from '../sdk/hooks.js';
import type { Logger, QueryRunner, UserQueryRequest } from '../sdk/plugin.js';
import { type Connection, translateDbError } from './database.js';
import { assertReadOnly } from './readonly.js';

/** A prepared context that an interceptQuery tap already answered. */
type Prepared = { ctx: QueryContext; answered?: QueryResult };

export class GuardedQueryRunner implements QueryRunner {
  constructor(
    private readonly db: DatabasePort,
    private readonly hooks: KernelHooks,
    private readonly config: () => ProjectConfig,
    private readonly log: Logger,
  ) {}

  private newContext(req: UserQueryRequest): QueryContext {
    if (typeof req.sql !== 'string' || req.sql.trim() === '') throw badRequest('invalid_sql', "'sql' must be a non-empty string", { field: 'sql' });
    return {
      sql: req.sql,
      originalSql: req.sql,
      params: req.params,
      caller: req.caller,
      purpose: req.purpose,
      table: req.table,
      rowTransforms: [],
      notes: [],
      state: {},
    };
  }

  private async prepareInternal(req: UserQueryRequest): Promise<Prepared> {
    const ctx = this.newContext(req);
    const answered = await this.hooks.interceptQuery.promise(ctx);
    if (answered) return { ctx, answered };
    const options = { allowServiceSchema: ctx.caller.role === 'admin' };
    // The SQL as sent is validated first: its parse is cached, so beforeQuery taps (masking)
    // read the same tree without another round trip to DuckDB.
    const sent = await assertReadOnly(this.db, ctx.originalSql, options);
    ctx.macros = sent.macros;
    await this.hooks.beforeQuery.promise(ctx);
    // Whatever text finally runs is parsed by DuckDB and validated again, then checked by the taps.
    const final = ctx.sql === ctx.originalSql ? sent : await assertReadOnly(this.db, ctx.sql, options);
    for (const check of ctx.finalChecks ?? []) await check(final.tree);
    for (const note of ctx.notes) this.log.info(`query: ${note}`, { purpose: ctx.purpose });
    return { ctx };
  }

  async prepare(req: UserQueryRequest): Promise<QueryContext> {
    const { ctx, answered } = await this.prepareInternal(req);
    if (answered) throw badRequest('not_a_query', 'This statement is a command, not a query');
    return ctx;
  }

  async assertReadOnly(sql: string): Promise<void> {
    await assertReadOnly(this.db, sql);
  }

  private timeoutSeconds(ctx: QueryContext): number {
    return this.config().query.timeout_seconds[ctx.caller.role];
  }

  private window(req: UserQueryRequest): { limit: number; offset: number } {
    const { default_limit, max_limit } = this.config().query;
    const limit = req.limit ?? default_limit;
    const offset = req.offset ?? 0;
    if (!Number.isInteger(limit) || limit < 1 || limit > max_limit) {
      throw badRequest('invalid_limit', `'limit' must be an integer from 1 to ${max_limit}`, { field: 'limit', max: max_limit });
    }
    if (!Number.isInteger(offset) || offset < 0) throw badRequest('invalid_offset', "'offset' must be a non-negative integer", { field: 'offset' });
    return { limit, offset };
  }

  async run(req: UserQueryRequest): Promise<QueryResult> {
    const { limit, offset } = this.window(req);
    const { ctx, answered } = await this.prepareInternal(req);
    if (answered) return answered;
    const seconds = this.timeoutSeconds(ctx);
    const result = await this.db.withConnection(async (c) => {
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        c.interrupt();
      }, seconds * 1000);
      try {
        const read = await (c as Connection).readUntil(ctx.sql, offset + limit + 1, ctx.params);
        const truncated = read.rows.length > offset + limit;
        const rows = read.rows.slice(offset, offset + limit);
        const out: QueryResult = { columns: read.columns, column_types: read.column_types, rows, truncated, offset, limit };
        return out;
      } catch (e) {
        if (timedOut) {
          throw new DpError(408, 'query_timeout', `The query ran longer than the ${seconds} s allowed for role '${ctx.caller.role}' and was cancelled`, {
            timeout_seconds: seconds,
            role: ctx.caller.role,
          });
        }
        throw translateDbError(e);
      } finally {
        clearTimeout(timer);
      }
    });
    for (const t of ctx.rowTransforms) result.rows = t(result.columns, result.rows);
    if (ctx.notes.length) result.notes = [...ctx.notes];
    await this.hooks.afterQuery.promise(ctx, result);
    return result;
  }

  async stream(req: UserQueryRequest) {
    const { ctx, answered } = await this.prepareInternal(req);
    if (answered) throw badRequest('not_a_query', 'This statement is a command, not a query: send it to /api/query');
    const conn = await this.db.connect();
    let result;
    try {
      result = await conn.stream(ctx.sql, ctx.params);
    } catch (e) {
      conn.close();
      throw translateDbError(e);
    }
    const { columns, column_types } = result;
    const source = result.chunks;
    const log = this.log;
    async function* chunks(): AsyncIterable<unknown[][]> {
      try {
        for await (let rows of source) {
          for (const t of ctx.rowTransforms) rows = t(columns, rows);
          yield rows;
        }
      } catch (e) {
        log.error('query stream failed', { error: errorMessage(e) });
        throw translateDbError(e);
      } finally {
        conn.close();
      }
    }
    return { columns, column_types, chunks: chunks(), context: ctx };
  }
}

