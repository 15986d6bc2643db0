/**
 * `$name` parameters of a user query on a ClickHouse target. The values never enter the SQL
 * text: each `$name` becomes a ClickHouse query parameter `{name:Type}` and its value travels
 * beside the text as the HTTP parameter `param_name` (the client's `query_params`), which the
 * server substitutes as a typed value after parsing. The type comes from the JSON value: an
 * integer is `Int64`, another number `Float64`, a boolean `UInt8`, a string `String`, null
 * `Nullable(String)`.
 *
 * Where the parameters are in the transpiled text: the transpiler writes DuckDB's `$name` as
 * is, so the text must hold exactly as many `$name` tokens as DuckDB's parse tree has parameter
 * nodes, each of a name the tree has; anything else (a `$name` inside a string literal or a
 * comment, a token the transpiler dropped or repeated) is refused rather than guessed at.
 */
import { badRequest, walkSqlTree, type SqlNode } from '../../sdk/index.js';

/** Query parameters (`{name:Type}` sent as `param_name`): ClickHouse 19.5 and later. */
export function hasQueryParameters(version: string): boolean {
  const [major = 0, minor = 0] = version.split('.').map((n) => Number(n) || 0);
  return major > 19 || (major === 19 && minor >= 5);
}

const TOKEN = /\$([A-Za-z_][A-Za-z0-9_]*)/g;

function refusal(why: string) {
  return badRequest('unsupported_on_target', `The query cannot run on the ClickHouse target: ${why}`, { model: 'query' });
}

/** The names of the `$name` parameter nodes of a DuckDB parse, in order, each time it appears. */
export function parameterNodes(statements: unknown): string[] {
  const names: string[] = [];
  walkSqlTree(statements, (n: SqlNode) => {
    if (n.class === 'PARAMETER') names.push(String(n.identifier ?? ''));
  });
  return names;
}

/** The ClickHouse type a JSON value is sent as. */
function typeOf(name: string, value: unknown): string {
  if (value === null) return 'Nullable(String)';
  if (typeof value === 'boolean') return 'UInt8';
  if (typeof value === 'bigint') return 'Int64';
  if (typeof value === 'number' && Number.isFinite(value)) return Number.isSafeInteger(value) ? 'Int64' : 'Float64';
  if (typeof value === 'string') return 'String';
  throw refusal(`the parameter $${name} is not a string, number, boolean or null`);
}

/**
 * The transpiled text with each `$name` as `{name:Type}`, and the values to send beside it.
 * `names` are the parse tree's parameter nodes (parameterNodes), `values` the request's params.
 */
export function bindParameters(clickhouseSql: string, names: string[], values: Record<string, unknown> | undefined): { sql: string; params: Record<string, unknown> } {
  const given = values ?? {};
  const wanted = new Set(names);
  for (const name of wanted) {
    if (/^\d+$/.test(name)) throw refusal('positional parameters ($1, ?) are not supported on a ClickHouse target; name them ($name)');
    if (!Object.hasOwn(given, name)) throw badRequest('unsupported_on_target', `The query names the parameter $${name}, which the request does not give`, { model: 'query', parameter: name });
  }
  const found = [...clickhouseSql.matchAll(TOKEN)].map((m) => m[1]!);
  if (found.length !== names.length || found.some((n) => !wanted.has(n))) {
    throw refusal('its parameters cannot be told apart from the text around them (a $name inside a string or a comment?)');
  }
  const types = new Map([...wanted].map((n) => [n, typeOf(n, given[n])]));
  const params: Record<string, unknown> = {};
  for (const n of wanted) params[n] = typeof given[n] === 'boolean' ? Number(given[n]) : given[n];
  return { sql: clickhouseSql.replace(TOKEN, (_m, n: string) => `{${n}:${types.get(n)}}`), params };
}
