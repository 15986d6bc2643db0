import fs from 'node:fs';
import { Readable } from 'node:stream';
import { badRequest, type Caller, clientGone, type DbConnection, definePlugin, DpError, forbidden, isDpError, LOCAL_ADMIN, type JsonSchema, type Role, ROLES, QUERY_TARGET_SERVICE, WAREHOUSE_TARGET_SERVICE } from '../../sdk/index.js';
import { csvLines } from './csv.js';

interface QueryBody {
  sql: string;
  params?: Record<string, unknown>;
  limit?: number;
  offset?: number;
  as?: Role;
}

const PARAM_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

const querySchema: JsonSchema = {
  type: 'object',
  required: ['sql'],
  additionalProperties: false,
  properties: {
    sql: { type: 'string', minLength: 1, description: 'One read-only SELECT (or SHOW/DESCRIBE/SUMMARIZE), or a masking command' },
    params: {
      type: 'object',
      description: 'Values for $name placeholders, bound as prepared-statement values',
      additionalProperties: { type: ['string', 'number', 'boolean', 'null'] },
    },
    limit: { type: 'integer', minimum: 1, description: 'Rows to return (default 1000, at most 100000)' },
    offset: { type: 'integer', minimum: 0, description: 'Rows to skip' },
    as: { type: 'string', enum: [...ROLES], description: 'Admins only: run as this role would (its masking and limits), to check what it sees' },
  },
};

/** Which result columns the server masked for the caller (sdk/masking.ts MaskedResultColumn). */
const maskedColumnsSchema: JsonSchema = {
  type: 'array',
  description: 'Result columns the server masked for the caller, as the masking rewrite that ran planned them (empty when none)',
  items: {
    type: 'object',
    required: ['index', 'name', 'method', 'via'],
    properties: {
      index: { type: 'integer', description: 'Position in columns (0-based)' },
      name: { type: 'string', description: 'The column name as in columns' },
      method: { type: 'string', description: "The policy's masking method (for a computed column, that of its masked input)" },
      via: { type: 'string', enum: ['column', 'expression'], description: 'column: the masked value passed through or renamed; expression: computed from masked input' },
      policy: { type: 'string', description: 'Policy id (derived:schema.table.column for a policy derived from lineage)' },
      source: { type: 'string', description: "schema.table.column of the policy's column" },
      derived: { type: 'boolean', description: 'The policy was derived from column lineage' },
    },
  },
};

/** The masked columns as a response header of the CSV export (JSON, ASCII only). */
function maskedColumnsHeader(masked: unknown[]): string {
  return JSON.stringify(masked).replace(/[^\x20-\x7e]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

const resultSchema: JsonSchema = {
  type: 'object',
  properties: {
    columns: { type: 'array', items: { type: 'string' } },
    column_types: { type: 'array', items: { type: 'string' } },
    rows: { type: 'array', items: { type: 'array', items: {} } },
    truncated: { type: 'boolean' },
    offset: { type: 'integer' },
    limit: { type: 'integer' },
    notes: { type: 'array', items: { type: 'string' } },
    message: { type: 'string' },
    masked_columns: maskedColumnsSchema,
  },
};

/**
 * The caller a query runs as: itself, or (admins only) the role named by `as`, authenticated so
 * that masking binds even without --auth, where every caller is an exempt local admin.
 */
function callerAs(caller: Caller, as: Role | undefined): Caller {
  if (as === undefined) return caller;
  if (caller.role !== 'admin') {
    throw forbidden('insufficient_role', `Only an admin may run a query as another role; role '${caller.role}' cannot`, { required_role: 'admin', role: caller.role });
  }
  return { ...caller, role: as, authenticated: true };
}

function checkParams(params: Record<string, unknown> | undefined): void {
  for (const name of Object.keys(params ?? {})) {
    if (!PARAM_NAME.test(name)) throw badRequest('invalid_param_name', `Parameter name '${name}' is not a valid identifier`, { field: `params.${name}` });
  }
}

const EXPLAIN = 'EXPLAIN ';

/**
 * An SQL error of `EXPLAIN <sql>` located in the SQL as sent: the prefix shifts line 1's column,
 * and a column of a text the masking rewrite changed is dropped (the line is kept).
 */
function locatedInExplained(e: unknown, rewritten: boolean): unknown {
  if (!isDpError(e) || e.code !== 'sql_error' || typeof e.details.column !== 'number') return e;
  const { column: at, ...rest } = e.details as { column: number };
  const column = e.details.line === 1 ? at - EXPLAIN.length : at;
  return new DpError(e.status, e.code, e.message, !rewritten && column >= 1 ? { ...rest, column } : rest);
}

/** EXPLAIN of the guarded SQL: DuckDB's JSON plan (structured) and its text rendering (raw). */
async function explain(c: DbConnection, sql: string, params?: Record<string, unknown>) {
  const raw = await c.query(`${EXPLAIN}${sql}`, params);
  const text = raw.rows.map((r) => String(r[1] ?? '')).join('\n');
  const json = await c.query(`EXPLAIN (FORMAT JSON) ${sql}`, params);
  let structured: unknown = null;
  try {
    structured = JSON.parse(String(json.rows[0]?.[1] ?? 'null'));
  } catch {
    structured = null;
  }
  return { sql, plan: structured, raw: text };
}

export default definePlugin({
  setup(ctx) {
    // On a ClickHouse environment the models live there: queries run there (masked in DuckDB SQL, then transpiled), never on the local file.
    const onTarget = async () => (await ctx.services.find(QUERY_TARGET_SERVICE)?.active()) ?? undefined;
    // DuckDB's plan of a query says nothing of the target's: explain refuses there rather than describe the local file.
    const localOnly = () => ctx.services.find(WAREHOUSE_TARGET_SERVICE)?.assertLocalOnly('Explain');
    ctx.route<QueryBody>({
      method: 'POST',
      url: '/api/query',
      permission: 'read',
      summary: 'Run a read-only query (masking commands are intercepted)',
      schema: { body: querySchema, response: { 200: resultSchema } },
      handler: async (req, reply) => {
        checkParams(req.body.params);
        // The schema above documents the result; serialising it by the schema would write each
        // row cell through fast-json-stringify's any-type path, 2-3x JSON.stringify's time
        // (about 0.6 ms for a page of 1,000 short rows).
        // A custom serializer leaves the content type unset: say it, or clients read text.
        reply.serializer(JSON.stringify).type('application/json; charset=utf-8');
        const { as, ...body } = req.body;
        return ctx.queries.run({ ...body, caller: callerAs(req.caller, as), purpose: 'query', signal: clientGone(reply), target: await onTarget() });
      },
    });

    ctx.route<QueryBody>({
      method: 'POST',
      url: '/api/query/explain',
      permission: 'read',
      summary: 'Explain a read-only query: structured plan and raw text',
      schema: { body: querySchema },
      handler: async (req, reply) => {
        localOnly();
        checkParams(req.body.params);
        const request = { sql: req.body.sql, params: req.body.params, caller: callerAs(req.caller, req.body.as), purpose: 'explain' as const, signal: clientGone(reply) };
        // Planning runs on a DuckDB worker too: the same deadline and slot as any query.
        let explained: { rewritten: boolean } | null = null;
        try {
          return await ctx.queries.withDeadline(request, async (c) => {
            const prepared = await ctx.queries.prepare(request);
            explained = { rewritten: prepared.sql !== req.body.sql };
            return await explain(c, prepared.sql, prepared.params);
          });
        } catch (e) {
          throw explained ? locatedInExplained(e, (explained as { rewritten: boolean }).rewritten) : e;
        }
      },
    });

    ctx.route<QueryBody>({
      method: 'POST',
      url: '/api/query/export-csv',
      permission: 'read',
      summary: 'Stream the full result of a read-only query as CSV (no row limit, constant memory)',
      schema: {
        body: querySchema,
        querystring: {
          type: 'object',
          properties: {
            escape_formulas: {
              type: 'boolean',
              default: true,
              description: "Prefix text cells starting with =, +, -, @, tab or CR with ' so spreadsheets do not run them as formulas (false: raw cells)",
            },
          },
        },
      },
      handler: async (req, reply) => {
        checkParams(req.body.params);
        const escapeFormulas = (req.query as { escape_formulas?: boolean }).escape_formulas !== false;
        // A client that leaves (before or after the first chunk) stops the query; so does the role's deadline.
        const signal = clientGone(reply);
        const { columns, chunks, context } = await ctx.queries.stream({
          sql: req.body.sql,
          params: req.body.params,
          caller: callerAs(req.caller, req.body.as),
          purpose: 'export',
          signal,
          target: await onTarget(),
        });
        reply.header('x-dp-masked-columns', maskedColumnsHeader(context.maskedColumns?.(columns) ?? []));
        reply.header('content-type', 'text/csv; charset=utf-8');
        reply.header('content-disposition', 'attachment; filename="export.csv"');
        return reply.send(Readable.from(csvLines(columns, chunks, { escapeFormulas })));
      },
    });

    ctx.command('query', async (args, io) => {
      const target = await onTarget();
      let sql = String(args.sql);
      // A logged-in user running this through `dp serve` reads SQL files of the project only.
      if (sql.startsWith('@')) sql = fs.readFileSync(io.caller?.authenticated ? ctx.project.resolveReadable(sql.slice(1)) : sql.slice(1), 'utf8');
      const params: Record<string, unknown> = {};
      for (const p of (args.param as string[] | undefined) ?? []) {
        const at = String(p).indexOf('=');
        if (at < 1) throw badRequest('invalid_param', `--param takes name=value, got '${p}'`);
        const raw = String(p).slice(at + 1);
        params[String(p).slice(0, at)] = /^-?\d+(\.\d+)?$/.test(raw) ? Number(raw) : raw === 'true' ? true : raw === 'false' ? false : raw;
      }
      checkParams(params);
      const bound = Object.keys(params).length ? params : undefined;
      if (args.as !== undefined && !ROLES.includes(args.as as Role)) throw badRequest('invalid_role', `--as takes a role (${ROLES.join(', ')}), got '${String(args.as)}'`, { field: 'as' });
      const caller = callerAs(io.caller ?? LOCAL_ADMIN, args.as as Role | undefined);
      if (args.csv) {
        const { columns, chunks } = await ctx.queries.stream({ sql, params: bound, caller, purpose: 'export', target });
        for await (const text of csvLines(columns, chunks, { escapeFormulas: args['escape-formulas'] !== false })) {
          if (!process.stdout.write(text)) await new Promise((r) => process.stdout.once('drain', r));
        }
        return 0;
      }
      const result = await ctx.queries.run({ sql, params: bound, limit: Number(args.limit), caller, purpose: 'query', target });
      if (io.wantsJson) {
        io.json(result);
        return 0;
      }
      if ((result as { message?: string }).message) io.out(String((result as { message?: string }).message));
      io.table(
        result.rows.map((r) => Object.fromEntries(result.columns.map((c, i) => [c, r[i]]))),
        result.columns,
      );
      if (result.truncated) io.err(`(showing the first ${result.limit} rows; pass --limit or --csv for more)`);
      return 0;
    });
  },
});
