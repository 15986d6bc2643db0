/** `dp mask add | list | remove`: policy management from the command line. */
import { badRequest, LOCAL_ADMIN, quoteLiteral, type CliIO, type PluginContext } from '../../sdk/index.js';
import { shownPolicy, type MethodCatalog } from './catalog.js';
import type { DerivedPolicy } from './derived.js';
import type { MaskingPolicy, PolicyStore } from './policies.js';

const DERIVED_COLUMNS = ['schema_name', 'table_name', 'column_name', 'method', 'kind', 'sources', 'exempted_roles'];

const LIST_COLUMNS = ['id', 'schema_name', 'table_name', 'column_name', 'method', 'method_config', 'condition', 'exempted_roles', 'reason', 'created_at'];

function row(p: MaskingPolicy): Record<string, unknown> {
  return {
    id: p.id,
    schema_name: p.schema_name,
    table_name: p.table_name,
    column_name: p.column_name,
    method: p.method,
    method_config: Object.keys(p.method_config).length ? JSON.stringify(p.method_config) : '',
    condition: p.condition_column ? `${p.condition_column} = ${p.condition_value}` : '',
    exempted_roles: p.exempted_roles.join(','),
    reason: p.reason ?? '',
    created_at: p.created_at,
  };
}

/** `--exempt viewer,editor` or `--exempt viewer --exempt editor`. */
function roles(value: unknown): string[] | undefined {
  if (value === undefined || value === null) return undefined;
  const list = (Array.isArray(value) ? value : [value]).flatMap((v) => String(v).split(','));
  return list.map((r) => r.trim()).filter(Boolean);
}

/**
 * A policy on a table or column that does not exist protects nothing and says nothing about a
 * typo: refused (with the table's columns or the closest tables) unless `--allow-missing`.
 */
async function assertColumnExists(ctx: PluginContext, schema: string, table: string, column: string): Promise<void> {
  const columns = await ctx.db.catalog.columns(schema, table);
  if (columns.length === 0) {
    // dp's own schemas (`_service`, `_masking`...) are never suggested.
    const names = (await ctx.db.catalog.relations()).filter((r) => !r.schema.startsWith('_')).map((r) => `${r.schema}.${r.name}`);
    const closest = names.length
      ? await ctx.db.all<{ name: string }>(
          `SELECT name FROM (VALUES ${names.map((n) => `(${quoteLiteral(n)})`).join(', ')}) AS candidates(name)
            ORDER BY levenshtein(lower(name), lower($1)), name LIMIT 3`,
          [`${schema}.${table}`],
        )
      : [];
    const hint = closest.length ? ` (closest: ${closest.map((c) => c.name).join(', ')})` : '';
    throw badRequest('invalid_policy', `No table or view ${schema}.${table} in the database${hint}; for a model not built yet, run dp transform first or pass --allow-missing`, {
      field: 'table_name',
      closest: closest.map((c) => c.name),
    });
  }
  if (!columns.some((c) => c.name.toLowerCase() === column.toLowerCase())) {
    const names = columns.map((c) => c.name);
    throw badRequest('invalid_policy', `${schema}.${table} has no column '${column}'; its columns: ${names.join(', ')} (or pass --allow-missing)`, { field: 'column_name', columns: names });
  }
}

export function registerCommands(ctx: PluginContext, store: PolicyStore, derived: () => Promise<readonly DerivedPolicy[]>, catalog: MethodCatalog): void {
  ctx.command('mask add', async (args, io: CliIO) => {
    await store.ensureLoaded();
    let method_config: unknown = undefined;
    if (args.config !== undefined) {
      try {
        method_config = JSON.parse(String(args.config));
      } catch (e) {
        throw badRequest('invalid_method_config', `--config is not valid JSON: ${(e as Error).message}`, { field: 'method_config' });
      }
      if (typeof method_config !== 'object' || method_config === null || Array.isArray(method_config)) {
        throw badRequest('invalid_method_config', '--config must be a JSON object', { field: 'method_config' });
      }
    }
    if (!args['allow-missing']) await assertColumnExists(ctx, String(args.schema), String(args.table), String(args.column));
    const policy = await store.create({
      schema_name: args.schema,
      table_name: args.table,
      column_name: args.column,
      method: args.method,
      method_config: method_config as Record<string, unknown> | undefined,
      exempted_roles: roles(args.exempt),
      condition_column: args['condition-column'] ?? null,
      condition_value: args['condition-value'] === undefined ? null : String(args['condition-value']),
      reason: args.reason === undefined ? null : String(args.reason),
    });
    if (io.wantsJson) io.json(policy);
    else {
      const column = `${policy.schema_name}.${policy.table_name}.${policy.column_name}`;
      io.out(`Created masking policy ${policy.id}: ${column} → ${policy.method} (exempt: ${policy.exempted_roles.join(', ') || 'none'})`);
      // Without --auth every caller is the local admin: a plain `dp query` shows raw values.
      io.out(`Exempt roles see raw values; without --auth the CLI and the server act as admin. See what a role sees: dp query --as viewer "SELECT ${policy.column_name} FROM ${policy.schema_name}.${policy.table_name} LIMIT 5"`);
    }
    return 0;
  });

  ctx.command('mask list', async (args, io: CliIO) => {
    await store.ensureLoaded();
    if (args.derived) {
      // Write-only config settings read the same here as on the policies route, relay included.
      const list = (await derived()).map((p) => shownPolicy(p, io.caller ?? LOCAL_ADMIN, catalog));
      if (io.wantsJson) io.json(list);
      else if (!list.length) io.out('No derived masking policies (no model column comes from a masked column).');
      else io.table(list.map((p) => ({ ...p, sources: p.sources.join(', '), exempted_roles: p.exempted_roles.join(',') })), DERIVED_COLUMNS);
      return 0;
    }
    const policies = store.list().map((p) => shownPolicy(p, io.caller ?? LOCAL_ADMIN, catalog));
    if (io.wantsJson) io.json(policies);
    else if (!policies.length) io.out('No masking policies.');
    else io.table(policies.map(row), LIST_COLUMNS);
    return 0;
  });

  ctx.command('mask remove', async (args, io: CliIO) => {
    await store.ensureLoaded();
    const removed = await store.remove(String(args.id));
    if (io.wantsJson) io.json(removed);
    else io.out(`Removed masking policy ${removed.id} (${removed.schema_name}.${removed.table_name}.${removed.column_name})`);
    return 0;
  });
}
