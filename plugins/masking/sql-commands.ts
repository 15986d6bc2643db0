/**
 * The masking SQL commands /api/query intercepts (docs/decisions.md "Masking policy"):
 *   CREATE MASKING POLICY ON <schema>.<table>.<column> METHOD <method> [CONFIG '<json>'] [EXEMPT <role>,<role>]
 *   SHOW MASKING POLICIES
 *   DROP MASKING POLICY <policy_id>
 * DuckDB's parser does not know these statements, so they are recognised by a small grammar
 * here (a documented use of regular expressions); anything else goes on to DuckDB.
 */
import { badRequest, type QueryContext, type QueryResult, requirePermission } from '../../sdk/index.js';
import type { MaskingPolicy, PolicyStore } from './policies.js';

const IDENT = `(?:"(?:[^"]|"")+"|[A-Za-z_][A-Za-z0-9_$]*)`;
const CREATE = new RegExp(
  `^CREATE\\s+MASKING\\s+POLICY\\s+ON\\s+(${IDENT})\\s*\\.\\s*(${IDENT})\\s*\\.\\s*(${IDENT})\\s+METHOD\\s+([A-Za-z_][A-Za-z0-9_]*)` +
    `(?:\\s+CONFIG\\s+'((?:[^']|'')*)')?(?:\\s+EXEMPT\\s+([A-Za-z_][A-Za-z0-9_]*(?:\\s*,\\s*[A-Za-z_][A-Za-z0-9_]*)*))?$`,
  'i',
);
const SHOW = /^SHOW\s+MASKING\s+POLICIES$/i;
const DROP = /^DROP\s+MASKING\s+POLICY\s+('(?:[^']|'')+'|"(?:[^"]|"")+"|[A-Za-z0-9_-]+)$/i;
const ANY = /^(CREATE|SHOW|DROP)\s+MASKING\s+POLIC/i;

const USAGE =
  "CREATE MASKING POLICY ON <schema>.<table>.<column> METHOD <method> [CONFIG '<json>'] [EXEMPT <role>,<role>] | SHOW MASKING POLICIES | DROP MASKING POLICY <policy_id>";

const COLUMNS = ['id', 'schema_name', 'table_name', 'column_name', 'method', 'method_config', 'condition_column', 'condition_value', 'exempted_roles', 'created_at'];
const TYPES = ['VARCHAR', 'VARCHAR', 'VARCHAR', 'VARCHAR', 'VARCHAR', 'JSON', 'VARCHAR', 'VARCHAR', 'JSON', 'TIMESTAMP'];

function unquoteIdent(s: string): string {
  return s.startsWith('"') ? s.slice(1, -1).replace(/""/g, '"') : s;
}

function strip(sql: string): string {
  return sql
    .replace(/--[^\n]*$/gm, '')
    .trim()
    .replace(/;\s*$/, '')
    .trim();
}

function table(policies: MaskingPolicy[], message: string): QueryResult & { message: string } {
  const rows = policies.map((p) => COLUMNS.map((c) => p[c as keyof MaskingPolicy] ?? null));
  return { columns: COLUMNS, column_types: TYPES, rows, truncated: false, offset: 0, limit: Math.max(rows.length, 1), message };
}

/** Answers a masking command, or returns undefined for any other statement. */
export async function interceptMaskingCommand(q: QueryContext, store: PolicyStore): Promise<(QueryResult & { message: string }) | undefined> {
  const sql = strip(q.sql);
  if (!ANY.test(sql)) return undefined;
  requirePermission(q.caller, 'write');
  await store.ensureLoaded();
  const create = CREATE.exec(sql);
  if (create) {
    let method_config: unknown = {};
    if (create[5] !== undefined) {
      try {
        method_config = JSON.parse(create[5].replace(/''/g, "'"));
      } catch (e) {
        throw badRequest('invalid_method_config', `CONFIG is not valid JSON: ${(e as Error).message}`, { field: 'method_config' });
      }
    }
    const policy = await store.create({
      schema_name: unquoteIdent(create[1]),
      table_name: unquoteIdent(create[2]),
      column_name: unquoteIdent(create[3]),
      method: create[4].toLowerCase(),
      method_config: method_config as Record<string, unknown>,
      exempted_roles: create[6] ? create[6].split(',').map((r) => r.trim().toLowerCase()) : undefined,
    });
    return table([policy], `Masking policy ${policy.id} created on ${policy.schema_name}.${policy.table_name}.${policy.column_name} (${policy.method})`);
  }
  if (SHOW.test(sql)) {
    const all = store.list();
    return table(all, `${all.length} masking ${all.length === 1 ? 'policy' : 'policies'}`);
  }
  const drop = DROP.exec(sql);
  if (drop) {
    const raw = drop[1];
    const id = raw.startsWith("'") ? raw.slice(1, -1).replace(/''/g, "'") : unquoteIdent(raw);
    const removed = await store.remove(id);
    return table([removed], `Masking policy ${removed.id} dropped`);
  }
  throw badRequest('invalid_masking_command', `Malformed masking command; the forms are: ${USAGE}`, { usage: USAGE });
}
