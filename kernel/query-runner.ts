import type { ProjectConfig } from '../sdk/config.js';
import type { DatabasePort, DbConnection, SerializedSql, SqlNode } from '../sdk/db.js';
import { badRequest, DpError, errorMessage, isDpError } from '../sdk/errors.js';
import type { KernelHooks, QueryContext, QueryResult } from '../sdk/hooks.js';
import type { Logger, QueryRunner, UserQueryRequest } from '../sdk/plugin.js';
import type { QueryTarget, QueryTargetRun } from '../sdk/query-target.js';
import type { Clock } from '../sdk/scheduler.js';
import { type Connection, translateDbError } from './database.js';
import { Deadline, QueryControl, QuerySlots, queryWorkers, threadPoolSize } from './query-control.js';
import { appendFirstRows, appendWindow, WINDOW_LIMIT_PARAM, WINDOW_OFFSET_PARAM } from './query-window.js';
import { assertReadOnly } from './readonly.js';

/** A prepared context that an interceptQuery tap already answered; `windowed` when the page is asked in SQL. */
type Prepared = { ctx: QueryContext; answered?: QueryResult; windowed?: boolean };

interface Window {
  limit: number;
  offset: number;
}

const noop = () => {};
const PAGED_TEXTS_MAX = 1000;

/**
 * True when the statement's own top level ends in the runner's page: `LIMIT $dp_window_limit
 * OFFSET $dp_window_offset`, or for the first page `LIMIT <firstRows>` (a constant, no offset).
 */
function pagesTopLevel(tree: SerializedSql, firstRows?: number): boolean {
  if (tree.statements.length !== 1) return false;
  const node = tree.statements[0].node;
  // DESCRIBE/SUMMARIZE <query> LIMIT … parses, but the LIMIT then applies to the query described.
  if ((node.from_table as SqlNode | undefined)?.type === 'SHOW_REF') return false;
  const param = (n: unknown, name: string) => (n as SqlNode | null)?.class === 'PARAMETER' && (n as SqlNode).identifier === name;
  const constant = (n: unknown, value: number) => {
    const c = n as SqlNode | null;
    return c?.class === 'CONSTANT' && c.value?.is_null === false && Number(c.value?.value) === value;
  };
  return ((node.modifiers ?? []) as SqlNode[]).some((m) =>
    m.type !== 'LIMIT_MODIFIER'
      ? false
      : firstRows === undefined
        ? param(m.limit, WINDOW_LIMIT_PARAM) && param(m.offset, WINDOW_OFFSET_PARAM)
        : constant(m.limit, firstRows) && m.offset == null,
  );
}

/**
 * An SQL error's line and column point into the text that ran; the caller sees its own text. A
 * location is kept where that line is the caller's own, the line alone where only the line's
 * content changed (a masked scan spliced in), and dropped where the lines do not correspond.
 */
function locatedInSent(e: unknown, ctx: QueryContext | undefined): unknown {
  if (!ctx || ctx.sql === ctx.originalSql || !isDpError(e) || e.code !== 'sql_error' || typeof e.details.line !== 'number') return e;
  const { line, column: _column, ...rest } = e.details as { line: number; column?: number };
  const sent = ctx.originalSql.split('\n');
  const ran = ctx.sql.split('\n');
  if (line > sent.length) return new DpError(e.status, e.code, e.message, rest);
  if (ran[line - 1] === sent[line - 1]) return e;
  // The runner's page adds one line after the statement.
  const sameLines = ran.length === sent.length || (ran.length === sent.length + 1 && /^LIMIT /.test(ran[ran.length - 1]));
  return new DpError(e.status, e.code, e.message, sameLines ? { ...rest, line } : rest);
}

export class GuardedQueryRunner implements QueryRunner {
  private readonly slots: QuerySlots;
  /** Queries accepted and not yet over. */
  private readonly active = new Set<QueryControl>();
  /** pagedText's answers by page form and text. */
  private readonly pagedTexts = new Map<string, string | null>();

  constructor(
    private readonly db: DatabasePort,
    private readonly hooks: KernelHooks,
    private readonly config: () => ProjectConfig,
    private readonly log: Logger,
    /** User queries that may run at once over all roles; by default the libuv pool minus the workers kept for short work. */
    workers = queryWorkers(threadPoolSize()),
    /** Where deadlines are counted (App's clock). */
    private readonly clock?: Clock,
  ) {
    this.slots = new QuerySlots(() => {
      const q = this.config().query;
      return { perRole: q.max_concurrent, total: workers, maxQueued: q.max_queued };
    });
  }

  /**
   * The text with its page asked in SQL (the first `firstRows` rows as a literal, else the
   * window parameters), or null when DuckDB does not read the appended page as the statement's
   * own (a LIMIT of its own, SHOW/DESCRIBE). Kept per text: it depends on nothing else.
   */
  private async pagedText(sql: string, firstRows: number | undefined): Promise<string | null> {
    const key = `${firstRows ?? 'window'}\0${sql}`;
    const hit = this.pagedTexts.get(key);
    if (hit !== undefined) return hit;
    const paged = firstRows === undefined ? appendWindow(sql) : appendFirstRows(sql, firstRows);
    const parsed = await this.db.parse(paged);
    const answer = parsed.ok && pagesTopLevel(parsed.tree, firstRows) ? paged : null;
    if (this.pagedTexts.size >= PAGED_TEXTS_MAX) this.pagedTexts.delete(this.pagedTexts.keys().next().value as string);
    this.pagedTexts.set(key, answer);
    return answer;
  }

  /** Running and waiting user queries per role. */
  stats() {
    return this.slots.stats();
  }

  private newContext(req: UserQueryRequest, runsRowTransforms: boolean): QueryContext {
    if (typeof req.sql !== 'string' || req.sql.trim() === '') throw badRequest('invalid_sql', "'sql' must be a non-empty string", { field: 'sql' });
    for (const name of [WINDOW_LIMIT_PARAM, WINDOW_OFFSET_PARAM]) {
      if (req.params && Object.prototype.hasOwnProperty.call(req.params, name)) {
        throw badRequest('invalid_param_name', `Parameter name '${name}' is reserved for the result page`, { field: `params.${name}` });
      }
    }
    return {
      sql: req.sql,
      originalSql: req.sql,
      params: req.params,
      caller: req.caller,
      purpose: req.purpose,
      table: req.table,
      target: req.target,
      rowTransforms: [],
      runsRowTransforms,
      notes: [],
      state: {},
    };
  }

  /**
   * interceptQuery, validation of the SQL as sent, beforeQuery, then (for a page) the page asked
   * in SQL, then validation and final checks of the text that will run.
   */
  private async prepareInternal(req: UserQueryRequest, runsRowTransforms: boolean, window?: Window): Promise<Prepared> {
    const ctx = this.newContext(req, runsRowTransforms);
    const answered = await this.hooks.interceptQuery.promise(ctx);
    if (answered) return { ctx, answered };
    const options = { allowServiceSchema: ctx.caller.role === 'admin', target: req.target };
    // The SQL as sent is validated first: its parse is cached, so beforeQuery taps (masking)
    // read the same tree without another round trip to DuckDB.
    const sent = await assertReadOnly(this.db, ctx.originalSql, options);
    ctx.macros = sent.macros;
    await this.hooks.beforeQuery.promise(ctx);
    let windowed = false;
    // A target pages in its own dialect (read's window): the page is not asked in DuckDB SQL.
    if (window && !req.target) {
      // The page goes into the SQL before the final validation, so the checks below see the text that runs.
      const firstRows = window.offset === 0 ? window.limit + 1 : undefined;
      const paged = await this.pagedText(ctx.sql, firstRows);
      if (paged !== null) {
        ctx.sql = paged;
        if (firstRows === undefined) ctx.params = { ...(ctx.params ?? {}), [WINDOW_LIMIT_PARAM]: window.limit + 1, [WINDOW_OFFSET_PARAM]: window.offset };
        windowed = true;
      }
    }
    // Whatever text finally runs is parsed by DuckDB and validated again, then checked by the taps.
    const final = ctx.sql === ctx.originalSql ? sent : await assertReadOnly(this.db, ctx.sql, options);
    for (const check of ctx.finalChecks ?? []) await check(final.tree);
    for (const note of ctx.notes) this.log.info(`query: ${note}`, { purpose: ctx.purpose });
    return { ctx, windowed };
  }

  /**
   * A target's run of the prepared query: the role's deadline and stop signal, and the check
   * of the text the target will run, read back into DuckDB SQL, by the same validation and final
   * checks (masking) the DuckDB text passed.
   */
  private targetRun(control: QueryControl, ctx: QueryContext): QueryTargetRun {
    const options = { allowServiceSchema: ctx.caller.role === 'admin', target: ctx.target };
    return {
      params: ctx.params,
      signal: control.signal,
      remainingMs: control.deadline.remainingMs(),
      verify: async (duckdbSql) => {
        const checked = await assertReadOnly(this.db, duckdbSql, options);
        for (const check of ctx.finalChecks ?? []) await check(checked.tree);
      },
    };
  }

  /** Runs a target's work once the caller's role has a slot; a stop aborts `control.signal`, which the target turns into a stop on its engine. */
  private async executeOnTarget<T>(control: QueryControl, work: () => Promise<T>): Promise<T> {
    const release = await this.slots.acquire(control.deadline.role, control);
    try {
      control.throwIfStopped();
      return await control.guard(work());
    } finally {
      void control.idle().then(release);
    }
  }

  async prepare(req: UserQueryRequest): Promise<QueryContext> {
    // The caller runs ctx.sql itself: nothing may be left to row transforms.
    const { ctx, answered } = await this.prepareInternal(req, false);
    if (answered) throw badRequest('not_a_query', 'This statement is a command, not a query');
    return ctx;
  }

  async assertReadOnly(sql: string): Promise<void> {
    await assertReadOnly(this.db, sql);
  }

  /** The query's stop switch: its role's deadline starts now (time spent waiting for a slot counts). */
  private control(req: Pick<UserQueryRequest, 'caller' | 'signal'>): QueryControl {
    const role = req.caller.role;
    const control = new QueryControl(new Deadline(this.config().query.timeout_seconds[role], role, this.clock), req.signal, () => this.active.delete(control));
    this.active.add(control);
    return control;
  }

  /**
   * Stops every user query, running or waiting, with `reason`, and settles once DuckDB let go
   * of all of them (shutdown: a call still running on a libuv worker would keep the process
   * from exiting).
   */
  async stopAll(reason: DpError): Promise<void> {
    const all = [...this.active];
    for (const control of all) control.stop(reason);
    await Promise.all(all.map((control) => control.idle()));
  }

  private window(req: UserQueryRequest): Window {
    const { default_limit, max_limit } = this.config().query;
    const limit = req.limit ?? default_limit;
    const offset = req.offset ?? 0;
    if (!Number.isInteger(limit) || limit < 1 || limit > max_limit) {
      throw badRequest('invalid_limit', `'limit' must be an integer from 1 to ${max_limit}`, { field: 'limit', max: max_limit });
    }
    if (!Number.isInteger(offset) || offset < 0) throw badRequest('invalid_offset', "'offset' must be a non-negative integer", { field: 'offset' });
    return { limit, offset };
  }

  /**
   * Runs `work` on a pooled connection once the caller's role has a slot. At the deadline (or
   * when the client leaves) the caller gets the error at once, the connection is interrupted
   * until DuckDB lets go, and only then is the slot given back.
   */
  private async execute<T>(control: QueryControl, work: (c: DbConnection) => Promise<T>): Promise<T> {
    const release = await this.slots.acquire(control.deadline.role, control);
    try {
      return await control.guard(
        this.db.withConnection(async (c) => {
          control.use(c);
          // A query stopped while its connection was being lent is never started.
          control.throwIfStopped();
          return work(c);
        }),
      );
    } finally {
      void control.idle().then(release);
    }
  }

  async withDeadline<T>(req: Pick<UserQueryRequest, 'caller' | 'purpose' | 'signal'>, fn: (c: DbConnection) => Promise<T>): Promise<T> {
    const control = this.control(req);
    try {
      return await this.execute(control, fn);
    } catch (e) {
      throw translateDbError(e);
    } finally {
      control.finish();
    }
  }

  async run(req: UserQueryRequest): Promise<QueryResult> {
    const { limit, offset } = this.window(req);
    const control = this.control(req);
    let result: QueryResult;
    let ctx: QueryContext;
    /** The context once prepared, for the error's location. */
    let located: QueryContext | undefined;
    try {
      // Every page is asked in SQL when the query allows it (its validation and masking are kept
      // per text, so the appended window costs no parse): the result is then bounded and comes
      // back in one DuckDB call. Otherwise skipped rows are dropped chunk by chunk.
      const prepared = await control.guard(this.prepareInternal(req, true, { limit, offset }));
      if (prepared.answered) return prepared.answered;
      ctx = located = prepared.ctx;
      const sql = ctx.sql;
      const params = ctx.params;
      const target: QueryTarget | undefined = ctx.target;
      const read = target
        ? await this.executeOnTarget(control, () => target.read(sql, { offset, limit: limit + 1 }, this.targetRun(control, ctx)))
        : await this.execute(control, (c) =>
            prepared.windowed ? (c as Connection).readBounded(sql, params) : (c as Connection).readWindow(sql, offset, limit + 1, params),
          );
      const truncated = read.rows.length > limit;
      result = { columns: read.columns, column_types: read.column_types, rows: read.rows.slice(0, limit), truncated, offset, limit };
    } catch (e) {
      throw locatedInSent(translateDbError(e), located);
    } finally {
      control.finish();
    }
    for (const t of ctx.rowTransforms) result.rows = t(result.columns, result.rows);
    result.masked_columns = ctx.maskedColumns?.(result.columns) ?? [];
    if (ctx.notes.length) result.notes = [...ctx.notes];
    // Nobody taps afterQuery by default: skip building its promise chain per query.
    if (this.hooks.afterQuery.isUsed()) await this.hooks.afterQuery.promise(ctx, result);
    return result;
  }

  /**
   * The whole result, chunk by chunk, on a connection of its own that holds a query slot until
   * the stream ends. The deadline covers the whole stream: once stopped (deadline, client gone)
   * the query is interrupted, the next chunk throws, and the connection and slot are given back
   * when DuckDB let go, also when nobody reads the stream any more.
   */
  async stream(req: UserQueryRequest) {
    const control = this.control(req);
    const log = this.log;
    let release: () => void = noop;
    let conn: (DbConnection & { close(): void }) | null = null;
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      control.finish();
      void control.idle().then(() => {
        conn?.close();
        release();
      });
    };
    let prepared: Prepared;
    let result: Awaited<ReturnType<DbConnection['stream']>>;
    let located: QueryContext | undefined;
    try {
      prepared = await control.guard(this.prepareInternal(req, true));
      located = prepared.ctx;
      if (prepared.answered) throw badRequest('not_a_query', 'This statement is a command, not a query: send it to /api/query');
      release = await this.slots.acquire(control.deadline.role, control);
      const target = prepared.ctx.target;
      if (target) {
        control.throwIfStopped();
        result = await control.guard(target.stream(prepared.ctx.sql, this.targetRun(control, prepared.ctx)));
      } else {
        const connecting = this.db.connect();
        // Stopped while connecting: the connection still arrives, and is closed then.
        connecting.then((c) => (ended ? c.close() : undefined), noop);
        conn = await control.guard(connecting);
        control.use(conn);
        control.throwIfStopped();
        result = await control.guard(conn.stream(prepared.ctx.sql, prepared.ctx.params));
      }
    } catch (e) {
      end();
      throw locatedInSent(translateDbError(e), located);
    }
    const ctx = prepared.ctx;
    const { columns, column_types } = result;
    const source = result.chunks[Symbol.asyncIterator]();
    let reading = false;
    // Stopped while nobody waits on a chunk (a slow or vanished reader): let go now.
    control.signal.addEventListener('abort', () => (reading ? undefined : end()), { once: true });
    async function* chunks(): AsyncIterable<unknown[][]> {
      try {
        for (;;) {
          control.throwIfStopped();
          reading = true;
          const next = await control.guard(source.next());
          reading = false;
          if (next.done) return;
          let rows = next.value;
          for (const t of ctx.rowTransforms) rows = t(columns, rows);
          yield rows;
        }
      } catch (e) {
        if (!isDpError(e)) log.error('query stream failed', { error: errorMessage(e) });
        throw translateDbError(e);
      } finally {
        end();
      }
    }
    return { columns, column_types, chunks: chunks(), context: ctx };
  }
}
