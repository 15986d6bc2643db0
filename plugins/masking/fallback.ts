/**
 * Post-execution masking (docs/decisions.md "Masking policy" rule 3), used only when the rewriter cannot handle a
 * statement. Result columns named like a masked column are masked in JavaScript with the
 * method's `apply` twin. Because a result column can hide a masked value under another name
 * (an alias, an expression), the fallback refuses the whole result when the SQL text mentions
 * a masked column that does not come back under its own name.
 */
import { forbidden } from '../../sdk/index.js';
import type { MethodCatalog } from './catalog.js';
import type { MaskingPolicy } from './policies.js';

function mentions(sql: string, name: string): boolean {
  const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`(^|[^A-Za-z0-9_$])"?${escaped}"?($|[^A-Za-z0-9_$])`, 'i').test(sql);
}

export function postExecutionMask(catalog: MethodCatalog, policies: MaskingPolicy[], sql: string, role: string) {
  const byName = new Map<string, MaskingPolicy>();
  // A declassification (`method: none`) masks nothing; any other policy of the name does.
  for (const p of policies) if (p.method !== 'none' && !byName.has(p.column_name.toLowerCase())) byName.set(p.column_name.toLowerCase(), p);
  const mentioned = [...byName.keys()].filter((name) => mentions(sql, name));
  let plan: Array<{ index: number; policy: MaskingPolicy; conditionIndex: number }> | null = null;

  return (columns: string[], rows: unknown[][]): unknown[][] => {
    if (!plan) {
      const present = new Set(columns.map((c) => c.toLowerCase()));
      const hidden = mentioned.find((name) => !present.has(name));
      if (hidden) {
        throw forbidden('masked_column_unverifiable', `Column '${hidden}' is masked for role '${role}' and this statement could not be checked; select it by its own name`, {
          column: hidden,
          role,
        });
      }
      const lower = columns.map((c) => c.toLowerCase());
      plan = [];
      lower.forEach((name, index) => {
        const policy = byName.get(name);
        if (!policy) return;
        const conditionIndex = policy.condition_column ? lower.indexOf(policy.condition_column.toLowerCase()) : -1;
        plan!.push({ index, policy, conditionIndex });
      });
    }
    if (!plan.length) return rows;
    const originals = plan.filter((p) => p.conditionIndex >= 0);
    for (const row of rows) {
      // Conditions read the raw row, before any column of it is masked.
      const before = originals.length ? [...row] : row;
      for (const { index, policy, conditionIndex } of plan) {
        if (conditionIndex >= 0 && String(before[conditionIndex]) !== policy.condition_value) continue;
        row[index] = catalog.apply(policy.method, row[index], policy.method_config, {});
      }
    }
    return rows;
  };
}
