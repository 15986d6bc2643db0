/**
 * Which columns a caller gets masked: the mask of each masked column of a relation, planned from
 * the binding policies and the live catalog, and the plan's views for the rewrite, the late
 * masks and the result-column tracer (enforce.ts asks; rewrite.ts, late.ts and
 * result-columns.ts consume).
 */
import { quoteIdent, quoteLiteral } from '../../sdk/index.js';
import type { MethodCatalog } from './catalog.js';
import { isWholeRelation, wholeRelationMask } from './not-analysed.js';
import { KEY_SCHEMA } from './keys.js';
import type { MaskingPolicy } from './policies.js';
import { type CatalogSnapshot, type Relation, RelationCatalog } from './relations.js';
import type { ColumnMask, PlanFor } from './rewrite.js';
import type { ResolveSource } from './late.js';
import type { ScanColumns } from './result-columns.js';
import { DECLASSIFY_METHOD } from './derived.js';

/** Methods whose output keeps the column's type (so a conditional mask needs no cast). */
const TYPE_PRESERVING = new Set(['null', 'noise', 'date_shift']);
const TEXT_TYPE = /^(VARCHAR|TEXT|STRING|CHAR|BPCHAR)/i;

export class MaskPlanner {
  constructor(private readonly catalog: MethodCatalog) {}

  /**
   * Whether the snapshot's view of a relation lacks a column one of its own policies names: the
   * column may have been added since the snapshot was read (a seed reloaded with it), so the
   * plan cannot be trusted until the catalog is read again.
   */
  static missingPolicyColumns(rel: Relation, policies: MaskingPolicy[]): MaskingPolicy[] {
    const s = rel.schema.toLowerCase();
    const t = rel.name.toLowerCase();
    // Derived policies follow a model's SQL, which may be ahead of its build: only explicit ones say a column should exist.
    return policies.filter(
      (p) => !('derived' in p) && p.method !== DECLASSIFY_METHOD && p.schema_name.toLowerCase() === s && p.table_name.toLowerCase() === t && !rel.byName.has(p.column_name.toLowerCase()),
    );
  }

  /** The mask of each masked column of a relation; column references are qualified by `qualifier` when given. */
  masksFor(rel: Relation, policies: MaskingPolicy[], qualifier?: string): ColumnMask[] {
    const out: ColumnMask[] = [];
    // The key table is never masked (nor planned): no user statement reaches it, only the masks do.
    if (rel.schema.toLowerCase() === KEY_SCHEMA) return out;
    const chosen = new Map<string, MaskingPolicy>();
    const sameTable = (p: MaskingPolicy) => p.schema_name.toLowerCase() === rel.schema.toLowerCase() && p.table_name.toLowerCase() === rel.name.toLowerCase();
    // A model whose columns lineage does not trace may be masked as a whole (not-analysed.ts): every column the rest leaves unmasked.
    const whole = policies.find((p) => isWholeRelation(p) && sameTable(p));
    for (const col of rel.columns) {
      const name = col.name.toLowerCase();
      const candidates = policies.filter((p) => p.column_name.toLowerCase() === name);
      const wholeMask = whole && wholeRelationMask(whole, col.name, TEXT_TYPE.test(col.type));
      if (!candidates.length) {
        if (wholeMask) chosen.set(name, wholeMask);
        continue;
      }
      // Policies match by column name (rule 4, every route alike); a policy on this very table wins over one on a namesake column elsewhere.
      // An explicit policy on the table wins over a derived one; a declassification lifts masking of its own column only.
      const own = candidates.find((p) => sameTable(p) && !('derived' in p)) ?? candidates.find(sameTable);
      if (own?.method === DECLASSIFY_METHOD) continue;
      const elsewhere = candidates.filter((p) => p.method !== DECLASSIFY_METHOD);
      const pick = own ?? elsewhere.find((p) => !('derived' in p)) ?? elsewhere[0] ?? wholeMask;
      if (pick) chosen.set(name, pick);
    }
    for (const col of rel.columns) {
      const policy = chosen.get(col.name.toLowerCase());
      if (!policy) continue;
      // A condition on a column that is itself masked here would reveal it by which rows are masked: mask every row.
      const conditionMasked = Boolean(policy.condition_column && chosen.has(policy.condition_column.toLowerCase()));
      out.push({ column: col.name, expression: this.maskExpression(policy, rel, col.name, col.type, qualifier, conditionMasked), policy, type: col.type });
    }
    return out;
  }

  private maskExpression(policy: MaskingPolicy, rel: Relation, column: string, type: string, qualifier: string | undefined, unconditional: boolean): string {
    const ref = (name: string) => (qualifier === undefined ? quoteIdent(name) : `${quoteIdent(qualifier)}.${quoteIdent(name)}`);
    const raw = ref(column);
    const masked = this.catalog.expression(policy.method, raw, policy.method_config, { type });
    const condition = policy.condition_column ? rel.byName.get(policy.condition_column.toLowerCase()) : undefined;
    // A condition column the relation lacks cannot be checked: mask every row rather than none.
    if (!policy.condition_column || !condition || unconditional) return masked;
    const when = `CAST(${ref(condition.name)} AS VARCHAR) = ${quoteLiteral(policy.condition_value ?? '')}`;
    if (TYPE_PRESERVING.has(policy.method) && !TEXT_TYPE.test(type)) return `CASE WHEN ${when} THEN ${masked} ELSE ${raw} END`;
    return `CASE WHEN ${when} THEN CAST(${masked} AS VARCHAR) ELSE CAST(${raw} AS VARCHAR) END`;
  }

  /** The masks of every scan, as planned from one catalog snapshot. */
  planner(snap: CatalogSnapshot, policies: MaskingPolicy[], seen?: (rel: Relation) => void): PlanFor {
    return (ref) => {
      const rel = RelationCatalog.resolve(snap, ref);
      if (!rel) return undefined;
      seen?.(rel);
      return this.masksFor(rel, policies);
    };
  }

  /** The result-column tracer's view of the same plan: each relation's columns and its masks. */
  scanColumns(snap: CatalogSnapshot, policies: MaskingPolicy[]): ScanColumns {
    return (ref) => {
      const rel = RelationCatalog.resolve(snap, ref);
      return rel ? { columns: rel.columns.map((c) => c.name), masks: this.masksFor(rel, policies) } : undefined;
    };
  }

  /** Late masking's view of the same plan: each relation's columns and its masks under a given qualifier. */
  sources(snap: CatalogSnapshot, policies: MaskingPolicy[]): ResolveSource {
    return (ref) => {
      const rel = RelationCatalog.resolve(snap, ref);
      if (!rel) return undefined;
      return { columns: new Set(rel.byName.keys()), masks: (qualifier) => this.masksFor(rel, policies, qualifier) };
    };
  }
}
