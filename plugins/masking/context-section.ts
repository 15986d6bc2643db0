/**
 * The body of the masking section of `dp context` (agents.context): the policies in words, through
 * the plugin's own `SHOW MASKING POLICIES` (answered by the guarded runner). Only the column, the
 * method and who is exempt are named: a method's configuration and a condition's value can be data.
 * Imported when `dp context` runs (masking loads with every command; this need not).
 */
import { LOCAL_ADMIN, markdownCode, type PluginContext } from '../../sdk/index.js';

export async function maskingInWords(ctx: PluginContext): Promise<string[]> {
  const { rows, columns } = await ctx.queries.run({ sql: 'SHOW MASKING POLICIES', caller: LOCAL_ADMIN, purpose: 'query' });
  if (!rows.length) return ['No masking policies: every role reads every column as stored.'];
  const at = (name: string) => columns.indexOf(name);
  const out = ['Masked columns come back masked through queries, the API and the MCP tools for every role not exempt:', ''];
  for (const r of rows) {
    const exempt = Array.isArray(r[at('exempted_roles')]) ? (r[at('exempted_roles')] as unknown[]).map(String) : [];
    const condition = r[at('condition_column')] ? `, only on rows where ${markdownCode(String(r[at('condition_column')]))} matches the policy's condition` : '';
    out.push(`- ${markdownCode(`${r[at('schema_name')]}.${r[at('table_name')]}.${r[at('column_name')]}`)}: ${String(r[at('method')])} method${condition}; ${exempt.length ? `exempt: ${exempt.join(', ')}` : 'no role exempt'}`);
  }
  return out;
}
